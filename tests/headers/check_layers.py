#!/usr/bin/env python3
"""Checks README.md's layout table against the headers under include/ppe.

Usage: check_layers.py SOURCE_ROOT

The table (README.md, section "Layout") gives each area (a folder or a file under include/ppe)
its layer, its namespace, its default target and its tests. This fails when:
- a file under include/ppe has no row (the map is incomplete);
- a core header includes a header of another row whose layer is not lower (an upward include
  or a cycle between areas);
- a header includes one of a feature it does not name: every feature header says
  `Feature: ppe::<name>` (or `Features: ppe::a, ppe::b`) in its first comment, a header that
  includes a feature's header is that feature's too, an .ipp has exactly the features of the
  header that includes it, and a header that includes the feature's library (yaml-cpp, PLplot,
  c10d) or is included by the feature's umbrella names that feature;
- a feature header includes a header of a higher layer than its own row's (a feature header in
  a core area, such as PlotReport in training/, keeps that area's layer; layer F is above every
  number, and F may include F only where the feature check above allows it);
- a header includes another of ppe's by a relative path (`"../x.hpp"`): every include of ppe's
  is `<ppe/...>`, so that the checks above see it;
- `<ppe/ppe.hpp>` reaches a feature header, or a header that includes a library the core does not
  link (zlib: `dataset/`), so that the core links LibTorch alone;
- a row's namespace is declared by none of its files, or a test path it names does not exist.
The top-level impl/ (the compile-once sources of the libraries) includes everything by design
and is exempt.
"""
import os
import re
import sys
from collections import deque

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
MARKER = re.compile(r'\bFeatures?: (ppe::\w+(?:, ppe::\w+)*)')
CODE = "ppe::ppe"
# Third-party headers that only a feature may include, and the feature they belong to.
LIBRARIES = [("yaml-cpp/", "ppe::config"), ("plplot", "ppe::plot"),
             ("torch/csrc/distributed/", "ppe::distributed"), ("gloo/", "ppe::distributed")]
# Libraries that only headers outside <ppe/ppe.hpp> may include (their users link them).
NOT_IN_CORE = [("zlib.h", "zlib")]
UMBRELLAS = {"config.hpp": "ppe::config", "plot.hpp": "ppe::plot",
             "tensorboard.hpp": "ppe::tensorboard", "distributed.hpp": "ppe::distributed"}


def parse_table(readme):
    """The layout table's rows: [{paths, namespace, layer, target, tests}]."""
    lines = open(readme, encoding="utf-8").read().split("\n")
    try:
        start = lines.index("## Layout")
    except ValueError:
        sys.exit(f"FAIL: {readme} has no '## Layout' section")
    rows = []
    for line in lines[start:]:
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6:
            sys.exit(f"FAIL: {readme}: a layout row has {len(cells)} cells, expected 6: {line}")
        area, _module, namespace, layer, target, tests = cells
        ticks = lambda cell: re.findall(r"`([^`]+)`", cell)
        if layer not in ("F", "exempt") and not layer.isdigit():
            sys.exit(f"FAIL: {readme}: layer '{layer}' is not a number, F or exempt: {line}")
        targets = ticks(target)
        rows.append({"paths": ticks(area), "namespace": ticks(namespace)[0] if ticks(namespace) else "",
                     "layer": layer, "target": targets[0] if targets else None,
                     "tests": [t for t in ticks(tests) if t.startswith("tests/")], "line": line})
    if not rows:
        sys.exit(f"FAIL: {readme}: the Layout section has no table rows")
    return rows


def leading_comment(text):
    """The comment lines before a file's first line of code."""
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("//") or s == "" or s.startswith("#pragma"):
            out.append(s)
        else:
            break
    return "\n".join(out)


