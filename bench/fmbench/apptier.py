"""What the application bench reads off the function tier during a load run:
the resident memory of every process it started (sampled), and the runtime's
Prometheus metrics (scraped before and after, for `fmerge plan --metrics`)."""

import threading
import time
from pathlib import Path

from .config import die
from .processes import children_of, http

# How often the RSS is sampled during a run, s.
RSS_EVERY = 0.25


def rss_kib(status):
    """VmRSS of a /proc/<pid>/status text, KiB; None without one (a zombie)."""
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def tree_rss_kib(pid):
    """The RSS of pid and every descendant (a function of-watchdog forked), KiB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += rss_kib(Path(f"/proc/{p}/status").read_text()) or 0
        except OSError:
            continue  # gone meanwhile
        todo += children_of(p)
    return total


def rss_figures(samples):
    """From samples {process: KiB}: the mean and the peak of their total,
    and each process's mean, in MiB."""
    if not samples:
        return {"rss_mib_mean": None, "rss_mib_peak": None, "rss_mib_by_process": {}, "rss_samples": 0}
    totals = [sum(s.values()) for s in samples]
    names = sorted(set().union(*samples))
    return {"rss_mib_mean": sum(totals) / len(totals) / 1024, "rss_mib_peak": max(totals) / 1024,
            "rss_mib_by_process": {n: sum(s.get(n, 0) for s in samples) / len(samples) / 1024 for n in names},
            "rss_samples": len(samples)}


class RssSampler:
    """Samples the RSS of `pids` ({name: pid}, each with its descendants)
    every RSS_EVERY s from start until figures()."""

    def __init__(self, pids):
        self.pids, self.samples, self.stop = dict(pids), [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            self.samples.append({n: tree_rss_kib(p) for n, p in self.pids.items()})
            if self.stop.wait(RSS_EVERY):
                return

    def figures(self):
        self.stop.set()
        self.thread.join()
        return rss_figures(self.samples)


def stamped(text, ms):
    """`text` with each `process_` sample (no timestamp of its own yet)
    timestamped `ms`."""
    lines = []
    for line in text.splitlines():
        if line.startswith("process_") and len(line.split()) == 2:
            line = f"{line} {ms}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def scrape(ports, path):
    """Every runtime's /metrics ({name: metrics port}), concatenated into
    `path` (`fmerge plan --metrics` adds up pods' scrapes so joined). Each
    process sample gets the time it was read (the text format's timestamp,
    ms): `fmerge plan` takes the window between two scrapes from it, never
    from the files' times."""
    parts = []
    for name, port in sorted(ports.items()):
        status, text = http(f"http://127.0.0.1:{port}/metrics")
        if status != 200:
            die(f"{name}'s metrics on :{port} answered {status}: is metrics_port set for it?")
        parts.append(stamped(text.decode(), int(time.time() * 1000)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(p if p.endswith("\n") else p + "\n" for p in parts))
    return str(path)
