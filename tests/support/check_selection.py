#!/usr/bin/env python3
"""Checks that the unit tests' groups run every test case compiled into the test binaries.

Usage: check_selection.py BINARY --group NAME=FILTER [--group ...] [--whole BINARY ...]

BINARY is run as several Meson tests, each with doctest's --source-file=FILTER; a --whole
binary runs as one test without a filter. doctest exits 0 when a filter selects nothing, so a
filter that stopped matching (a compiler or Meson that spells __FILE__ differently, a moved
directory) would silently drop its tests. This asks each binary for its test cases (doctest's
XML listing, which names each case's file and line) and fails when:
- a group selects no test case;
- a test case is selected by no group;
- a test case is selected by two groups (it would run twice);
- a case marked doctest::skip() is not a worker entry point (a name starting "worker: ",
  which tests/support/processes.hpp starts in a process of its own): nothing would run it.
"""
import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET

WORKER_PREFIX = "worker: "


def listing(binary, *args):
    """The test cases `binary` selects with `args`: {(file, line, name): skipped}."""
    out = subprocess.run([binary, "--list-test-cases", "--reporters=xml", *args],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"FAIL: {binary} --list-test-cases exited {out.returncode}:\n{out.stderr[-2000:]}")
    root = ET.fromstring(out.stdout)
    return {(tc.get("filename"), int(tc.get("line")), tc.get("name")): tc.get("skipped") == "true"
            for tc in root.iter("TestCase")}


def check_binary(binary, groups):
    """Prints each group's count; returns the problems found."""
    problems = []
    every = listing(binary, "--no-skip=true")
    if not every:
        return [f"{binary} holds no test case"]
    selected_by = {}
    for name, filters in groups:
        chosen = listing(binary, *filters)
        print(f"{name}: {len(chosen)} test cases")
        if not chosen:
            problems.append(f"group {name} ({' '.join(filters) or 'no filter'}) selects no test case")
        for case in chosen:
            selected_by.setdefault(case, []).append(name)
    workers = 0
    for case, skipped in sorted(every.items()):
        where = f"'{case[2]}' ({case[0]}:{case[1]})"
        runs = selected_by.get(case, [])
        if skipped:
            if case[2].startswith(WORKER_PREFIX):
                workers += 1
            else:
                problems.append(f"{where} is skipped and is not a worker entry point: nothing runs it")
        elif not runs:
            problems.append(f"{where} is selected by no group")
        elif len(runs) > 1:
            problems.append(f"{where} is selected by {len(runs)} groups: {', '.join(runs)}")
    covered = sum(1 for case, skipped in every.items() if not skipped and case in selected_by)
    print(f"{binary}: {len(every)} test cases: {covered} selected by the groups above, "
          f"{workers} worker entry points (skipped by design, started by their tests)")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--group", action="append", default=[], metavar="NAME=FILTER")
    parser.add_argument("--whole", action="append", default=[], metavar="BINARY")
    args = parser.parse_args()
    if not args.group:
        sys.exit("FAIL: no --group given")
    groups = []
    for spec in args.group:
        name, sep, source_filter = spec.partition("=")
        if not sep or not source_filter:
            sys.exit(f"FAIL: --group '{spec}' is not NAME=FILTER")
        groups.append((name, [f"--source-file={source_filter}"]))
    problems = check_binary(args.binary, groups)
    for binary in args.whole:
        problems += check_binary(binary, [(binary.rsplit("/", 1)[-1], [])])
    for p in problems:
        print(f"FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
