#!/usr/bin/env python3
"""One multi-node scenario of docs/distributed.md's failure table, as a test.

Usage: scenario.py NAME --example PATH --work DIR [--deadline SECONDS]

Each node is a network namespace (rig.py) named node<i> running the torchrun command that
docs/distributed.md prints under "Several machines" (the c10d rendezvous hosted on node1, one
worker per node: the distributed Fashion-MNIST example with `--resume` and a snapshot every 8
steps), with is_host and --nnodes set per node and scenario, the example as built, the output
in the scenario's directory, and the test job's data (6144 images, 2 epochs), a fixed seed and a
log of the images each process trained on (`--sample-log`) appended. Where torchrun cannot make
its TCP store (Debian's PyTorch 2.x, without libuv), the rendezvous is the file store variant
that docs/distributed.md gives. The scenarios:

  no_fault      2 nodes; the final weights equal, bit for bit, those of the same job with the
                watchdog off (PPE_HEARTBEAT_TIMEOUT=0)
  node_killed   2 nodes (--nnodes 1:2); after a snapshot node 2's processes get SIGKILL: node 1
                names the lost rank, restarts and finishes alone from the last snapshot
  link_down     the same with node 2's cable cut (silence: no connection reset)
  rank_stopped  the same with node 2's worker SIGSTOPped (a hang); torchrun's agent on node 2
                replaces it, so the job continues on 1 or 2 nodes
  scale_up      node 1 alone (--nnodes 1:2); after a snapshot node 2 joins (node 1's worker
                paused meanwhile, so that the job is still running): the job restarts and
                continues on both
  store_lost    the node hosting the group's store (and the rendezvous) is cut off: the other
                node's worker ends with an error naming the store within the deadline

Checks (each prints its measurement): the survivors' error within the deadline (detection
time), the job's end (restart time), every image of every epoch trained on exactly once over
the job (the sample logs, keeping of each attempt the steps up to the snapshot the next one
resumed from), and the final test accuracy against the uninterrupted job's. Exit 0: passed;
77: skipped (no namespaces here); 1: failed.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rig  # noqa: E402

# The job: 6144 training images, 2 epochs of 96 steps of 64 images (the global batch: each of
# W ranks takes 64 / W a step), a snapshot every 8 steps.
IMAGES, EPOCHS, BATCH, SNAPSHOT_EVERY = 6144, 2, 64, 8
# The uninterrupted job's test accuracy on 1000 test images (no_fault, seed 1, LibTorch 1.13):
# 0.800; seeds 1 to 5 gave 0.800, 0.795, 0.812, 0.823, 0.802 (a spread of 0.028). An interrupted
# job trains on the same images in the same order, but its restarted part draws other dropout
# masks and groups a step's images otherwise (one rank of 64 instead of two of 32): its accuracy
# must lie within about twice that spread of the uninterrupted one. (1000 test images: the
# evaluator averages its batches of 500 alike, as PPE's, so a short last batch would weigh as
# much as a full one.)
BASELINE_ACCURACY, ACCURACY_TOLERANCE = 0.800, 0.05


class Failed(Exception):
    pass


SOURCE_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def documented_command():
    """The torchrun command of docs/distributed.md's "Several machines": (its environment, its words)."""
    with open(os.path.join(SOURCE_ROOT, "docs", "distributed.md")) as f:
        text = f.read()
    section = text[text.index("## Several machines"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    line = next(l for l in block.splitlines() if "torchrun " in l)
    words = shlex.split(line)
    env = {}
    while words and re.match(r"[A-Z_]+=", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    return env, words


# "tcp": the documented command as it is. "file": where torchrun cannot create its TCP store (Debian's
# PyTorch 2.x, built without libuv), the variant docs/distributed.md gives: the rendezvous in a file
# of the shared file system (store_type=file) and each job's store hosted by its rank 0
# (TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1).
RENDEZVOUS = "tcp"


def job_argv(example, work, nnodes, is_host):
    """The documented command for one node: its own is_host, `nnodes`, the example as built and the
    scenario's output directory; then the data of the test job (a subset, 2 epochs), the sample
    log and a fixed seed. Fails when the documented command lost what the scenarios need."""
    _, words = documented_command()
    words = list(words)
    def value_of(flag):
        if flag not in words:
            raise Failed(f"docs/distributed.md's command has no {flag}")
        return words.index(flag) + 1
    words[value_of("--nnodes")] = nnodes
    conf = value_of("--rdzv_conf")
    if "is_host=true" not in words[conf]:
        raise Failed("docs/distributed.md's command does not set is_host=true in --rdzv_conf")
    words[conf] = words[conf].replace("is_host=true", f"is_host={'true' if is_host else 'false'}")
    if RENDEZVOUS == "file":
        words[value_of("--rdzv_endpoint")] = os.path.join(work, "rdzv")
        words[conf] += ",store_type=file"
    program = next(i for i, w in enumerate(words) if w.endswith("fashion_mnist"))
    words[program] = example
    words[value_of("--out")] = os.path.join(work, "out")
    for flag in ("--distributed", "--resume", "--snapshot-every", "--rdzv_endpoint", "--max_restarts"):
        value_of(flag)
    if words[value_of("--snapshot-every")] != str(SNAPSHOT_EVERY):
        raise Failed(f"docs/distributed.md's command snapshots every {words[value_of('--snapshot-every')]} steps; "
                     f"the scenarios count on {SNAPSHOT_EVERY}")
    return words + ["--epochs", str(EPOCHS), "--train-limit", str(IMAGES), "--test-limit", "1000",
                    "--batch-size", str(BATCH), "--sample-log", os.path.join(work, "samples"),
                    "--threads", "1", "--seed", "1"]


def job_env(deadline):
    # LOGLEVEL=INFO: torchrun's agents print each rendezvous (master_addr: the store's host).
    env, _ = documented_command()
    env.update({"OMP_WAIT_POLICY": "PASSIVE", "PPE_HEARTBEAT_TIMEOUT": str(deadline), "PYTHONUNBUFFERED": "1",
                "LOGLEVEL": "INFO"})
    if RENDEZVOUS == "file":
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
    return env


def log_text(work, node):
    try:
        with open(os.path.join(work, f"job.node{node}.log"), errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_for(what, predicate, timeout, poll=0.05):
    """Polls `predicate` until it returns something true; returns (value, monotonic time)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value, time.monotonic()
        time.sleep(poll)
    raise Failed(f"timed out after {timeout} s waiting for {what}")


def snapshots(work):
    return [p for p in glob.glob(os.path.join(work, "out", "snapshot_iter_*")) if not p.endswith(".safetensors")]


def wait_for_snapshot(work, world=None, timeout=120):
    """Waits until a snapshot exists (one written by a world of `world` ranks, when given: the first
    rendezvous may have formed before every node was there); returns its name."""
    since = 0.0
    if world:
        def started():
            times = [h["started"] for h, _ in read_sample_logs(work) if h["world"] == world]
            return min(times) if times else None
        since, _ = wait_for(f"a step in a world of {world}", started, timeout)

    def found():
        names = [p for p in snapshots(work)
                 if not os.path.basename(p).startswith("tmp") and os.path.getmtime(p) >= since]
        return os.path.basename(names[0]) if names else None
    name, _ = wait_for("a snapshot", found, timeout)
    return name


# ---- the sample logs -----------------------------------------------------------------------

def read_sample_logs(work):
    """Per process: (header dict, [(iteration, epoch, [indices])])."""
    procs = []
    for path in glob.glob(os.path.join(work, "samples", "*.log")):
        with open(path) as f:
            lines = f.read().split("\n")
        m = re.match(r"resume (\S+) world (\d+) rank (\d+) started (\S+)$", lines[0]) if lines else None
        if not m:
            continue  # a process that never stepped
        header = {"resume": m.group(1), "world": int(m.group(2)), "rank": int(m.group(3)),
                  "started": float(m.group(4))}
        steps = []
        for line in lines[1:]:
            words = line.split()
            if len(words) < 3:
                continue  # the end of a file cut mid-line
            steps.append((int(words[0]), int(words[1]), [int(w) for w in words[2:]]))
        procs.append((header, steps))
    return procs


def account(work):
    """Checks that the job trained on every image of every epoch exactly once; returns a summary."""
    procs = read_sample_logs(work)
    if not procs:
        raise Failed("no sample logs were written")
    # An attempt: the processes that resumed from the same snapshot in a world of the same size.
    attempts = {}
    for header, steps in procs:
        key = (header["resume"], header["world"])
        attempts.setdefault(key, []).append((header, steps))
    ordered = sorted(attempts.items(), key=lambda kv: min(h["started"] for h, _ in kv[1]))
    kept = []  # (epoch, indices)
    summary = []
    for k, ((resume, world), members) in enumerate(ordered):
        if len(members) != world:
            raise Failed(f"the attempt resuming from {resume} in a world of {world} has {len(members)} processes")
        # The steps redone by the next attempt (after the snapshot it resumed from) do not count.
        limit = None
        if k + 1 < len(ordered):
            nxt = ordered[k + 1][0][0]
            limit = int(re.search(r"(\d+)$", nxt).group(1)) if nxt != "none" else -1
        steps = 0
        for _, lines in members:
            for iteration, epoch, indices in lines:
                if limit is None or iteration <= limit:
                    kept.append((epoch, indices))
                    steps += 1
        summary.append(f"attempt {k}: resumed from {resume}, world {world}, {steps} rank-steps kept"
                       + ("" if limit is None else f" (up to step {limit})"))
    per_epoch = {}
    for epoch, indices in kept:
        per_epoch.setdefault(epoch, []).extend(indices)
    if sorted(per_epoch) != list(range(EPOCHS)):
        raise Failed(f"the logs cover epochs {sorted(per_epoch)}, expected 0 to {EPOCHS - 1}")
    for epoch, indices in sorted(per_epoch.items()):
        counts = {}
        for i in indices:
            counts[i] = counts.get(i, 0) + 1
        repeated = sorted(i for i, c in counts.items() if c > 1)
        missing = sorted(set(range(IMAGES)) - set(counts))
        if repeated or missing or len(indices) != IMAGES:
            raise Failed(f"epoch {epoch}: {len(indices)} images trained on, {len(repeated)} more than once "
                         f"(e.g. {repeated[:5]}), {len(missing)} never (e.g. {missing[:5]}); expected each of "
                         f"the {IMAGES} once")
        summary.append(f"epoch {epoch}: each of the {IMAGES} images trained on exactly once")
    return summary


def accuracy(work, nodes=(1, 2)):
    for n in nodes:
        m = re.findall(r"test accuracy after \d+ epochs: ([0-9.]+)", log_text(work, n))
        if m:
            return float(m[-1])
    raise Failed("no final test accuracy was printed")


def check_accuracy(work, nodes=(1, 2)):
    acc = accuracy(work, nodes)
    if abs(acc - BASELINE_ACCURACY) > ACCURACY_TOLERANCE:
        raise Failed(f"final test accuracy {acc:.4f}, the uninterrupted job's is {BASELINE_ACCURACY} "
                     f"(tolerance {ACCURACY_TOLERANCE})")
    return f"final test accuracy {acc:.4f} (uninterrupted: {BASELINE_ACCURACY})"


# ---- the scenarios ------------------------------------------------------------------------

def start_job(nodes, example, work, which, nnodes, deadline, env_extra=None):
    procs = {}
    env = job_env(deadline)
    env.update(env_extra or {})
    for i in which:
        procs[i] = nodes.start(i, job_argv(example, work, nnodes, is_host=(i == 1)), env=env, name="job")
    return procs


def finish(nodes, procs, timeout):
    if not nodes.wait(list(procs), timeout):
        raise Failed(f"the job did not end within {timeout} s")
    codes = [p.returncode for p in procs]
    return codes


def fault_and_recover(nodes, example, work, deadline, fault, after_detection=None):
    """2 nodes; after a snapshot, `fault(nodes)`; node 1 must name the loss and finish alone or
    with a replaced node 2, having trained on every image once, as accurately as the uninterrupted
    job. Returns the report lines."""
    procs = start_job(nodes, example, work, (1, 2), "1:2", deadline)
    snap = wait_for_snapshot(work, world=2)
    t_fault = time.monotonic()
    what = fault(nodes)
    report = [f"fault: {what} after {snap}"]
    # The watchdog's message, or (a reset connection) the failed collective's.
    patterns = [r"ppe::distributed: rank \d+ on node2 \(no heartbeat for [0-9.]+ s\) is lost",
                r"ppe: ranks? [0-9, ]+ of the process group (is|are) gone \(no heartbeat\)"]

    def detected():
        text = log_text(work, 1)
        for p in patterns:
            m = re.search(p, text)
            if m:
                return m.group(0)
        return None
    message, t_seen = wait_for("node 1's error naming node 2's rank", detected, deadline + 20)
    detection = t_seen - t_fault
    if detection > deadline + 5:
        raise Failed(f"node 1 named the lost rank {detection:.1f} s after the fault (deadline {deadline} s)")
    report.append(f"detection: node 1 said '{message}' {detection:.1f} s after the fault")
    if after_detection:
        report.append(after_detection(nodes))

    def resumed():
        return any(h["resume"] != "none" for h, _ in read_sample_logs(work))
    _, t_resumed = wait_for("the restarted job's first step", resumed, 120)
    report.append(f"restart: the job stepped again from its snapshot {t_resumed - t_fault:.1f} s after the fault")
    # Node 1's torchrun must end well: the job finished.
    if not nodes.wait([procs[1]], 240):
        raise Failed("node 1's torchrun did not end within 240 s of the restart")
    if procs[1].returncode != 0:
        raise Failed(f"node 1's torchrun ended with {procs[1].returncode}")
    report.append(f"end: node 1's torchrun exited 0 {time.monotonic() - t_fault:.1f} s after the fault")
    return report + account(work) + [check_accuracy(work)]


def no_fault(nodes, example, work, deadline):
    report = []
    finals = []
    for label, timeout in (("watchdog on", deadline), ("watchdog off", 0)):
        shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
        shutil.rmtree(os.path.join(work, "samples"), ignore_errors=True)
        if os.path.exists(os.path.join(work, "rdzv")):  # a file rendezvous, closed by the first job
            os.remove(os.path.join(work, "rdzv"))
        t0 = time.monotonic()
        procs = start_job(nodes, example, work, (1, 2), "2", timeout)
        codes = finish(nodes, procs.values(), 240)
        if codes != [0, 0]:
            raise Failed(f"{label}: the torchruns ended with {codes}")
        report.append(f"{label}: finished in {time.monotonic() - t0:.1f} s; " + check_accuracy(work))
        report += account(work)
        last = sorted(snapshots(work), key=lambda p: int(re.search(r"(\d+)$", p).group(1)))[-1]
        kept = os.path.join(work, f"final_{timeout}")
        shutil.copy(last, kept)
        finals.append(kept)
    # Bit for bit: the models' tensors of the two final snapshots (Debian's python3-torch reads them).
    compare = ("import sys, torch\n"
               "a, b = (torch.load(p)['models']['main'] for p in sys.argv[1:])\n"
               "assert a.keys() == b.keys(), (a.keys(), b.keys())\n"
               "bad = [k for k in a if not torch.equal(a[k], b[k])]\n"
               "print(len(a), 'tensors;', 'differ: ' + ', '.join(bad) if bad else 'all equal')\n"
               "sys.exit(1 if bad else 0)\n")
    out = subprocess.run(["/usr/bin/python3", "-c", compare, *finals], capture_output=True, text=True)
    if out.returncode != 0:
        raise Failed("the final weights differ with the watchdog off: " + out.stdout + out.stderr)
    report.append("final weights, watchdog on and off: " + out.stdout.strip())
    return report


def node_killed(nodes, example, work, deadline):
    def fault(n):
        n.kill(2)
        return "SIGKILL to node 2's processes (torchrun's agent and the worker)"
    return fault_and_recover(nodes, example, work, deadline, fault)


def link_down(nodes, example, work, deadline):
    def fault(n):
        n.cut(2)
        return "node 2's cable cut (its switch port down)"

    def file_rendezvous_too(n):
        # A cut cable takes the shared file system along, and with it a file rendezvous; the
        # namespaces here share their files, so node 2 (which would rejoin through the file and
        # then reach nobody) is stopped once the cut was seen.
        if RENDEZVOUS != "file":
            return "node 2's agent cannot reach the rendezvous either"
        n.kill(2)
        return "node 2 stopped (its file rendezvous would have gone with the cable)"
    return fault_and_recover(nodes, example, work, deadline, fault, file_rendezvous_too)


def rank_stopped(nodes, example, work, deadline):
    def fault(n):
        pids = n.stop(2, example)
        if not pids:
            raise Failed("node 2 runs no worker to stop")
        return f"SIGSTOP to node 2's worker (pid {pids[0]})"
    return fault_and_recover(nodes, example, work, deadline, fault)


def scale_up(nodes, example, work, deadline):
    procs = start_job(nodes, example, work, (1,), "1:2", deadline)
    snap = wait_for_snapshot(work)
    # The job must still run when node 2 has joined the rendezvous: node 1's worker pauses (as
    # a slow step would) from its snapshot until then.
    if not nodes.stop(1, example):
        raise Failed("node 1 runs no worker")
    t_join = time.monotonic()
    procs.update(start_job(nodes, example, work, (2,), "1:2", deadline))
    wait_for("node 2 at the rendezvous", lambda: "Rendezvous'ing worker group" in log_text(work, 2), 60)
    nodes.resume(1, example)
    report = [f"node 2 joins after {snap} (node 1's worker paused until node 2 was at the rendezvous)"]

    def on_two():
        return any(h["world"] == 2 for h, _ in read_sample_logs(work))
    _, t_two = wait_for("a step in a world of 2", on_two, 120)
    report.append(f"restart: the job stepped on 2 nodes {t_two - t_join:.1f} s after node 2 started")
    codes = finish(nodes, procs.values(), 240)
    if codes != [0, 0]:
        raise Failed(f"the torchruns ended with {codes}")
    return report + account(work) + [check_accuracy(work)]


def store_lost(nodes, example, work, deadline):
    procs = start_job(nodes, example, work, (1, 2), "1:2", deadline)
    snap = wait_for_snapshot(work, world=2)
    # The group's store: at MASTER_ADDR, which torchrun's agents print with the rendezvous.
    # (LibTorch 1.13: rank 0's worker, named by host; 2.x: the rendezvous's own store, on node1,
    # named by host or address.)
    def store_node():
        found = re.findall(r"master_addr=(?:node|10\.0\.0\.)(\d)\b", log_text(work, 1) + log_text(work, 2))
        return int(found[0]) if found else None
    lost, _ = wait_for("the store's host in torchrun's log", store_node, 30)
    survivor = 3 - lost
    t_fault = time.monotonic()
    nodes.cut(lost)
    report = [f"fault: node {lost}'s cable cut (it hosts the group's store) after {snap}"]

    def detected():
        m = re.search(r"ppe::distributed: the store at \S+ \(hosted by [^)]*\) has not answered for [0-9.]+ s",
                      log_text(work, survivor))
        return m.group(0) if m else None
    message, t_seen = wait_for(f"node {survivor}'s error naming the store", detected, deadline + 20)
    detection = t_seen - t_fault
    if detection > deadline + 5:
        raise Failed(f"node {survivor} reported the store {detection:.1f} s after the fault (deadline {deadline} s)")
    report.append(f"detection: node {survivor} said '{message}' {detection:.1f} s after the fault")
    # Its worker has ended (the watchdog's exit). Its torchrun agent waits on the rendezvous store,
    # which was on the lost node too: it ends when TCP gives up on that connection, minutes later
    # (docs/distributed.md); the rig ends it.
    workers, t_gone = wait_for(f"node {survivor}'s worker to end",
                               lambda: not nodes.running(survivor, example) or None, 10)
    report.append(f"end: node {survivor}'s worker ended {t_gone - t_fault:.1f} s after the fault; its torchrun "
                  f"{'exited ' + str(procs[survivor].poll()) if procs[survivor].poll() is not None else 'still runs (a TCP rendezvous: waiting on the lost store)'}")
    return report


SCENARIOS = {f.__name__: f for f in (no_fault, node_killed, link_down, rank_stopped, scale_up, store_lost)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=sorted(SCENARIOS))
    parser.add_argument("--example", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--deadline", type=float, default=10.0)
    args = parser.parse_args()
    why = rig.available()
    if why:
        print(f"skipped: {why}")
        return 77
    if shutil.which("torchrun") is None:
        print("skipped: no torchrun on the PATH (Debian's python3-torch)")
        return 77
    probe = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                             "support", "torchrun_store_probe.py")],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        why = probe.stdout.strip() or probe.stderr.strip()
        file_store = subprocess.run(["/usr/bin/python3", "-c", "import sys, torch.distributed as d; "
                                     "s = d.FileStore(sys.argv[1], 1); s.set('k', 'v')", args.work + ".probe"],
                                    capture_output=True, text=True)
        if os.path.exists(args.work + ".probe"):
            os.remove(args.work + ".probe")
        if file_store.returncode != 0:
            print("skipped: " + why)
            return 77
        global RENDEZVOUS
        RENDEZVOUS = "file"
        print(f"{why.removesuffix('; skipped')}: the rendezvous is a file store (docs/distributed.md)")
    example = os.path.abspath(args.example)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t0 = time.monotonic()
    try:
        with rig.Nodes(2, work) as nodes:
            report = SCENARIOS[args.name](nodes, example, work, args.deadline)
    except Failed as e:
        print(f"FAIL ({args.name}): {e}")
        for i in (1, 2):
            print(f"---- node {i}'s log (last 60 lines)")
            print("\n".join(log_text(work, i).split("\n")[-60:]))
        return 1
    for line in report:
        print(line)
    print(f"{args.name}: passed in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
