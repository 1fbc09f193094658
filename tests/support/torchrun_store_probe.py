#!/usr/bin/env python3
"""Exits 0 when torchrun can create its rendezvous store here, else 77 (a skip to Meson)
with one line saying why.

torchrun's static rendezvous creates a TCPStore without choosing its backend; from PyTorch 2.4
that means libuv, whatever USE_LIBUV says. A PyTorch built without libuv (Debian 13's 2.6)
therefore cannot start any torchrun job: the tests that launch the real torchrun are skipped
there, and ppe's own workers (which fall back from libuv by themselves) are tested without it.
"""
import datetime
import socket
import sys

try:
    from torch.distributed import TCPStore
except ImportError as e:
    print(f"torchrun is unusable: {e}")
    sys.exit(77)

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
try:
    TCPStore("127.0.0.1", port, 1, True, datetime.timedelta(seconds=10), multi_tenant=True)
except RuntimeError as e:
    print(f"torchrun cannot create its store on this PyTorch ({e}); skipped")
    sys.exit(77)
