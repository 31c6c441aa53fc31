"""The targets of results.md with their verdicts (goal, measured, met /
missed), and the readers of results.json they share with report.py."""

from .config import SLO_P99_MS, TARGETS
from .load import f1, paired, round_pairs


UNRESOLVED = "unresolved"


def status(ok):
    if ok == UNRESOLVED:
        return "**unresolved** (the interval spans the goal)"
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def against(est, goal, most):
    """The verdict on a paired estimate (load.paired) against a goal it must
    be at `most` (else at least): met when the whole interval is on the
    goal's side, missed when it is wholly beyond, else UNRESOLVED: the runs
    cannot tell, more rounds (--repeat) can."""
    if est is None:
        return None
    low, high = (est["low"], est["high"]) if most else (-est["high"], -est["low"])
    goal = goal if most else -goal
    return True if high <= goal else False if low > goal else UNRESOLVED


def estimate(est, unit="", detail=""):
    """A paired estimate as text, `detail` inside its parentheses."""
    return (f"{est['ratio']:.3f}{unit} ({100 * est['confidence']:.0f}% interval {est['low']:.3f}–{est['high']:.3f}{unit}, "
            f"{est['n']} pairs{detail})")


def fused_p50_pairs(G):
    """(merged, fused) p50s run side by side, round by round, at the rates
    where both deployments sustained the load."""
    return [p for row in G["fixed_rate"] if row["merged"]["sustained"] and row["fused"]["sustained"]
            for p in round_pairs(row["merged"], row["fused"], "p50_ms")]


def load_modes(lo):
    """{mode: results}; results.json files from before the two modes had one."""
    if not lo:
        return {}
    return lo["modes"] if "modes" in lo else {"shared": lo}


def by_jobs(x):
    """{N: measurement} of a merge step; older results had one, at the default."""
    if not x:
        return {}
    return {"default": x} if "wall_s" in x else x


CONTROL = "n/a: A/A control"


def target_rows(R):
    t = []
    modes = load_modes(R.get("load"))
    # In an A/A run (--control) "merged" is the fused binary: its load
    # figures are the testbed's noise, no verdict on merging.
    judge = (lambda ok: CONTROL) if R.get("control") else status
    for mode, M in modes.items():
        for g in ("pair", "chain"):
            if g not in M:
                continue
            G = M[g]
            key = f"{g}_p50_ratio"
            v = G["p50_ratio_worst"]
            rs = ", ".join(f"{x:.2f}@{row['rate']}/s" for row in G["fixed_rate"]
                           if row["unmerged"]["sustained"] and row["merged"]["sustained"] for x in [row["p50_ratio"]])
            d = G.get("direct") or {}
            nd_ = f"; without the ingress hop {d['p50_ratio']:.2f}@{d['rate']}/s" if d.get("p50_ratio") else ""
            t.append((f"{g} p50 merged ÷ unmerged, same rate ({mode})", f"≤ {TARGETS[key]}",
                      f"{f1(v, nd=2)} (worst of {rs or 'no rate both sustained'}{nd_})", judge(None if v is None else v <= TARGETS[key])))
        for g in ("pair", "chain"):
            if g not in M:
                continue
            G = M[g]
            key = f"{g}_throughput_ratio"
            c, v = G["closed_loop"], G["max_sustained_ratio"]
            t.append((f"{g} max sustainable throughput merged ÷ unmerged ({mode})", f"≥ {TARGETS[key]}×",
                      f"{f1(v, '×', 2)}: {sus_rate(G, 'merged')} vs {sus_rate(G, 'unmerged')} req/s at p99 ≤ {SLO_P99_MS:.0f} ms "
                      f"(saturated closed loop: {f1(G['closed_loop_ratio'], '×', 2)}, {c['merged']['ok_rps']:.0f} vs {c['unmerged']['ok_rps']:.0f} req/s)",
                      judge(None if v is None else v >= TARGETS[key])))
        for g in ("pair", "chain"):
            if g not in M or "fused" not in M[g]["closed_loop"]:
                continue
            # Judged on the pairs of runs taken side by side, with an
            # interval: in an A/A run (--control) the rates' median runs of
            # identical binaries read further apart than the difference the
            # goal is about (bench/README.md, "pairs of runs").
            G = M[g]
            est = paired(fused_p50_pairs(G))
            both = [row for row in G["fixed_rate"] if row["merged"]["sustained"] and row["fused"]["sustained"]]
            rs = ", ".join(f"{row['fused_p50_ratio']:.2f}@{row['rate']}/s" for row in both)
            over = f" over {len(both)} rates; each rate's median run: {rs}" if both else ""
            t.append((f"{g} p50 merged ÷ hand-fused, same rate ({mode})", f"≤ {TARGETS['fused_p50_ratio']}",
                      estimate(est, detail=over) if est else "n/a", judge(against(est, TARGETS["fused_p50_ratio"], most=True))))
            c = G["closed_loop"]
            est = paired(round_pairs(c["merged"], c["fused"], "ok_rps"))
            t.append((f"{g} throughput merged ÷ hand-fused, saturated closed loop ({mode})", f"≥ {TARGETS['fused_throughput_ratio']}×",
                      (estimate(est, "×") if est else f"{f1(G['fused_closed_loop_ratio'], '×', 2)} (one run each: an interval needs --repeat ≥ 2)")
                      + f"; {c['merged']['ok_rps']:.0f} vs {c['fused']['ok_rps']:.0f} req/s{' (median runs)' if est else ''}; highest rate sustained at p99 ≤ "
                      f"{SLO_P99_MS:.0f} ms {sus_rate(G, 'merged')} vs {sus_rate(G, 'fused')} req/s "
                      f"({f1(G['fused_max_sustained_ratio'], '×', 2)}, one search, no interval)",
                      judge(against(est, TARGETS["fused_throughput_ratio"], most=False))))
    for mode, W in watchdog_modes(R).items():
        v, c = W["cpu_ratio"], W["cpu_us"]
        t.append((f"CPU per request, of-watchdog + {W['function']} ÷ our runtime serving it directly ({mode})",
                  f"> {TARGETS['watchdog_cpu_ratio']:g}×",
                  f"{f1(v, '×', 2)} ({f1(c['watchdog_total'], ' µs', 0)} = of-watchdog {f1(c['of_watchdog'], nd=0)} + function "
                  f"{f1(c['function_behind'], nd=0)}, vs {f1(c['direct'], ' µs', 0)} at {W['rate']} req/s; p50 "
                  f"{f1(W['p50_ratio'], '×', 2)})",
                  status(None if v is None else v > TARGETS["watchdog_cpu_ratio"])))
    di = R.get("dispatch")
    if di:
        v = di["overhead_vs_direct_async_fn_ns"]
        b = di["benches"]
        t.append(("in-process dispatch overhead per call", "≤ 1 µs",
                  f"{v:.0f} ns (invoke of a merged no-op {max(b['invoke_merged_first_of_8']['mean_ns'], b['invoke_merged_last_of_8']['mean_ns']):.0f} ns "
                  f"− direct call {b['direct_async_fn']['mean_ns']:.0f} ns; HTTP on loopback {b['invoke_http_loopback']['mean_ns'] / 1000:.1f} µs)",
                  status(v <= TARGETS["dispatch_overhead_ns"])))
    t += build_target_rows(R.get("builds") or {})
    return t


