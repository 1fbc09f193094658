#!/usr/bin/env python3
"""Print the files under ROOT whose names end with SUFFIX, relative to ROOT, sorted.

Meson globs at configure time with this (tests/headers, tests/compile_fail). With
--expect NAME..., it instead checks that the list has not changed since then: a file added
later is not built until `meson setup --reconfigure build`, and this makes that visible.
Either way, an empty list is an error: a check over no file would pass.
"""
import argparse
import pathlib
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("root", type=pathlib.Path)
parser.add_argument("suffix")
parser.add_argument("--top-only", action="store_true", help="do not descend into subdirectories")
parser.add_argument("--expect", nargs="*", help="the list Meson saw at configure time")
parser.add_argument("--umbrellas", action="store_true",
                    help="only the umbrella headers: nothing but comments, #pragma once and #include <ppe/...>")
args = parser.parse_args()


def is_umbrella(path):
    code = [line.strip() for line in path.read_text().splitlines()]
    code = [line for line in code if line and not line.startswith("//")]
    return all(line == "#pragma once" or re.match(r'#include\s+[<"]ppe/', line) for line in code)


pattern = "*" + args.suffix
found = args.root.glob(pattern) if args.top_only else args.root.rglob(pattern)
names = sorted(p.relative_to(args.root).as_posix() for p in found
               if p.is_file() and (not args.umbrellas or is_umbrella(p)))

if not names:
    # A glob that matches nothing would turn the checks built from it into passes.
    print(f"no file under {args.root} ends with {args.suffix}: the selection is empty", file=sys.stderr)
    sys.exit(1)
if args.expect is None:
    print("\n".join(names))
elif names != sorted(args.expect):
    added = sorted(set(names) - set(args.expect))
    removed = sorted(set(args.expect) - set(names))
    print(f"files under {args.root} changed since Meson was configured "
          f"(added: {added}, removed: {removed}); run: meson setup --reconfigure <builddir>")
    sys.exit(1)
