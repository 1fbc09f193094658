#!/usr/bin/env python3
"""Proves that check_layers.py fails on each kind of violation it must catch.

Usage: test_check_layers.py SOURCE_ROOT

Copies include/ and README.md into a scratch tree, checks that the copy passes, then adds one
violation at a time (an include line appended to a header) and checks that the checker fails
naming it.
"""
import os
import shutil
import subprocess
import sys
import tempfile

CASES = [
    # (header, line added, what the failure must mention)
    ("ppe/training/extensions/plot_report.hpp", "#include <ppe/engine/trainer.hpp>",
     "only lower layers may be included"),  # a feature header in a core area includes upwards
    ("ppe/ppe.hpp", "#include <ppe/dataset/idx_file.hpp>", "zlib"),  # the core reaches zlib
    ("ppe/training/extensions/log_report.hpp", '#include "../manager.hpp"', "by a relative path"),
    ("ppe/reporting/reporter.hpp", "#include <ppe/config/config.hpp>", "a header of ppe::config"),
    ("ppe/state.hpp", "#include <ppe/training/manager.hpp>", "only lower layers may be included"),
]


def run(checker, root):
    return subprocess.run([sys.executable, checker, root], capture_output=True, text=True)


def main():
    src = sys.argv[1]
    checker = os.path.join(src, "tests", "headers", "check_layers.py")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(src, "include"), os.path.join(tmp, "include"))
        shutil.copy(os.path.join(src, "README.md"), tmp)
        for d in ("tests",):  # the table's test paths must exist
            shutil.copytree(os.path.join(src, d), os.path.join(tmp, d), ignore=shutil.ignore_patterns("*.pt", "corpus"))
        base = run(checker, tmp)
        if base.returncode != 0:
            sys.exit(f"FAIL: the unchanged copy does not pass:\n{base.stdout}{base.stderr}")
        for header, line, expected in CASES:
            path = os.path.join(tmp, "include", header)
            original = open(path, encoding="utf-8").read()
            with open(path, "a", encoding="utf-8") as f:
                f.write("\n" + line + "\n")
            res = run(checker, tmp)
            if res.returncode == 0 or expected not in res.stdout:
                failures.append(f"{header} + '{line}': expected a failure mentioning '{expected}', got "
                                f"exit {res.returncode}:\n{res.stdout}{res.stderr}")
            else:
                print(f"ok: {header} + {line}: refused")
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
