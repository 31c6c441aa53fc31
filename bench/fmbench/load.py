"""Load: oha runs (and what their JSON says), the fixed-rate ladder, the
sustained verdict, the search for the highest sustained rate, and the load
phase of each testbed mode."""

import json
import math
import os
import statistics
import subprocess
import time

from .config import (AUTHOR, GROUPS, HOP_FUNCTION, NOISY_OTHERS_PCT, OHA_VERSION, REQUESTS, SLO_P99_MS, SUSTAIN_FRACTION,
                     child_env, critical_hops, die, hops, log)
from .processes import cpu_busy_ticks, loadavg, pinned


def ensure_oha(ctx):
    oha = ctx.tools / "bin" / "oha"
    if not oha.exists():
        log(f"installing oha {OHA_VERSION} into {ctx.tools} (once)")
        subprocess.run(
            ["cargo", "install", "oha", "--version", OHA_VERSION, "--locked", "--root", str(ctx.tools)], check=True, env=child_env()
        )
    return oha


def parse_oha(out, duration, rate=None, connections=64):
    """The figures of one oha run from its JSON output (--output-format json)."""
    j = json.loads(out)
    summary = j.get("summary", {})
    pct = j.get("latencyPercentiles", {})
    codes = j.get("statusCodeDistribution", {}) or {}
    errors = j.get("errorDistribution", {}) or {}
    ok = int(codes.get("200", 0))
    # Requests still in flight when the run ends are cut off by oha; they are
    # not failures (their absence shows in the achieved rate instead).
    aborted = sum(int(v) for k, v in errors.items() if "deadline" in k)
    total = sum(int(v) for v in codes.values()) + sum(int(v) for v in errors.values()) - aborted

    def ms(x):
        return None if x is None else x * 1000.0

    return {
        "offered_rps": rate,
        "connections": connections,
        "duration_s": duration,
        "achieved_rps": summary.get("requestsPerSec"),
        "ok_rps": ok / duration if duration else None,
        "requests": total,
        "aborted_at_end": aborted,
        "ok": ok,
        "success_rate": (ok / total) if total else 0.0,
        "status_codes": codes,
        "errors": errors,
        "mean_ms": ms(summary.get("average")),
        "p50_ms": ms(pct.get("p50")),
        "p90_ms": ms(pct.get("p90")),
        "p99_ms": ms(pct.get("p99")),
        "max_ms": ms(summary.get("slowest")),
        "mean_ms": ms(summary.get("average")),
    }


def cpu_figures(by_component, ok, total_cpu, wall, ncpu):
    """CPU time per successful request of each process (µs), how busy the
    machine was, and how much of it others (outside the bench) used."""
    ours = sum(by_component.values())
    return {
        "cpu_total_pct": 100.0 * total_cpu / (wall * ncpu),
        # CPU time each process spent per successful request, in µs.
        "cpu_us_per_request": {k: 1e6 * v / ok for k, v in sorted(by_component.items())} if ok else None,
        "cpu_others_pct": max(0.0, 100.0 * (total_cpu - ours) / (wall * ncpu)),
    }


def oha_argv(oha, url, body, duration, rate=None, connections=64):
    """One oha run's command line: POST `body` as JSON, fixed rate with
    latency correction when `rate` is given, closed loop otherwise."""
    argv = [str(oha), "--no-tui", "--output-format", "json", "-z", f"{duration}s", "-c", str(connections),
            "-m", "POST", "-H", "content-type: application/json", "-d", body]
    if rate is not None:
        argv += ["-q", str(rate), "--latency-correction"]
    return argv + [url]


