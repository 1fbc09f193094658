#!/usr/bin/env python3
"""Compile-fail check: usage: check.py SNIPPET COMPILER [FLAGS...]

Runs COMPILER FLAGS -fsyntax-only SNIPPET. Passes iff compilation fails AND the compiler's
output matches the regex on the snippet's first line, `// expect: <regex>`, so a snippet
that breaks for some other reason (a typo, a missing header) does not count as a pass.
"""
import re
import subprocess
import sys

snippet, command = sys.argv[1], sys.argv[2:]
with open(snippet, encoding="utf-8") as f:
    first = f.readline()
m = re.match(r"\s*//\s*expect:\s*(.+?)\s*$", first)
if not m:
    sys.exit(f"{snippet}: first line must be '// expect: <regex>', got {first!r}")
expect = m.group(1)

# No colour codes in the output the regex is matched against.
cmd = command + ["-fdiagnostics-color=never", "-fsyntax-only", snippet]
proc = subprocess.run(cmd, capture_output=True, text=True)
output = proc.stderr + proc.stdout

if proc.returncode == 0:
    print(f"FAIL: {snippet} compiled, but must not (expected /{expect}/)")
    print("command:", " ".join(cmd))
    sys.exit(1)
if not re.search(expect, output, re.MULTILINE):
    print(f"FAIL: {snippet} failed to compile, but the output does not match /{expect}/")
    print("command:", " ".join(cmd))
    print(output)
    sys.exit(1)
print(f"ok: {snippet} fails to compile with /{expect}/")
