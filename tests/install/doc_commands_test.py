#!/usr/bin/env python3
"""Runs the compile commands the documentation prints, exactly as printed.

Usage: doc_commands_test.py <source root> [--no-distributed]

- docs/getting-started.md: its first C++ example (the first ```cpp block, which includes
  <ppe/ppe.hpp>) is saved as the train.cpp its command names, and its first g++ command is
  run with the doc's placeholder /path/to/ppe read as this checkout; the program must run.
- README.md: its ```cmake block, with the placeholder read as this checkout, as the
  CMakeLists.txt of a project whose train.cpp is examples/features/core.cpp; configured (the
  optional features off: the core is what it shows), built and run;
- README.md: every g++ command of its ```sh blocks (one per program of examples/features: the
  core and each optional feature; a program without its command fails the test) is run from a scratch directory that holds this checkout's include/ and
  examples/ (links), as from a checkout's root; each program it makes must run.

Every command compiles a LibTorch program: two run at a time. --no-distributed leaves out the
commands that build the distributed feature (a LibTorch without c10d's Gloo headers).
"""
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

PLACEHOLDER = "/path/to/ppe"


def blocks(text, language):
    """The bodies of the fenced code blocks of `language`, in order."""
    return re.findall(r"^```" + language + r"\n(.*?)^```", text, flags=re.S | re.M)


def commands(block):
    """The shell commands of a block that start with g++: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    lines = [line.split(" #")[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line.startswith("g++ ")]


def output_of(command):
    """The program a command makes (its -o argument)."""
    words = shlex.split(command)
    return words[words.index("-o") + 1]


def build_and_run(label, command, cwd, program=None):
    compiled = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True)
    if compiled.returncode != 0:
        return f"FAIL ({label}): the documented command failed:\n  {command}\n{compiled.stdout[-3000:]}{compiled.stderr[-3000:]}"
    program = os.path.join(cwd, program or output_of(command))
    ran = subprocess.run([program], cwd=cwd, capture_output=True, text=True, timeout=300)
    if ran.returncode != 0:
        return f"FAIL ({label}): {program} exited {ran.returncode}:\n{ran.stdout[-2000:]}{ran.stderr[-2000:]}"
    last = ran.stdout.strip().splitlines()[-1:] or [""]
    return f"ok ({label}): {command}\n  -> {last[0]}"


def main():
    src = os.path.abspath(sys.argv[1])
    with_distributed = "--no-distributed" not in sys.argv[2:]
    jobs = []  # (label, command, directory)
    scratch = tempfile.TemporaryDirectory()
    root = scratch.name

    guide = open(os.path.join(src, "docs/getting-started.md"), encoding="utf-8").read()
    example = blocks(guide, "cpp")[0]
    if "#include <ppe/ppe.hpp>" not in example:
        sys.exit("FAIL: the first C++ example of docs/getting-started.md does not include <ppe/ppe.hpp>")
    guide_commands = [c for b in blocks(guide, "sh") for c in commands(b)]
    if not guide_commands:
        sys.exit("FAIL: docs/getting-started.md prints no g++ command")
    command = guide_commands[0]
    if PLACEHOLDER not in command:
        sys.exit(f"FAIL: the getting-started command does not name {PLACEHOLDER}/include: {command}")
    source = next(w for w in shlex.split(command) if w.endswith(".cpp"))
    guide_dir = os.path.join(root, "getting-started")
    os.makedirs(guide_dir)
    with open(os.path.join(guide_dir, source), "w", encoding="utf-8") as f:
        f.write(example)
    jobs.append(("docs/getting-started.md", command.replace(PLACEHOLDER, src), guide_dir))

    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    readme_commands = [c for b in blocks(readme, "sh") for c in commands(b)]
    # One command per program of examples/features (the core and each optional feature): a
    # feature whose command went missing, or a block the extraction no longer reads, fails.
    programs = sorted(f for f in os.listdir(os.path.join(src, "examples/features")) if f.endswith(".cpp"))
    built = sorted(os.path.basename(w) for c in readme_commands for w in shlex.split(c) if w.endswith(".cpp"))
    if built != programs:
        sys.exit(f"FAIL: README.md's g++ commands build {built}; examples/features holds {programs} "
                 "(one command each)")
    readme_dir = os.path.join(root, "checkout")
    os.makedirs(readme_dir)
    for name in ("include", "examples"):
        os.symlink(os.path.join(src, name), os.path.join(readme_dir, name))
    for command in readme_commands:
        if "distributed" in command and not with_distributed:
            print(f"skipped (no c10d Gloo headers in this build): {command}")
            continue
        jobs.append(("README.md " + output_of(command), command, readme_dir))

    # README's CMake lines: a project of them (the placeholder read as this checkout) that builds
    # examples/features/core.cpp as the train.cpp they name.
    cmake_blocks = blocks(readme, "cmake")
    if len(cmake_blocks) != 1 or PLACEHOLDER not in cmake_blocks[0]:
        sys.exit(f"FAIL: README.md prints {len(cmake_blocks)} cmake blocks (expected one, naming {PLACEHOLDER})")
    cmake_dir = os.path.join(root, "cmake")
    os.makedirs(cmake_dir)
    with open(os.path.join(cmake_dir, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write("cmake_minimum_required(VERSION 3.21)\nproject(train LANGUAGES CXX)\n" +
                cmake_blocks[0].replace(PLACEHOLDER, src))
    shutil.copy(os.path.join(src, "examples/features/core.cpp"), os.path.join(cmake_dir, "train.cpp"))
    cxx = os.environ.get("CXX", "c++")
    jobs.append(("README.md CMake", f"cmake -S . -B build -G Ninja -DCMAKE_CXX_COMPILER={shlex.quote(cxx)} "
                 "-DPPE_PLOT=OFF -DPPE_CONFIG=OFF -DPPE_DISTRIBUTED=OFF && cmake --build build -j 1",
                 cmake_dir, "build/train"))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda job: build_and_run(*job), jobs))
    for line in results:
        print(line)
    failed = [r for r in results if r.startswith("FAIL")]
    print(f"documented commands: {len(results) - len(failed)} of {len(results)} built and ran")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