class CpuWindow:
    """The CPU every process of the system under test spent between its
    start and `figures`, and how busy the machine was besides (the clients
    run in between are reaped children, counted as "oha (client)")."""

    def __init__(self, ctx):
        self.ctx = ctx
        ctx.procs.reaped_cpu()  # reset: count only the clients started from here
        self.busy0, self.own0, self.t0 = cpu_busy_ticks(), ctx.procs.own_ticks(), time.monotonic()

    def figures(self, ok):
        """cpu_figures for `ok` successful requests; call once the clients are gone."""
        hz, ncpu = os.sysconf("SC_CLK_TCK"), os.cpu_count() or 1
        wall = time.monotonic() - self.t0
        busy1, own1 = cpu_busy_ticks(), self.ctx.procs.own_ticks()
        by = {k: (own1.get(k, 0) - self.own0.get(k, 0)) / hz for k in set(own1) | set(self.own0)}
        by = {k: v for k, v in by.items() if v > 0}
        by["oha (client)"] = self.ctx.procs.reaped_cpu()
        return cpu_figures(by, ok, (busy1 - self.busy0) / hz, wall, ncpu)


def run_oha(ctx, oha, url, body, duration, rate=None, connections=64, tag="run", cpus=None):
    """One oha run (on `cpus` if given); returns its figures, and how busy the
    machine was besides us."""
    window = CpuWindow(ctx)
    p = subprocess.Popen(pinned(oha_argv(oha, url, body, duration, rate, connections), cpus), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=child_env())
    out, err = p.communicate(timeout=duration + 60)
    if p.returncode != 0:
        die(f"oha failed ({p.returncode}): {err.decode(errors='replace')[-2000:]}")
    (ctx.run_dir / "oha").mkdir(parents=True, exist_ok=True)
    (ctx.run_dir / "oha" / f"{tag}.json").write_bytes(out)
    r = parse_oha(out, duration, rate, connections)
    r.update(window.figures(r["ok"]))
    r["loadavg_after"] = loadavg()
    return r


def quieter(run, what):
    """run(attempt) once, and once more if processes outside the bench took
    more than NOISY_OTHERS_PCT of the machine meanwhile; the quieter run wins."""
    best = None
    for attempt in range(2):
        r = run(attempt)
        r["attempts"] = attempt + 1
        if best is None or r["cpu_others_pct"] < best["cpu_others_pct"]:
            best = r
        if r["cpu_others_pct"] <= NOISY_OTHERS_PCT:
            break
        log(f"  others took {r['cpu_others_pct']:.0f}% of the machine during {what}: once more")
    return best


def nice(x):
    """Rounds a rate to two significant digits."""
    if x <= 0:
        return 1
    e = 10 ** max(0, int(math.floor(math.log10(x))) - 1)
    return int(round(x / e) * e)


def ladder(caps, extra):
    """Common fixed rates for every deployment: up to past the unmerged
    capacity, and up to past each other deployment's capacity."""
    if extra:
        return sorted(set(extra))
    u = caps["unmerged"]
    cands = [0.3 * u, 0.6 * u, 0.9 * u, 1.2 * u] + [k * c for d, c in caps.items() if d != "unmerged" for k in (0.6, 0.9, 1.2)]
    out = []
    for r in sorted(nice(x) for x in cands):
        if out and r < out[-1] * 1.12:
            continue
        out.append(r)
    return out


def sustained(run, slo_p99_ms=SLO_P99_MS):
    return (run["success_rate"] >= 0.999 and run["achieved_rps"] is not None
            and run["achieved_rps"] >= SUSTAIN_FRACTION * run["offered_rps"]
            and run["p99_ms"] is not None and run["p99_ms"] <= slo_p99_ms)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def student_t(confidence, df):
    """Student's t quantile of a two-sided `confidence` interval with df
    degrees of freedom (the stdlib has no t distribution): exact for 1 and 2,
    else the normal quantile's expansion in 1/df to the third order (within
    1% of the table from 3 up, at 90% and 95%)."""
    p = 0.5 + confidence / 2
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = statistics.NormalDist().inv_cdf(p)
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def paired(pairs, confidence=0.90):
    """The ratio a ÷ b from runs taken in pairs (a and b side by side, so
    that the machine's drift cancels): the geometric mean of the pairs'
    ratios, with its two-sided `confidence` interval (Student's t over the
    logs; 90% two-sided is a one-sided 95% bound each way). None with fewer
    than 2 pairs."""
    logs = [math.log(a / b) for a, b in pairs if a and b]
    n = len(logs)
    if n < 2:
        return None
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = student_t(confidence, n - 1) * sd / math.sqrt(n)
    return {"n": n, "ratio": math.exp(mean), "low": math.exp(mean - half), "high": math.exp(mean + half),
            "confidence": confidence}


