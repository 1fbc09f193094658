#!/usr/bin/env python3
"""Runs a command and checks its standard output line by line against a file
of regular expressions (one per line, in order; '#' lines are comments).
Usage: check_output.py EXPECTED -- COMMAND [ARGS...]"""
import re
import subprocess
import sys

expected_path, sep, *command = sys.argv[1:]
if sep != "--" or not command:
    sys.exit(__doc__)
with open(expected_path) as f:
    patterns = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
lines = proc.stdout.splitlines()
print(proc.stdout, end="")
print(proc.stderr, end="", file=sys.stderr)
if proc.returncode != 0:
    sys.exit(f"command exited with {proc.returncode}")
if len(lines) != len(patterns):
    sys.exit(f"expected {len(patterns)} lines, got {len(lines)}")
for i, (pattern, line) in enumerate(zip(patterns, lines), 1):
    if not re.search(pattern, line):
        sys.exit(f"line {i} does not match\n  pattern: {pattern}\n  line:    {line}")
print(f"all {len(lines)} lines match")
