"""`--only process`'s verdicts (the targets of issue 49 against what the
worker measured) and its section of the results."""

from .config import SLO_P99_MS, SUSTAIN_FRACTION, TARGETS
from .load import f1, paired, ratio, round_pairs
from .targets import UNRESOLVED, estimate, status


def throughput_verdict(rates, lower, goal):
    """merged ÷ unmerged highest sustained rate against `goal` (at least).
    A rate that was the highest tried is only a lower bound: a merged lower
    bound can only raise the ratio, an unmerged one only lower it."""
    r = ratio(rates.get("merged"), rates.get("unmerged"))
    if r is None:
        return r, None
    if r >= goal:
        return r, UNRESOLVED if lower.get("unmerged") else True
    return r, UNRESOLVED if lower.get("merged") else False


def both_sustained(rows):
    """The fixed-rate rows both deployments sustained, those the p50 verdict
    is about."""
    return [row for row in rows if row["unmerged"]["sustained"] and row["merged"]["sustained"]]


def verdict_row(load):
    """The fixed-rate row of the p50 verdict: the worst ratio among the rates
    both deployments sustained, or None."""
    return max(both_sustained(load["fixed_rate"]), key=lambda r: r["p50_ratio"], default=None)


def load_verdicts(load, goal_p50, goal_tp):
    """The load runs' verdicts: p50 merged ÷ unmerged at the worst rate both
    sustained (at most `goal_p50`, verdict_row), highest sustained rate
    merged ÷ unmerged (at least `goal_tp`)."""
    both = both_sustained(load["fixed_rate"])
    at = verdict_row(load)
    worst = None if at is None else at["p50_ratio"]
    # Every round's pair at every rate both sustained (its median run), as
    # bench/run judges merged ÷ fused: a geometric mean with its interval.
    est = paired([p for row in both for p in round_pairs(row["merged"], row["unmerged"], "p50_ms")])
    tp, tp_ok = throughput_verdict(load["max_sustained_rate"], load["max_sustained_lower_bound"], goal_tp)
    return {
        "p50_ratio": {"goal": goal_p50, "value": worst, "rates": [row["rate"] for row in both], "paired": est,
                      "ok": None if worst is None else worst <= goal_p50},
        "throughput_ratio": {"goal": goal_tp, "value": tp, "ok": tp_ok},
    }


def verdict(res):
    """The figures the targets are about, each with met / missed / n/a."""
    # Each path timed call by call (process.direct_per_call), the member's
    # own little work included: the whole call is held to the target.
    direct = res["per_call"]["direct"]
    over, goal_call = direct["forked_us"] / 1e3, TARGETS["process_call_over_work_ms"]
    inside, goal_inside = direct["in_process_us"] / 1e3, TARGETS["inprocess_call_over_work_ms"]
    return {"verdicts": {
        **load_verdicts(res["load"], TARGETS["process_pair_p50_ratio"], TARGETS["process_pair_throughput_ratio"]),
        "call_over_work_ms": {"goal": goal_call, "value": over, "ok": over <= goal_call},
        "inprocess_call_over_work_ms": {"goal": goal_inside, "value": inside, "ok": inside <= goal_inside},
    }}


def ms(x, nd=2):
    return f1(x, nd=nd)


