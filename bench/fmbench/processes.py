"""The processes of the system under test: starting them (optionally pinned
to CPUs), waiting for them, stopping them, and the CPU time each spent
(from /proc); plus free ports, plain HTTP on loopback and just enough Redis to
seed the data the functions read."""

import ctypes
import os
import random
import resource
import signal
import socket
import subprocess
import time
import urllib.request

from .config import AUTHOR, FOLLOWERS, USERS, child_env, die


def pinned(argv, cpus):
    """argv run on the given CPUs (taskset execs it: same pid), or as is."""
    return ["taskset", "-c", ",".join(map(str, cpus))] + [str(a) for a in argv] if cpus else [str(a) for a in argv]


class Processes:
    """Every process this run started, stopped in reverse order (at the end of
    a mode and at exit), and the names their CPU time is reported under."""

    def __init__(self, log_dir):
        self.log_dir = log_dir  # default home of <name>.log
        self.running = []  # (name, Popen, log path)
        # pid -> name for processes started by others (a function forked by
        # of-watchdog): their CPU is reported apart from their parent's.
        self.extra_names = {}
        self.children_cpu = 0.0  # getrusage(RUSAGE_CHILDREN) at the last look

    def start(self, name, argv, env=None, log_dir=None, cpus=None):
        log_path = (log_dir or self.log_dir) / f"{name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "wb") as f:  # the child keeps its own copy
            p = subprocess.Popen(pinned(argv, cpus), env={**child_env(), **(env or {})}, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        self.running.append((name, p, log_path))
        return p

    def stop_all(self):
        """Signals every process at once (so their drains overlap), newest
        first, then gives them 5 s in all before killing what is left."""
        stopping = []
        while self.running:
            name, p, _ = self.running.pop()
            if p.poll() is not None:
                continue
            # nginx: SIGQUIT lets the master take its workers down with it.
            p.send_signal(signal.SIGQUIT if name.startswith("nginx") else signal.SIGTERM)
            stopping.append(p)
        deadline = time.monotonic() + 5
        for p in stopping:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.extra_names.clear()

    def own_ticks(self):
        """CPU ticks of every live descendant of this script (the system under
        test), by the name of the nearest ancestor it was started as (a
        child of this script, or a process named in extra_names)."""
        me = os.getpid()
        parent = {}
        ticks = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
            except OSError:
                continue
            fields = s[s.rfind(")") + 2 :].split()
            parent[int(d)] = int(fields[1])
            ticks[int(d)] = int(fields[11]) + int(fields[12])
        names = {p.pid: name for name, p, _ in self.running}
        out = {}
        for pid, t in ticks.items():
            p = pid
            while p not in self.extra_names and p in parent and parent[p] not in (0, 1, me):
                p = parent[p]
            if p in self.extra_names or parent.get(p) == me:
                name = self.extra_names.get(p) or names.get(p, "other")
                out[name] = out.get(name, 0) + t
        return out

    def settle(self, quiet=0.5, limit=30.0):
        """Waits until the processes started here have been idle for `quiet`
        s (together at most 2 clock ticks, a few % of a CPU): after an
        overloaded run their queued requests keep them busy for a while, and
        the next run, whichever deployment it measures, would start on a busy
        machine. Returns the seconds waited (`limit` if they never went idle)."""
        t0 = time.monotonic()
        last = sum(self.own_ticks().values())
        while time.monotonic() - t0 < limit:
            time.sleep(quiet)
            now = sum(self.own_ticks().values())
            if now - last <= 2:
                break
            last = now
        return time.monotonic() - t0

    def reaped_cpu(self):
        """CPU seconds of children reaped since the last call (oha, mostly)."""
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        now = ru.ru_utime + ru.ru_stime
        delta = now - self.children_cpu
        self.children_cpu = now
        return delta


def become_subreaper(who, on=True):
    """Makes this process the one its descendants' orphans are handed to, so
    that none outlives the run (kill_adopted), or (`on` False) no more."""
    PR_SET_CHILD_SUBREAPER = 36
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        die(f"cannot make {who} a child subreaper (prctl)")


def kill_adopted(keep=()):
    """Kills and reaps every child of this process whose pid is not in
    `keep`: a subreaper's children it did not start are orphans it adopted.
    Until none is left: each one killed hands its own children on to this
    process (a watchdog's function, nginx's workers)."""
    while orphans := [pid for pid in children_of(os.getpid()) if pid not in keep]:
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def children_of(pid):
    """The pids of pid's live children (forked by any of its threads: a Go
    program forks from whichever thread runs the call)."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return sorted(set(out))


_GIVEN = set()  # ports free_port handed out in this run


def free_port():
    """A free port below the kernel's ephemeral range, never the same twice.
    A port the kernel picks (bind to 0) comes from that range, and an
    outgoing connection (a function's Redis client, nginx's upstream) could
    take it before the process meant to listen on it starts."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for _ in range(1000):
        port = random.randrange(10000, max(10001, low))
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    die(f"no free port between 10000 and {low} on 127.0.0.1")


def port_in_use(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def http(url, body=None, timeout=10):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    if body is not None:
        req.add_header("content-type", "application/json")
    with opener.open(req, timeout=timeout) as r:
        return r.status, r.read()


def wait_until(ready, name, proc, logs, timeout, failure):
    """Polls ready() (an OSError counts as not yet) until it is true; dies
    with `failure` after `timeout` seconds, or at once if proc exits first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            die(f"{name} exited ({proc.returncode}); see its log under {logs}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.05)
    die(failure)


def wait_health(name, port, proc, logs, timeout=20):
    def healthy():
        return http(f"http://127.0.0.1:{port}/_/health", timeout=1)[0] == 200

    wait_until(healthy, name, proc, logs, timeout, f"{name} did not answer /_/health on 127.0.0.1:{port}")


def wait_port(name, port, proc, logs, timeout=20):
    def listening():
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True

    wait_until(listening, name, proc, logs, timeout, f"{name} is not listening on 127.0.0.1:{port}")


class Redis:
    """Just enough RESP to seed and flush."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def cmd(self, *args):
        parts = [str(a).encode() if not isinstance(a, bytes) else a for a in args]
        self.sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        return self._read()

    def _read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError(f"unexpected redis reply {line!r}")


def seed(r):
    r.cmd("FLUSHALL")
    args = []
    for i in range(FOLLOWERS):
        args += [i + 1, 1000 + i]  # score = when they followed
    r.cmd("ZADD", f"social-graph:followers:{AUTHOR}", *args)
    for name, uid in USERS.items():
        r.cmd("SET", f"user:{name}", uid)


def cpu_busy_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v[:8]) - idle  # user nice system idle iowait irq softirq steal


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]