def function_tier_cpu(group, d, c, c_merged, mode):
    """CPU µs per request of what merging changes: the deployment's own
    processes plus the gateway hops between functions (the client, the
    ingress hop and Redis cost every deployment the same). Pinned, those hops
    are the internal nginx; shared, the one nginx's extra over the merged run."""
    own = GROUPS[group] if d == "unmerged" else [f"{GROUPS[group][0]}-{d}"]
    tier = sum(c.get(k, 0.0) for k in own)
    if mode == "pinned":
        return tier + c.get("nginx-internal", 0.0)
    if d == "unmerged":
        return tier + max(0.0, c.get("nginx", 0.0) - c_merged.get("nginx", 0.0))
    return tier


def busy(run, names, ncpus):
    """How busy the named processes kept their CPUs during a run, in %."""
    c = run["cpu_us_per_request"] or {}
    return 100.0 * sum(v for k, v in c.items() if k in names) * run["ok_rps"] / 1e6 / ncpus


def fixed_run(sysm, oha, group, d, rate, args, tag):
    def once(attempt):
        sysm.fresh()
        r = sysm.oha(oha, sysm.urls[(group, d)], json.dumps(REQUESTS[group]), args.duration, rate=rate,
                     connections=args.connections, tag=tag if attempt == 0 else f"{tag}-again")
        r["sustained"] = sustained(r)
        return r

    return quieter(once, f"{group} {d} @ {rate}/s")


def runs_key(key):
    """Where median_run keeps every run's `key`: `<figure>_runs_<unit>`
    (p50_runs_ms, ok_runs_rps)."""
    return key.replace("_", "_runs_", 1)