def build_target_rows(bu):
    """The merge step's goals, judged at -j <cores> (the last N measured), with -j 1 beside."""
    t = []

    def judged(steps, what, unit, nd):
        runs = by_jobs(steps)
        if not runs:
            return None, ""
        last = list(runs)[-1]
        shown = [f"{runs[n][what]:.{nd}f} {unit}" + (f" at N = {n}" if n != "default" else "")
                 + (" (waited for a cargo lock)" if runs[n].get("waited_for_cargo_lock") else "") for n in reversed(list(runs))]
        return runs[last][what], ", ".join(shown)

    for step, label in (("merge_step", "merge step (cargo fresh)"), ("warm_remerge", "warm re-merge (one function touched)")):
        for g in ("pair", "chain"):
            if g in bu and step in bu[g]:
                key = f"{g}_{step}_s"
                v, shown = judged(bu[g][step], "wall_s", "s", 1)
                t.append((f"{label}, {g}: wall", f"≤ {TARGETS[key]:.0f} s", shown, status(None if v is None else v <= TARGETS[key])))
    for g in ("pair", "chain"):
        if g in bu and "merge_step" in bu[g]:
            # The larger of the merge step and the warm re-merge, per N.
            rss = {}
            for step in ("merge_step", "warm_remerge"):
                for n, m in by_jobs(bu[g].get(step)).items():
                    rss[n] = max(rss.get(n, 0), m["peak_rss_mib"])
            last = list(rss)[-1]
            shown = ", ".join(f"{rss[n]:.0f} MiB" + (f" at N = {n}" if n != "default" else "") for n in reversed(list(rss)))
            t.append((f"merge peak RSS, {g} (merge step and warm re-merge)", f"≤ {TARGETS['merge_rss_mib']:.0f} MiB", shown,
                      status(rss[last] <= TARGETS["merge_rss_mib"])))
    for g in ("pair", "chain"):
        if g in bu and "cold_ratio" in bu[g]:
            r = bu[g]
            cpu = (f"; CPU time (user+sys) {r['cold_cpu_ratio']:.2f}× ({r['cold_fmerge']['cpu_s']:.0f} vs {r['cold_cargo']['cpu_s']:.0f} s)"
                   if r.get("cold_cpu_ratio") else "")
            t.append((f"cold fmerge build ÷ cargo build, {g}", "≤ 1.3×",
                      f"{r['cold_ratio']:.2f}× wall ({r['cold_fmerge']['wall_s']:.0f} s vs {r['cold_cargo']['wall_s']:.0f} s){cpu}",
                      status(r["cold_ratio"] <= TARGETS["cold_build_ratio"])))
    return t


def sus_rate(G, d):
    """The highest sustained rate, marked when nothing above it failed."""
    rate = G["max_sustained_rate"][d]
    if rate is None:
        return "none"
    return ("≥ " if (G.get("max_sustained_lower_bound") or {}).get(d) else "") + str(rate)


def watchdog_modes(R):
    """{mode: of-watchdog comparison}: from the load runs, or from an
    --only watchdog run."""
    out = {m: M["watchdog"] for m, M in load_modes(R.get("load")).items() if M.get("watchdog")}
    out.update(R.get("watchdog") or {})
    return out