def render_process(L, R):
    P = R.get("process")
    if not P:
        return
    V, D, K = P["verdicts"], P["per_call"]["derived"], P["per_call"]["kinds"]
    lo, b = P["load"], P["build"]
    L.append("### Watchdog-process functions, merged")
    L.append("")
    L.append("The pair write-home-timeline → social-graph-get-followers in the watchdog-process form (`bench/process-pair`: "
             "`fn main()` per request, the call by libcurl to the gateway's written-in address), in a network and mount "
             "namespace of the bench's own: nginx as the gateway on 8080, Redis with a password on 6379, the password a "
             "secret file. **unmerged**: each function behind an of-watchdog 0.11.6 in streaming mode (its metrics port set); "
             "**merged**: `fmerge build WriteHomeTimeline SocialGraphGetFollowers` as `fprocess` of the real of-watchdog, "
             "its call answered by the in-pod stand-in, which runs the callee on its own thread in the caller's process "
             "(fmerge's build found nothing in its code that needs a process). Every request execs two processes "
             "unmerged, one merged.")
    L.append("")
    c = P["check"]
    L.append(f"Both answer `{c['unmerged']['reply']}`; gateway calls per request: unmerged "
             f"{c['unmerged']['gateway_calls_per_request']:g}, merged {c['merged']['gateway_calls_per_request']:g}.")
    L.append("")
    L.append("| target | goal | measured | |")
    L.append("| --- | --- | --- | --- |")
    v = V["p50_ratio"]
    L.append(f"| merged ÷ unmerged p50, worst rate both sustained ({', '.join(map(str, v['rates'])) or 'none'} req/s) | "
             f"≤ {v['goal']:g}× | {f1(v['value'], '×', 2)}"
             + (f"; over every round's pair at those rates {estimate(v['paired'], '×')}" if v.get("paired") else "")
             + f" | {status(v['ok'])} |")
    v = V["throughput_ratio"]
    rates, lower = lo["max_sustained_rate"], lo["max_sustained_lower_bound"]
    shown = {d: f"{rates[d]}{'+' if lower.get(d) else ''}" for d in rates}
    L.append(f"| merged ÷ unmerged highest sustained rate ({shown['merged']} ÷ {shown['unmerged']} req/s) | ≥ {v['goal']:g}× | "
             f"{f1(v['value'], '×', 2)} | {status(v['ok'])} |")
    dr = P["per_call"]["direct"]["runs"]
    each = lambda k, scale, nd: ", ".join(f"{r['us'] / scale:.{nd}f}" for r in dr[k])
    v = V.get("inprocess_call_over_work_ms")
    if v:
        L.append(f"| per call, in the caller's process, over the callee's own work | ≤ {1e3 * v['goal']:g} µs | "
                 f"{1e3 * v['value']:.0f} µs, the whole call (median of {len(dr['inner'])} runs: {each('inner', 1, 0)}) "
                 f"| {status(v['ok'])} |")
    v = V["call_over_work_ms"]
    L.append(f"| per call, in a process of its own (forked), over the callee's own work | ≤ {v['goal']:g} ms | "
             f"{ms(v['value'])} ms, the whole call (median of {len(dr['echo'])} runs: {each('echo', 1e3, 2)}) "
             f"| {status(v['ok'])} |")
    L.append("")
    a = P["args"]
    rounds = a.get("repeat", 1)
    L.append(f"oha, latency-corrected, {a['duration']} s per run, {a['connections']} connections, "
             + (f"{rounds} rounds of runs per deployment and rate (in turn, the order turning each round; the run with the "
                "median p50 shown, ✗ if it was not sustained)" if rounds > 1 else
                "one run per deployment and rate (in turn, the order turning each rate)")
             + "; the refining runs one each; times in ms; \"sustained\": "
             f"≥ {100 * SUSTAIN_FRACTION:.0f}% of the offered rate, ≥ 99.9% 200s, p99 ≤ {SLO_P99_MS:.0f} ms. CPU: µs per "
             "request of the deployment's of-watchdogs and every process they started.")
    L.append("")
    L.append("| req/s | unmerged p50 | p99 | CPU | merged p50 | p99 | CPU | merged ÷ unmerged p50 |")
    L.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in sorted(lo["fixed_rate"] + refine_rows(lo), key=lambda r: r["rate"]):
        if "unmerged" in row and "merged" in row and "p50_ratio" not in row:
            row = dict(row, p50_ratio=ratio(row["merged"]["p50_ms"], row["unmerged"]["p50_ms"]))
        cells = []
        for d in ("unmerged", "merged"):
            r = row.get(d)
            if r is None:
                cells += ["", "", ""]
                continue
            mark = "" if r["sustained"] else " ✗"
            cells += [ms(r["p50_ms"]) + mark, ms(r["p99_ms"]), f1(r.get("tier_cpu_us"), nd=0)]
        L.append(f"| {row['rate']} | " + " | ".join(cells) + f" | {f1(row['p50_ratio'], '×', 2) if 'p50_ratio' in row else ''} |")
    L.append("")
    cl = lo["closed_loop"]
    L.append(f"✗: not sustained. Closed loop ({a['closed_connections']} connections, {a['closed_duration']} s): unmerged "
             f"{cl['unmerged']['ok_rps']:.0f} req/s (p50 {ms(cl['unmerged']['p50_ms'], 1)}), merged {cl['merged']['ok_rps']:.0f} "
             f"req/s (p50 {ms(cl['merged']['p50_ms'], 1)}). Highest sustained rate (+: the highest tried): unmerged "
             f"{shown['unmerged']}, merged {shown['merged']} req/s.")
    L.append("")
    d = dr["inner"][0]
    L.append(f"Per call, timed call by call: the shim's own measurement (`functions/shim/tests/percall.rs`, run by the "
             f"bench before the worker, outside its namespace): a program with the shim linked in, as a merged binary has "
             f"it, calls a member that does almost nothing ({d['calls']} calls a run, one at a time, a new connection each, "
             "from its main thread, as the caller's libcurl calls) through the gateway's address: `inner` runs in the "
             "program's process, on the calling thread; `echo` in a process forked by the zygote. Each figure is the whole "
             "call as the client sees it, the member's work included; load average at each run: "
             + ", ".join(r["load"] for r in dr["inner"] + dr["echo"]) + ".")
    L.append("")
    pc = P["per_call"]
    la = pc.get("loadavg")
    L.append(f"Per call, {pc['rounds']} rounds ({pc['seconds']:.0f} s"
             + (f", load average {la[0][0]:.2f} before and {la[1][0]:.2f} after" if la else "")
             + "), every kind once per round (the order turning), one at a time from the "
             "bench's Python driver (subprocess / http.client: its own cost is in every figure, see `/bin/true`); ms:")
    L.append("")
    L.append("| run | what it includes | median | p10 | p90 |")
    L.append("| --- | --- | ---: | ---: | ---: |")
    for k, what in KINDS:
        s = K.get(k)
        if s is None:
            continue
        L.append(f"| {k} | {what} | {ms(s['median_ms'])} | {ms(s['p10_ms'])} | {ms(s['p90_ms'])} |")
    L.append("")
    L.append(f"Derived from the medians: the callee's own work {ms(D['callee_work_ms'])} ms (callee − callee_idle); "
             f"the unmerged hop {ms(D['unmerged_hop_ms'])} ms, {ms(D['unmerged_hop_over_work_ms'])} ms over that work "
             f"(gateway + of-watchdog + the callee's process start); merging saves {ms(D['saved_per_call_ms'])} ms per call "
             f"(caller_unmerged − caller_merged); the merged path (stand-in + the callee on its thread + the work) "
             f"{ms(D['merged_path_ms'])} ms = hop − saved − (merged_idle − caller_idle), {ms(D['merged_path_over_work_ms'])} ms "
             f"over the work"
             + (f"; forked instead (stand-in + a process forked by the zygote + the work) {ms(D['forked_path_ms'])} ms, "
                f"{ms(D['forked_path_over_work_ms'])} ms over the work (the same with the _forked runs)"
                if "forked_path_ms" in D else "")
             + f". The member's process alone: {ms(D['member_process_over_work_ms'])} ms over the work, "
             f"{ms(D['merged_start_over_callee_start_ms'])} ms more than the callee's own binary."
             + (f" A warm start (through `fmerge-warm`, as the image runs the binary) saves "
                f"{ms(D['warm_start_saved_ms'])} ms idle (merged_idle − merged_idle_warm) and "
                f"{ms(D['warm_request_saved_ms'])} ms with the request (caller_merged − caller_merged_warm)."
                if "warm_start_saved_ms" in D else ""))
    L.append("")
    sz = b["sizes_bytes"]
    L.append(f"Shared libraries the merged binary loads (`ldd`, the loader and the vDSO left out): {b['shared_libraries']}, "
             "libcurl's and what it links (the functions' own binaries link the same). "
             f"Binaries: merged {sz['merged'] / 2**20:.2f} MiB, WriteHomeTimeline {sz['WriteHomeTimeline'] / 2**20:.2f} MiB, "
             f"SocialGraphGetFollowers {sz['SocialGraphGetFollowers'] / 2**20:.2f} MiB (not stripped). Merge step "
             f"(`--force`, cargo fresh, one run): {b['merge_step_s']:.2f} s.")
    L.append("")