def median_run(runs, key="p50_ms"):
    """Of one deployment's runs at one rate, the one with the median `key` (a
    run without one counts as the highest), with every run's `key`, in the
    order run, under runs_key(key) when there are several."""
    r = sorted(runs, key=lambda r: float("inf") if r[key] is None else r[key])[len(runs) // 2]
    if len(runs) > 1:
        r = dict(r, **{runs_key(key): [x[key] for x in runs]})
    return r


def round_pairs(a, b, key):
    """(a, b) figures `key` of two deployments' median runs, round by round
    (one pair from results without each round's figures)."""
    each = runs_key(key)
    return list(zip(a[each], b[each])) if each in a and each in b else [(a[key], b[key])]


def in_turn(deps, k):
    """The deployments in the order of round k: it turns each round, since
    a run right after an overloaded one (unmerged, at high rates) starts on a
    machine still busy."""
    return deps[k % len(deps):] + deps[:k % len(deps)]


def describe(r):
    return (f"achieved {r['achieved_rps']:.0f}/s ok {100 * r['success_rate']:.1f}%, p50 {f1(r['p50_ms'], nd=2)} "
            f"p90 {f1(r['p90_ms'], nd=2)} p99 {f1(r['p99_ms'], nd=2)} max {f1(r['max_ms'])} ms"
            f"{'' if r['sustained'] else '  (NOT sustained)'}; others' CPU {r['cpu_others_pct']:.0f}%")


def refine(sysm, oha, group, d, runs, args):
    """Narrows down d's highest sustained rate between the ladder's steps:
    up to 3 steps of ×1.3 above the ladder if its top was sustained, then
    args.refine bisection steps. Returns the extra runs, the rate, and
    whether it is only a lower bound (no rate above it was tried)."""
    tried = {row["rate"]: row[d]["sustained"] for row in runs}
    extra = []
    extend = steps = 0
    while steps < args.refine:
        lo = max([r for r, ok in tried.items() if ok], default=None)
        hi = min([r for r, ok in tried.items() if not ok and (lo is None or r > lo)], default=None)
        if lo is None:
            break
        if hi is None:
            # Sustained even at the top of the ladder: go higher until latency
            # runs away (at most 3 steps of ×1.3).
            if extend >= 3:
                break
            extend += 1
            mid = nice(lo * 1.3)
        else:
            steps += 1
            mid = nice((lo + hi) / 2)
            if mid in tried or not (lo < mid < hi):
                break
        r = fixed_run(sysm, oha, group, d, mid, args, f"{group}-{d}-{mid}-refine")
        tried[mid] = r["sustained"]
        extra.append(r)
        log(f"{group} {d} @ {mid}/s (refining): {describe(r)}")
    best = max([r for r, ok in tried.items() if ok], default=None)
    return extra, best, best is not None and best == max(tried)


def ratio(a, b):
    return a / b if a is not None and b else None


def group_under_load(sysm, oha, group, args):
    deps = args.deployments
    reply, calls = sysm.check(group, deps)
    g = {"request": REQUESTS[group], "reply": reply, "gateway_calls_per_request": calls,
         "hops": hops(group), "critical_hops": critical_hops(group)}
    body = json.dumps(REQUESTS[group])
    # Warm every deployment: connections, pools, redis clients.
    for d in deps:
        sysm.oha(oha, sysm.urls[(group, d)], body, 2, rate=200, connections=16, tag=f"{group}-{d}-warmup")
    # Closed loop: the most each deployment serves, --closed-repeat rounds in
    # turn like the fixed rates, the run with the median throughput kept.
    closed = {d: [] for d in deps}
    for k in range(args.closed_repeat):
        for d in in_turn(deps, k):
            sysm.fresh()
            r = sysm.oha(oha, sysm.urls[(group, d)], body, args.closed_duration, connections=args.closed_connections,
                         tag=f"{group}-{d}-closed" + (f"-{k}" if k else ""))
            closed[d].append(r)
            log(f"{group} {d}: closed loop ({args.closed_connections} conns){f' ({k + 1} of {args.closed_repeat})' if args.closed_repeat > 1 else ''} "
                f"{r['ok_rps']:.0f} req/s ok, p50 {f1(r['p50_ms'], nd=2)} ms, p99 {f1(r['p99_ms'], nd=2)} ms, "
                f"others' CPU {r['cpu_others_pct']:.0f}%")
    cap = {d: median_run(closed[d], "ok_rps") for d in deps}
    if sysm.mode == "pinned":
        # Which side bounds the saturated throughput.
        outside = {"oha (client)", "redis", "nginx-ingress"}
        for d, r in cap.items():
            r["busy_pct"] = {"outside": busy(r, outside, len(sysm.outside)),
                             "function_tier": busy(r, set(r["cpu_us_per_request"] or {}) - outside, len(sysm.tier))}
    g["closed_loop"] = cap
    rates = ladder({d: cap[d]["ok_rps"] for d in deps}, args.rates.get(group))
    log(f"{group}: fixed rates {rates}")
    runs = []
    for rate in rates:
        row = {"rate": rate}
        tries = {d: [] for d in deps}
        for k in range(args.repeat):
            for d in in_turn(deps, k):
                tries[d].append(fixed_run(sysm, oha, group, d, rate, args, f"{group}-{d}-{rate}" + (f"-{k}" if k else "")))
                log(f"{group} {d} @ {rate}/s{f' ({k + 1} of {args.repeat})' if args.repeat > 1 else ''}: "
                    f"{describe(tries[d][-1])}")
        for d in deps:
            row[d] = median_run(tries[d])
        cpu = {d: row[d]["cpu_us_per_request"] for d in deps}
        if all(cpu.values()):
            row["cpu_us_per_request"] = {f"{d}_total": sum(cpu[d].values()) for d in deps}
            row["cpu_us_per_request"].update({f"{d}_function_tier": function_tier_cpu(group, d, cpu[d], cpu["merged"], sysm.mode)
                                              for d in deps})
        row["p50_ratio"] = ratio(row["merged"]["p50_ms"], row["unmerged"]["p50_ms"])
        row["p99_ratio"] = ratio(row["merged"]["p99_ms"], row["unmerged"]["p99_ms"])
        if "fused" in deps:
            row["fused_p50_ratio"] = ratio(row["merged"]["p50_ms"], row["fused"]["p50_ms"])  # merged ÷ fused
        runs.append(row)
    g["fixed_rate"] = runs
    # Without the ingress hop, at the lowest rate: how much of the latency is
    # the client's own trip through the gateway, common to all.
    low = rates[0]
    direct = {"rate": low}
    for d in deps:
        sysm.fresh()
        r = sysm.oha(oha, sysm.urls[(group, d + "-direct")], body, args.duration, rate=low,
                     connections=args.connections, tag=f"{group}-{d}-direct-{low}")
        r["sustained"] = sustained(r)
        direct[d] = r
        log(f"{group} {d}, no ingress hop @ {low}/s: {describe(r)}")
    direct["p50_ratio"] = ratio(direct["merged"]["p50_ms"], direct["unmerged"]["p50_ms"])
    g["direct"] = direct

    def both(a, b):
        return [row for row in runs if row[a]["sustained"] and row[b]["sustained"]]

    g["p50_ratio_where_both_sustained"] = [row["p50_ratio"] for row in both("unmerged", "merged")]
    g["p50_ratio_worst"] = max(g["p50_ratio_where_both_sustained"], default=None)
    cpu_rows = [row["cpu_us_per_request"] for row in both("unmerged", "merged") if "cpu_us_per_request" in row]
    if cpu_rows:
        g["cpu_total_ratio"] = median([c["unmerged_total"] / c["merged_total"] for c in cpu_rows])
        g["cpu_function_tier_ratio"] = median([c["unmerged_function_tier"] / c["merged_function_tier"] for c in cpu_rows])
    g["refine"], sus, g["max_sustained_lower_bound"] = {}, {}, {}
    for d in deps:
        g["refine"][d], sus[d], g["max_sustained_lower_bound"][d] = refine(sysm, oha, group, d, runs, args)
    g["max_sustained_rate"] = sus
    g["max_sustained_ratio"] = ratio(sus["merged"], sus["unmerged"])
    g["closed_loop_ratio"] = ratio(cap["merged"]["ok_rps"], cap["unmerged"]["ok_rps"])
    if "fused" in deps:
        g["fused_max_sustained_ratio"] = ratio(sus["merged"], sus["fused"])  # merged ÷ fused
        g["fused_closed_loop_ratio"] = ratio(cap["merged"]["ok_rps"], cap["fused"]["ok_rps"])
    g["hop_cost"] = hop_cost_from_group(g, sysm.mode)
    return g


def hop_cost_from_group(g, mode):
    """One RPC hop's full cost, from what merging saved at the lowest rate:
    latency over the hops on the critical path, CPU over all hops."""
    row = g["fixed_rate"][0]
    if not (row["unmerged"]["sustained"] and row["merged"]["sustained"]):
        return None
    out = {"rate": row["rate"],
           "latency_ms": (row["unmerged"]["p50_ms"] - row["merged"]["p50_ms"]) / g["critical_hops"]}
    c = row.get("cpu_us_per_request")
    if c:
        out["cpu_us"] = (c["unmerged_function_tier"] - c["merged_function_tier"]) / g["hops"]
    return out


def gateway_hop(sysm, oha, args):
    """One hop through the gateway alone: social-graph-get-followers called
    on its own port and through the internal gateway, at a low fixed rate."""
    body = json.dumps({"user_id": AUTHOR})
    out = {"rate": args.hop_rate, "function": HOP_FUNCTION}
    urls = {"direct": f"http://127.0.0.1:{sysm.ports[HOP_FUNCTION]}/", "gateway": f"{sysm.gateway}/function/{HOP_FUNCTION}"}
    for how, url in urls.items():
        sysm.fresh()
        r = sysm.oha(oha, url, body, args.duration, rate=args.hop_rate, connections=args.connections, tag=f"hop-{how}")
        r["sustained"] = sustained(r)
        out[how] = r
        log(f"one hop, {HOP_FUNCTION} {'through the gateway' if how == 'gateway' else 'on its port'} @ {args.hop_rate}/s: {describe(r)}")
    out["latency_ms"] = out["gateway"]["p50_ms"] - out["direct"]["p50_ms"]
    c = out["gateway"]["cpu_us_per_request"] or {}
    out["nginx_cpu_us"] = c.get(sysm.nginx["internal"][0])
    return out


def f1(x, unit="", nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}{unit}"