def main():
    root = sys.argv[1]
    inc = os.path.join(root, "include")
    rows = parse_table(os.path.join(root, "README.md"))
    problems = []

    files = {}
    for d, _, names in os.walk(os.path.join(inc, "ppe")):
        for n in names:
            path = os.path.relpath(os.path.join(d, n), inc)
            files[path] = open(os.path.join(d, n), encoding="utf-8").read()
    if not files:
        sys.exit(f"FAIL: no files under {inc}/ppe")

    def row_of(path):
        rel = path[len("ppe/"):]
        best, best_len = None, -1
        for row in rows:
            for p in row["paths"]:
                if (rel == p or (p.endswith("/") and rel.startswith(p))) and len(p) > best_len:
                    best, best_len = row, len(p)
        return best

    row = {}
    for path in sorted(files):
        r = row_of(path)
        if r is None:
            problems.append(f"{path}: no row of README.md's layout table covers it")
        row[path] = r
    exempt = {p for p, r in row.items() if r and r["layer"] == "exempt"}

    includes, libs = {}, {}
    for path, text in files.items():
        own, other = [], []
        for line in text.split("\n"):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if '"' in line and not target.startswith("ppe/"):
                # A quoted include found relative to this file would slip past every check.
                problems.append(f'{path}: includes "{target}" by a relative path: include ppe\'s headers '
                                f'as <ppe/...>')
                continue
            if target.startswith("ppe/"):
                if target not in files:
                    problems.append(f"{path}: includes {target}, which does not exist")
                else:
                    own.append(target)
            else:
                other.append(target)
        includes[path], libs[path] = own, other

    features = {}
    for path, text in files.items():
        named = set()
        for m in MARKER.finditer(leading_comment(text)):
            named.update(t.strip() for t in m.group(1).split(","))
        r = row[path]
        if r and r["target"] not in (None, CODE) and r["layer"] != "exempt" and r["target"] not in named:
            problems.append(f"{path}: in the area of {r['target']}, but its first comment does not say "
                            f"'Feature: {r['target']}'")
        features[path] = named

    for path in sorted(files):
        if path in exempt or row[path] is None:
            continue
        mine = features[path]
        for lib in libs[path]:
            for prefix, feature in LIBRARIES:
                if lib.startswith(prefix) and feature not in mine:
                    problems.append(f"{path}: includes <{lib}>, a library of {feature}, but does not say "
                                    f"'Feature: {feature}'")
        top = path[len("ppe/"):]
        for g in includes[path]:
            theirs = features[g]
            if top in UMBRELLAS and UMBRELLAS[top] not in theirs:
                problems.append(f"{g}: included by the umbrella of {UMBRELLAS[top]} ({path}), but its first "
                                f"comment does not say 'Feature: {UMBRELLAS[top]}'")
            if not theirs <= mine:
                problems.append(f"{path} ({', '.join(sorted(mine)) or 'core'}) includes {g}, a header of "
                                f"{', '.join(sorted(theirs - mine))}")
            if g.endswith(".ipp") and theirs != mine:
                problems.append(f"{g}: an implementation of {path}, but names other features "
                                f"({', '.join(sorted(theirs)) or 'none'} vs {', '.join(sorted(mine)) or 'none'})")
            if row[g] is None or row[g] is row[path] or g in exempt:
                continue
            lg, lh = row[g]["layer"], row[path]["layer"]
            # F sits above every numbered layer. A feature's header (its
            # features checked above) may include another F row's; a core
            # header never includes one.
            upward = lg == "F" if lh != "F" else False
            if lh != "F" and lg != "F":
                upward = int(lg) >= int(lh)
            if upward and not (mine and lg == "F" and theirs):
                problems.append(f"{path} (layer {lh}) includes {g} (layer {lg}): only lower layers may be "
                                f"included")

    # The core's closure: what <ppe/ppe.hpp> includes, transitively.
    seen, queue, parent = {"ppe/ppe.hpp"}, deque(["ppe/ppe.hpp"]), {}
    while queue:
        h = queue.popleft()
        for g in includes.get(h, []):
            if g not in seen:
                seen.add(g)
                parent[g] = h
                queue.append(g)
    for h in sorted(seen):
        banned = [name for lib in libs[h] for prefix, name in NOT_IN_CORE if lib.startswith(prefix)]
        if features[h] or banned:
            chain = [h]
            while chain[-1] in parent:
                chain.append(parent[chain[-1]])
            what = (f"a header of {', '.join(sorted(features[h]))}" if features[h]
                    else f"which includes {', '.join(banned)} (not linked by the core)")
            problems.append(f"<ppe/ppe.hpp> reaches {h}, {what}: " + " <- ".join(chain))

    for r in rows:
        ns = r["namespace"]
        if ns and ns != "ppe":
            decl = re.compile(r"^namespace " + re.escape(ns) + r"\b", re.M)
            if not any(decl.search(files[p]) for p in files if row[p] is r):
                problems.append(f"README.md's row {r['paths']}: no file declares namespace {ns}")
        for t in r["tests"]:
            if not os.path.exists(os.path.join(root, t)):
                problems.append(f"README.md's row {r['paths']}: the test path {t} does not exist")

    core = sum(1 for p in files if not features[p] and p not in exempt)
    print(f"{len(files)} files under include/ppe, {len(rows)} rows; {core} core, "
          f"{len(files) - core - len(exempt)} feature, {len(exempt)} exempt; "
          f"<ppe/ppe.hpp> reaches {len(seen)} files")
    if problems:
        print("\n".join("FAIL: " + p for p in problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
