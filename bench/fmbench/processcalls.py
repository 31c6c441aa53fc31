"""`--only process`, per call between members, in the worker's namespace
(processbed.py), one run at a time, every kind once per round in an order
that turns each round, so that drift hits all alike:
- process starts: /bin/true, an empty Rust program, each function binary and the merged binary
  with stdin at EOF (/dev/null: the function reads an empty line and panics
  on it, so each includes exec, the dynamic loader, Rust's start-up and a
  panic message);
- the callee's run: its binary with the call's body on stdin (start +
  work: Redis connect, ZRANGE, the reply), and the merged binary run as that
  member by exec (`FMERGE_RUN_MEMBER`), the process the stand-in starts
  where its zygote cannot fork one (the zygote's fork is in the merged path
  below);
- the unmerged hop: the call's request to the callee through nginx and its
  of-watchdog, a new connection each, to the gateway's name (as the
  caller's libcurl makes it);
- the caller run directly (no watchdog in front), unmerged (its call
  through the gateway) and merged (its call through the stand-in), the
  merged binary twice: as built (the callee in the caller's process, where
  fmerge's build let it) and with the callee's `exec_timeout` set shorter
  than the caller's, which sends it to a process forked by the zygote (the
  shim's rule: only a process can be killed at its limit), so that both
  paths are measured side by side.
Each timed from this driver (subprocess or http.client), so every figure
includes the driver's own cost, alike for all; `/bin/true` shows it with
the kernel's fork and exec."""

import http.client
import json
import subprocess
import time

from .config import REQUESTS, die, log
from .load import median
from .processes import loadavg

CALLER_PKG, CALLEE_PKG = "WriteHomeTimeline", "SocialGraphGetFollowers"
CALLEE = "social-graph-get-followers"
RUN_MEMBER = "FMERGE_RUN_MEMBER"
# The callee's own limit shorter than the caller's (of-watchdog's default
# when unset): the shim runs it in a process forked by its zygote.
FORKED = {"SOCIAL_GRAPH_GET_FOLLOWERS__exec_timeout": "5s", "exec_timeout": "30s"}


