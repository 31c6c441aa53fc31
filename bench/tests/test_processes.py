"""The /proc reading the CPU table depends on: children found from every
thread, and CPU time reported under the name a process was started as."""

import os
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path

import helpers  # noqa: F401  (puts fmbench on the path)

from fmbench.processes import Processes, children_of, free_port


class Children(unittest.TestCase):
    def test_child_of_another_thread(self):
        got = []
        t = threading.Thread(target=lambda: got.append(subprocess.Popen(["sleep", "5"])))
        t.start()
        t.join()
        try:
            # Its thread's exit hands the child to another thread of the
            # process, and `join` may return before the kernel has.
            self.assertTrue(eventually(lambda: got[0].pid in children_of(os.getpid()), timeout=5),
                            children_of(os.getpid()))
        finally:
            got[0].kill()
            got[0].wait()


def eventually(cond, timeout=30):
    """cond() turns true before the timeout (generous: the machine may be busy)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


class OwnTicks(unittest.TestCase):
    def test_names(self):
        with tempfile.TemporaryDirectory() as d:
            procs = Processes(Path(d))
            try:
                # A parent that forks a busy child: the child's CPU goes to the
                # parent's name, unless it is named itself.
                p = procs.start("parent", ["sh", "-c", "sh -c 'while :; do :; done' & wait"])
                deadline = time.time() + 10
                while not children_of(p.pid) and time.time() < deadline:
                    time.sleep(0.05)
                child = children_of(p.pid)[0]
                self.assertTrue(eventually(lambda: procs.own_ticks().get("parent", 0) > 0))
                procs.extra_names[child] = "busy child"
                self.assertTrue(eventually(lambda: procs.own_ticks().get("busy child", 0) > 0))
                os.kill(child, 9)
            finally:
                procs.stop_all()


class Settle(unittest.TestCase):
    def test_waits_out_a_busy_process_not_an_idle_one(self):
        with tempfile.TemporaryDirectory() as d:
            procs = Processes(Path(d))
            try:
                procs.start("idle", ["sleep", "60"])
                # Busy for 1.5 s of wall time (its child's CPU is its own), then idle.
                procs.start("busy", ["sh", "-c", "timeout 1.5 sh -c 'while :; do :; done'; exec sleep 60"])
                waited = procs.settle(limit=20)
                self.assertGreaterEqual(waited, 1.0)
                self.assertLess(waited, 20, "never went idle")
                self.assertLess(procs.settle(limit=20), 20, "idle processes are waited for")
            finally:
                procs.stop_all()


class FreePorts(unittest.TestCase):
    def test_distinct_and_below_the_ephemeral_range(self):
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
        ports = [free_port() for _ in range(200)]
        self.assertEqual(len(set(ports)), len(ports))
        self.assertTrue(all(10000 <= p < low for p in ports), ports)


if __name__ == "__main__":
    unittest.main()

