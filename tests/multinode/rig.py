"""Several machines on one machine: network namespaces as nodes, for ppe's multi-node tests.

`Nodes(n)` makes a switch (a namespace holding a bridge) and n nodes (namespaces with their own
host name, `node1` ... `nodeN`, and an address 10.0.0.i/24 on `eth0`, a veth whose other end
is a port of the bridge). Every node resolves the others' names (a hosts file that
`ip netns exec` puts in place), `lo` is up everywhere, and nothing gets an address outside the
namespaces made here. Programs start on a node with `start(i, argv)`; the faults:

- `kill(i)`: SIGKILL to every process of node i (its connections are reset);
- `cut(i)`: node i's port of the switch goes down (a cut cable: silence, no reset);
- `stop(i, exe)`: SIGSTOP to node i's processes running `exe` (a hung rank), `resume` SIGCONT;
- a node that joins late: start it later.

Everything made is removed on every exit path: `close()` (also from `with`), at interpreter
exit, and on SIGTERM, SIGINT and SIGHUP (then the process exits with 128 + signal). A rig left
behind by a process killed with SIGKILL is removed by the next `Nodes` (its namespaces carry the
owner's pid). `available()` says why namespaces cannot be made here (not root, no `ip`).
"""
import atexit
import os
import shutil
import signal
import subprocess
import time

PREFIX = "ppemn"  # namespaces ppemn<pid>sw, ppemn<pid>n<i>


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def available():
    """None when namespaces can be made here, else a one-line reason."""
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_SYS_ADMIN (run the multi-node tests as root)"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "no `ip` (iproute2) or `unshare` (util-linux) on the PATH"
    probe = f"{PREFIX}{os.getpid()}probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return "cannot make a network namespace: " + made.stderr.strip()
    _ip("netns", "del", probe, check=False)
    return None


def _remove_namespace(ns):
    pids = _ip("netns", "pids", ns, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _ip("netns", "del", ns, check=False)
    shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)


def remove_stale():
    """Removes the namespaces of rigs whose owner process is gone."""
    listing = _ip("netns", "list", check=False).stdout.split("\n")
    for line in listing:
        name = line.split(" ")[0]
        if not name.startswith(PREFIX):
            continue
        digits = ""
        for ch in name[len(PREFIX):]:
            if not ch.isdigit():
                break
            digits += ch
        if digits and not os.path.exists(f"/proc/{digits}"):
            _remove_namespace(name)


class Nodes:
    def __init__(self, n, log_dir):
        remove_stale()
        self.n = n
        self.log_dir = log_dir
        self.tag = f"{PREFIX}{os.getpid()}"
        self.switch = self.tag + "sw"
        self.procs = {}  # node -> [Popen]
        self.closed = False
        self.namespaces = []
        atexit.register(self.close)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        try:
            self._make()
        except BaseException:
            self.close()
            raise

    def ns(self, i):
        return f"{self.tag}n{i}"

    @staticmethod
    def address(i):
        return f"10.0.0.{i}"

    def _make(self):
        _ip("netns", "add", self.switch)
        self.namespaces.append(self.switch)
        _ip("-n", self.switch, "link", "set", "lo", "up")
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        hosts = "127.0.0.1 localhost\n" + "".join(f"{self.address(i)} node{i}\n" for i in range(1, self.n + 1))
        for i in range(1, self.n + 1):
            ns = self.ns(i)
            _ip("netns", "add", ns)
            self.namespaces.append(ns)
            os.makedirs(f"/etc/netns/{ns}", exist_ok=True)
            with open(f"/etc/netns/{ns}/hosts", "w") as f:
                f.write(hosts)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", self.switch, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0")
            _ip("-n", self.switch, "link", "set", f"p{i}", "up")
            _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")

    def start(self, i, argv, env=None, name="proc"):
        """Starts `argv` on node i (its own host name node<i>); output to <log_dir>/<name>.node<i>.log."""
        log = open(os.path.join(self.log_dir, f"{name}.node{i}.log"), "ab")
        wrapped = ["ip", "netns", "exec", self.ns(i), "unshare", "--uts", "--", "sh", "-c",
                   f'hostname node{i} && exec "$@"', "sh", *argv]
        full_env = dict(os.environ)
        full_env.update(env or {})
        p = subprocess.Popen(wrapped, stdout=log, stderr=subprocess.STDOUT, env=full_env, start_new_session=True)
        self.procs.setdefault(i, []).append(p)
        return p

    def pids(self, i):
        return [int(p) for p in _ip("netns", "pids", self.ns(i), check=False).stdout.split()]

    def kill(self, i):
        """SIGKILL to every process of node i."""
        for pid in self.pids(i):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def cut(self, i):
        """Node i's cable is cut: its port of the switch goes down (no reset reaches anyone)."""
        _ip("-n", self.switch, "link", "set", f"p{i}", "down")

    def running(self, i, exe):
        """The pids of node i's processes whose executable is `exe`."""
        # The same file, not the same path: a process of another mount namespace (ip netns exec
        # makes one) shows its executable under a path of its own (in a chroot: the host's).
        found = []
        target = os.stat(exe)
        for pid in self.pids(i):
            try:
                st = os.stat(f"/proc/{pid}/exe")
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                found.append(pid)
        return found

    def stop(self, i, exe, sig=signal.SIGSTOP):
        """SIGSTOP (or `sig`) to the processes of node i whose executable is `exe`; their pids."""
        signalled = []
        for pid in self.running(i, exe):
            try:
                os.kill(pid, sig)
                signalled.append(pid)
            except ProcessLookupError:
                pass
        return signalled

    def resume(self, i, exe):
        """SIGCONT to node i's processes running `exe`."""
        return self.stop(i, exe, signal.SIGCONT)

    def wait(self, procs, timeout):
        """Waits for every Popen in `procs` until `timeout` seconds; True when all ended."""
        end = time.monotonic() + timeout
        for p in procs:
            left = end - time.monotonic()
            if left <= 0:
                return False
            try:
                p.wait(timeout=left)
            except subprocess.TimeoutExpired:
                return False
        return True

    def _on_signal(self, signum, _frame):
        self.close()
        os._exit(128 + signum)

    def close(self):
        if self.closed:
            return
        self.closed = True
        for ns in reversed(self.namespaces):
            _remove_namespace(ns)
        for procs in self.procs.values():
            for p in procs:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