def percentile(xs, q):
    """The q-quantile (0..1) of xs, nearest rank."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def summary(xs):
    """Median, p10, p90 in ms of a list of seconds."""
    return {"n": len(xs), "median_ms": 1e3 * median(xs), "p10_ms": 1e3 * percentile(xs, 0.1),
            "p90_ms": 1e3 * percentile(xs, 0.9)}


def derive(m):
    """The per-call figures from the kinds' medians (ms), each a difference
    of medians:
    - work: the callee's run less its start-up (stdin at EOF);
    - unmerged hop over work: the request through nginx + of-watchdog + the
      callee's process less its work (gateway, watchdog, process start);
    - saved per call: the caller unmerged less the caller merged (same
      caller code, same Redis work, its call the only difference besides
      the binary's start);
    - merged path: the unmerged hop less what merging saved, corrected for
      the two binaries' start-ups (merged_idle − caller_idle, the zygote's
      fork at start included in both merged runs): the stand-in, the member's
      process forked by the zygote and its work;
    - merged path over work: the figure the targets are about (≤ 50 µs
      in-process, ≤ 2 ms in a process of its own), for each path;
    - what a warm start saves: the merged binary started directly less the
      same through the launcher (idle, and with the request)."""
    work = m["callee"] - m["callee_idle"]
    saved = m["caller_unmerged"] - m["caller_merged"]
    path = m["hop"] - saved - (m["merged_idle"] - m["caller_idle"])
    saved_forked = m["caller_unmerged"] - m["caller_merged_forked"]
    forked = m["hop"] - saved_forked - (m["merged_idle_forked"] - m["caller_idle"])
    return {
        "callee_work_ms": work,
        "unmerged_hop_ms": m["hop"],
        "unmerged_hop_over_work_ms": m["hop"] - work,
        "saved_per_call_ms": saved,
        "merged_path_ms": path,
        "merged_path_over_work_ms": path - work,
        "saved_per_call_forked_ms": saved_forked,
        "forked_path_ms": forked,
        "forked_path_over_work_ms": forked - work,
        "member_process_over_work_ms": m["member"] - work,
        "merged_start_over_callee_start_ms": m["member"] - m["callee"],
        "warm_start_saved_ms": m["merged_idle"] - m["merged_idle_warm"],
        "warm_request_saved_ms": m["caller_merged"] - m["caller_merged_warm"],
    }


def kinds(plan):
    """{kind: () -> seconds} of every run, and {kind: its first reply}."""
    bins = plan["binaries"]
    env = {"PATH": "/usr/bin:/bin", "RUST_BACKTRACE": "0"}
    query = json.dumps({"user_id": REQUESTS["pair"]["user_id"]}).encode()
    post = json.dumps(REQUESTS["pair"]).encode()
    replies = {}

    def proc(kind, argv, stdin, extra=None, ok=True):
        def once():
            t0 = time.perf_counter()
            p = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env={**env, **(extra or {})})
            dt = time.perf_counter() - t0
            if (p.returncode == 0) != ok:
                die(f"{kind}: {argv[0]} exited {p.returncode}, expected {'success' if ok else 'a failure'}")
            replies.setdefault(kind, p.stdout)
            return dt
        return once

    def hop():
        t0 = time.perf_counter()
        c = http.client.HTTPConnection(plan["gateway_host"], plan["gateway_port"], timeout=10)
        c.request("POST", f"/function/{CALLEE}", body=query, headers={"content-type": "application/json"})
        r = c.getresponse()
        body = r.read()
        c.close()
        dt = time.perf_counter() - t0
        if r.status != 200:
            die(f"the hop answered {r.status}: {body[:300]!r}")
        replies.setdefault("hop", body)
        return dt

    runs = {
        "true": proc("true", ["/bin/true"], b""),
        "rust_idle": proc("rust_idle", [bins["empty"]], b""),
        "callee_idle": proc("callee_idle", [bins[CALLEE_PKG]], b"", ok=False),
        "caller_idle": proc("caller_idle", [bins[CALLER_PKG]], b"", ok=False),
        "merged_idle": proc("merged_idle", [bins["merged"]], b"", ok=False),
        "callee": proc("callee", [bins[CALLEE_PKG]], query),
        "member": proc("member", [bins["merged"]], query, {RUN_MEMBER: CALLEE}),
        "hop": hop,
        "caller_unmerged": proc("caller_unmerged", [bins[CALLER_PKG]], post),
        "caller_merged": proc("caller_merged", [bins["merged"]], post),
        "merged_idle_forked": proc("merged_idle_forked", [bins["merged"]], b"", FORKED, ok=False),
        "caller_merged_forked": proc("caller_merged_forked", [bins["merged"]], post, FORKED),
        # Through the warm-start launcher, as the merged image runs it: after
        # the first, each a fork of the server that start left.
        "merged_idle_warm": proc("merged_idle_warm", [bins["launcher"], bins["merged"]], b"", ok=False),
        "caller_merged_warm": proc("caller_merged_warm", [bins["launcher"], bins["merged"]], post),
    }
    return runs, replies


def same_replies(replies):
    """The callee answers alike as its binary, as the merged binary's member
    and through the gateway; the caller alike unmerged and merged. The
    mismatches, as text (empty when none)."""
    bad = []
    if not replies["callee"] or not replies["callee"] == replies["member"] == replies["hop"]:
        bad.append(f"callee {replies['callee'][:200]!r}, member {replies['member'][:200]!r}, hop {replies['hop'][:200]!r}")
    callers = ("caller_unmerged", "caller_merged", "caller_merged_forked", "caller_merged_warm")
    if not replies["caller_unmerged"] or len({replies[k] for k in callers}) != 1:
        bad.append(", ".join(f"{k} {replies[k][:200]!r}" for k in callers))
    return "; ".join(bad)


def per_call(bed, plan, args):
    """args.calls rounds of every kind; their summaries and derive()."""
    runs, replies = kinds(plan)
    names = list(runs)
    times = {k: [] for k in names}
    bed.fresh()
    load0, t0 = loadavg(), time.monotonic()
    for i in range(args.calls):
        for k in names[i % len(names):] + names[:i % len(names)]:
            times[k].append(runs[k]())
    bad = same_replies(replies)
    if bad:
        die(f"replies differ: {bad}")
    out = {"rounds": args.calls, "seconds": round(time.monotonic() - t0, 1), "loadavg": [load0, loadavg()],
           "kinds": {k: summary(v) for k, v in times.items()}}
    out["derived"] = derive({k: s["median_ms"] for k, s in out["kinds"].items()})
    log("per call (medians, ms): " + ", ".join(f"{k} {s['median_ms']:.2f}" for k, s in out["kinds"].items()))
    log("derived (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in out["derived"].items()))
    return out