KINDS = [
    ("true", "`/bin/true`: fork + exec + exit, and the driver"),
    ("rust_idle", "`fn main() {}` built with `rustc -O`: a Rust program that links only libc"),
    ("callee_idle", "SocialGraphGetFollowers, stdin at EOF: start-up (loader, libcurl, Rust) + a panic"),
    ("caller_idle", "WriteHomeTimeline, the same"),
    ("merged_idle", "the merged binary, the same (the shim's constructor too)"),
    ("callee", "SocialGraphGetFollowers with the call's body: start-up + its work"),
    ("member", "the merged binary as that member by exec (`FMERGE_RUN_MEMBER`): the stand-in's fallback where its zygote cannot fork"),
    ("hop", "the call through nginx + of-watchdog to the callee, a new connection each"),
    ("caller_unmerged", "WriteHomeTimeline run directly, its call through the gateway"),
    ("caller_merged", "the merged binary run directly, its call through the stand-in (the callee in-process)"),
    ("merged_idle_forked", "merged_idle with the callee's `exec_timeout` (5 s) under the caller's (30 s): the zygote forked at start"),
    ("caller_merged_forked", "caller_merged, the same: the callee in a process forked by the zygote"),
    ("merged_idle_warm", "merged_idle through the warm-start launcher (`fmerge-warm`), as the image runs it: a fork of its server"),
    ("caller_merged_warm", "caller_merged, the same"),
]


def refine_rows(lo):
    """The refining runs as rows: one per rate, with each deployment refined
    there (a rate of the ladder keeps its own row)."""
    ladder = {row["rate"] for row in lo["fixed_rate"]}
    rows = {}
    for d, runs in lo["refine"].items():
        for r in runs:
            if r["offered_rps"] not in ladder:
                rows.setdefault(r["offered_rps"], {"rate": r["offered_rps"]})[d] = r
    return list(rows.values())
