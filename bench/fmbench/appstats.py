"""The application bench's figures over rounds: every deployment runs its
whole ladder once per round, so each figure (highest sustained rate, p50,
gain, RSS) has one value per round; reported as their mean with a Student's
t interval and the range. Also which rates every deployment sustained in
every round (where deployments are compared), and which round's unmerged
scrape prices another round's projection (out of sample)."""

import math
import statistics

from .load import student_t

# The interval's two-sided confidence.
CONFIDENCE = 0.95


def interval(values, confidence=CONFIDENCE):
    """{n, mean, low, high, min, max} of the values that are not None: the
    mean with its Student's t interval (low/high None below 2 values), and
    the range. None without any value."""
    xs = [x for x in values if x is not None]
    if not xs:
        return None
    n, mean = len(xs), statistics.fmean(xs)
    out = {"n": n, "mean": mean, "low": None, "high": None, "min": min(xs), "max": max(xs), "confidence": confidence}
    if n >= 2:
        half = student_t(confidence, n - 1) * statistics.stdev(xs) / math.sqrt(n)
        out.update(low=mean - half, high=mean + half)
    return out


def rounds(res, kind, workload):
    """The rounds of one deployment under one workload: [{runs,
    max_sustained, lower_bound}], one per round; [] when it did not run."""
    d = res["deployments"].get(kind) or {}
    return (d.get(workload) or {}).get("rounds", [])


def sustained_at(rnd):
    """{rate: run} of the runs one round sustained."""
    return {r["rate"]: r for r in rnd["runs"] if r["sustained"]}


def steady_rates(res, workload, kinds):
    """The rates every deployment of `kinds` sustained in every one of its
    rounds (where they are compared), ascending."""
    sets = [set(sustained_at(rnd)) for k in kinds for rnd in rounds(res, k, workload)]
    return sorted(set.intersection(*sets)) if sets else []


def hop_source(k, available, n):
    """The round whose unmerged scrape prices round k's projection: the next
    round after k, cyclically, among `available` (the rounds with a scrape at
    that rate); never k itself, so the hop costs come from another run than
    the one predicted. None when no other round has one."""
    for step in range(1, n):
        j = (k + step) % n
        if j in available:
            return j
    return None


def throughput(res, kind, workload):
    """The highest sustained rate over rounds, and its ratio to unmerged's
    paired round by round (None for unmerged itself)."""
    mine = [r["max_sustained"] for r in rounds(res, kind, workload)]
    out = {"per_round": mine, "max_sustained": interval(mine), "ratio": None}
    if kind != "unmerged":
        base = [r["max_sustained"] for r in rounds(res, "unmerged", workload)]
        out["ratio"] = interval([m / b if m is not None and b else None for m, b in zip(mine, base)])
    return out


def mean_gains(res, kind, workload, rate, entry):
    """At one rate every round sustained: this deployment's mean latency per
    round, the gain (unmerged's mean − this one's, same round) per round,
    and the fewest requests either mean was taken over (per round). The
    mean, not the p50: `fmerge plan` projects expected latency, whose gain
    is the means' difference (a median of a chain is not the sum of its
    hops' medians)."""
    mine = [sustained_at(r)[rate]["entries"][entry] for r in rounds(res, kind, workload)]
    base = [sustained_at(r)[rate]["entries"][entry] for r in rounds(res, "unmerged", workload)]
    gains = [b["mean_ms"] - m["mean_ms"] if b.get("mean_ms") is not None and m.get("mean_ms") is not None else None
             for m, b in zip(mine, base)]
    return {"mean_ms": [m.get("mean_ms") for m in mine], "gain_ms": gains,
            "requests": [min(m.get("ok", 0), b.get("ok", 0)) for m, b in zip(mine, base)]}


def runs_at(res, kind, workload, rate):
    """The run at `rate` in each of a deployment's rounds (its ladder's run
    before any refining one; None in a round that did not run it)."""
    out = []
    for rnd in rounds(res, kind, workload):
        at = [r for r in rnd["runs"] if r["rate"] == rate]
        out.append(at[0] if at else None)
    return out


def common_rate(res, workload, kinds):
    """Where deployments are profiled side by side: the highest rate every
    one of `kinds` sustained in every round, else the lowest rate every
    round of every one ran; None when they share none."""
    steady = steady_rates(res, workload, kinds)
    if steady:
        return steady[-1]
    sets = [{r["rate"] for r in rnd["runs"]} for k in kinds for rnd in rounds(res, k, workload)]
    common = set.intersection(*sets) if sets else set()
    return min(common) if common else None
