"""results.md from results.json: the targets with their verdicts (goal,
measured, met / missed), the tables of every phase, and the machine."""

import json
import os
import platform
import subprocess

from .appreport import render_app
from .config import DEPLOYMENTS, GROUPS, HOP_FUNCTION, NOISY_OTHERS_PCT, SLO_P99_MS, SUSTAIN_FRACTION, critical_hops, hops
from .load import f1, ratio
from .httpmode import render_httpmode
from .processreport import render_process
from .userloop import render_loop
# status and target_rows: also what the verdict tests import from here.
from .targets import by_jobs, load_modes, status, sus_rate, target_rows, watchdog_modes



def machine(ctx):
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) / 1024 / 1024
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break

    def out(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, cwd=ctx.root).stdout.strip() or None
        except OSError:
            return None

    rev = out(["git", "rev-parse", "--short=12", "HEAD"])
    dirty = bool(out(["git", "status", "--porcelain", "--untracked-files=no"]))
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "memory_gib": round(mem, 1),
        "kernel": platform.release(),
        "os": out(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
        "rustc": out(["rustc", "--version"]),
        "oha": out([str(ctx.tools / "bin" / "oha"), "--version"]),
        "nginx": (subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip() or None),
        "redis": out(["redis-server", "--version"]),
        "git_rev": rev,
        "git_dirty": dirty,
    }


def table_head(L, title, header, rule):
    """A section's title, then its markdown table's header row and alignment row."""
    L += [title, "", header, rule]


MODE_TITLES = {
    "shared": "shared testbed: one nginx for ingress and function calls, nothing pinned",
    "pinned": "pinned testbed: outside world and function tier on separate CPUs",
}


def mode_intro(mode, M):
    if mode == "shared":
        return ("Client (oha), nginx, Redis and the functions share every core; one nginx is both the client's way in "
                "and the gateway that carries calls between unmerged functions.")
    c = M["cpus"]
    return (f"`taskset`: the outside world (oha, the ingress nginx, Redis) on CPU {','.join(map(str, c['outside']))}, the function "
            f"tier (every function process, the merged and the fused binaries, and a second nginx as the internal gateway that "
            f"carries calls between unmerged functions) on CPU {','.join(map(str, c['function_tier']))}, so that what merging "
            "does not change (client, ingress hop, Redis) does not compete with what it does for the same core.")


def render_group(L, lo, mode, M, g):
    G = M[g]
    deps = [d for d in DEPLOYMENTS if d in G["closed_loop"]]
    fused = "fused" in deps
    L.append(f"**{g}, {mode}** ({GROUPS[g][0]} with {', '.join(GROUPS[g][1:])}); request `{json.dumps(G['request'])}`")
    L.append("")
    L.append("| offered req/s | deployment | achieved req/s | p50 | p90 | p99 | max | sustained | others' CPU | p50 ÷ unmerged |"
             + (" p50 merged ÷ fused |" if fused else ""))
    L.append("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |" + (" ---: |" if fused else ""))
    for row in G["fixed_rate"]:
        for d in deps:
            r = row[d]
            vs_u = f1(ratio(r["p50_ms"], row["unmerged"]["p50_ms"]), nd=2) if d != "unmerged" else ""
            vs_f = (f" {f1(row.get('fused_p50_ratio'), nd=2)} |" if d == "merged" else " |") if fused else ""
            p50 = f1(r["p50_ms"], nd=2)
            if "p50_runs_ms" in r:
                p50 += " (of " + ", ".join(f1(x, nd=2) for x in r["p50_runs_ms"]) + ")"
            L.append(f"| {row['rate']} | {d} | {r['achieved_rps']:.0f} | {p50} | {f1(r['p90_ms'], nd=2)} | "
                     f"{f1(r['p99_ms'], nd=2)} | {f1(r['max_ms'])} | {'yes' if r['sustained'] else 'no'} | {r['cpu_others_pct']:.0f}% | "
                     f"{vs_u} |{vs_f}")
    both = [row for row in G["fixed_rate"] if all(row[d]["sustained"] for d in deps)]
    if G["fixed_rate"]:
        # The highest rate every deployment sustained, else the lowest.
        row = both[-1] if both else G["fixed_rate"][0]
        cs = {d: row[d]["cpu_us_per_request"] or {} for d in deps}
        first = ("oha (client)", "nginx", "nginx-ingress", "nginx-internal", "redis")
        keys = sorted(set().union(*cs.values()), key=lambda k: (k not in first, first.index(k) if k in first else 0, k))
        tier = row.get("cpu_us_per_request") or {}
        L.append("")
        L.append(f"CPU time per request by process at {row['rate']} req/s"
                 + ("" if both else " (no rate was sustained by every deployment: the lowest)")
                 + " (µs; from /proc, so ±10 ms per run over all requests). "
                 "Function tier: the deployment's own processes plus the gateway hops between functions ("
                 + ("the internal nginx" if mode == "pinned" else "the nginx's extra over the merged run") + "):")
        L.append("")
        L.append("| process | " + " | ".join(keys) + " | total | function tier |")
        L.append("| --- | " + " | ".join("---:" for _ in keys) + " | ---: | ---: |")
        for d, c in cs.items():
            L.append(f"| {d} | " + " | ".join(f"{c[k]:.0f}" if k in c else "" for k in keys)
                     + f" | {sum(c.values()):.0f} | {f1(tier.get(d + '_function_tier'), nd=0)} |")
        if G.get("cpu_total_ratio"):
            L.append("")
            L.append(f"CPU per request, unmerged ÷ merged (median over the rates both sustained): whole testbed "
                     f"{G['cpu_total_ratio']:.2f}×; function tier alone {G['cpu_function_tier_ratio']:.2f}×.")
    ref = [(d, r) for d in deps for r in G.get("refine", {}).get(d, [])]
    if ref:
        L.append("")
        L.append("Narrowing down the highest sustained rate: " + "; ".join(
            f"{d} @ {r['offered_rps']}/s: achieved {r['achieved_rps']:.0f}, p50 {f1(r['p50_ms'], nd=2)}, p99 {f1(r['p99_ms'], nd=2)} ms, "
            f"{'sustained' if r['sustained'] else 'not sustained'}" for d, r in ref) + ".")
    d = G.get("direct")
    if d:
        L.append("")
        L.append(f"Without the ingress hop (the client calls the caller's port) at {d['rate']} req/s, p50 / p99: "
                 + ", ".join(f"{x} {f1(d[x]['p50_ms'], nd=2)} / {f1(d[x]['p99_ms'], nd=2)} ms" for x in deps if x in d)
                 + f" (merged ÷ unmerged p50 {f1(d.get('p50_ratio'), nd=2)}).")
    L.append("")
    L.append("Highest sustained rate: " + ", ".join(f"{x} {sus_rate(G, x)}/s" for x in deps)
             + (" (≥: no higher rate was tried)" if any((G.get("max_sustained_lower_bound") or {}).values()) else "") + ".")
    c = G["closed_loop"]
    L.append("")
    L.append(f"Closed loop ({lo['connections_closed_loop']} connections): "
             + ", ".join(f"{x} {c[x]['ok_rps']:.0f} req/s (p50 {f1(c[x]['p50_ms'], nd=2)} ms"
                         + (f"; outside CPU {c[x]['busy_pct']['outside']:.0f}% busy, function tier {c[x]['busy_pct']['function_tier']:.0f}%"
                            if c[x].get("busy_pct") else "") + ")" for x in deps)
             + f": merged ÷ unmerged {f1(G['closed_loop_ratio'], '×', 2)}"
             + (f", merged ÷ fused {f1(G.get('fused_closed_loop_ratio'), '×', 2)}" if fused else "") + ".")
    calls = G.get("gateway_calls_per_request")
    if calls:
        L.append("")
        L.append("Calls through the gateway per request (its request counter over 10 requests): "
                 + ", ".join(f"{x} {calls[x]:g}" for x in deps) + f"; the call tree says {G['hops']} unmerged.")
    L.append("")


def render_hops(L, modes):
    """The per-hop section: hops removed, one hop measured, and the projection."""
    groups = [g for g in ("pair", "chain") if any(g in M for M in modes.values())]
    if not groups:
        return
    names = list(modes)
    table_head(L, "### Cost of one RPC hop",
               "| group | calls between functions per request (= hops a merge removes) | of them on the critical path | measured through the gateway, unmerged |",
               "| --- | ---: | ---: | --- |")
    for g in groups:
        seen = ", ".join(f"{modes[m][g]['gateway_calls_per_request']['unmerged']:g} ({m})" for m in names
                         if g in modes[m] and modes[m][g].get("gateway_calls_per_request"))
        L.append(f"| {g} | {hops(g)} | {critical_hops(g)} | {seen or 'n/a'} |")
    L.append("")
    L.append("(From the call tree, `CALLS` in `bench/fmbench/config.py`, checked against the gateway's request counter"
             + ("; compose-post awaits unique-id ∥ text-service, then store-post ∥ write-home-timeline, and text-service "
                f"awaits url-shorten ∥ user-mention, so a request waits for {critical_hops('chain')} of the chain's "
                f"{hops('chain')} hops one after the other" if "chain" in groups else "") + ".)")
    L.append("")
    L.append("| per hop | " + " | ".join(names) + " |")
    L.append("| --- | " + " | ".join("---:" for _ in names) + " |")

    def cell(m, fn):
        try:
            return fn(modes[m])
        except (KeyError, TypeError):
            return "n/a"

    hop = {m: modes[m].get("gateway_hop") for m in names}
    rate = next((h["rate"] for h in hop.values() if h), None)
    L.append(f"| gateway alone, latency: p50 of {HOP_FUNCTION} through the gateway − on its own port, at {rate} req/s | "
             + " | ".join(cell(m, lambda M: f"{M['gateway_hop']['latency_ms'] * 1000:.0f} µs "
                                            f"({M['gateway_hop']['gateway']['p50_ms']:.2f} − {M['gateway_hop']['direct']['p50_ms']:.2f} ms)")
                          for m in names) + " |")
    L.append("| gateway alone, CPU: nginx per request in that run | "
             + " | ".join(cell(m, lambda M: f"{M['gateway_hop']['nginx_cpu_us']:.0f} µs") for m in names) + " |")
    for g in groups:
        L.append(f"| whole hop, latency: (unmerged − merged p50) ÷ {critical_hops(g)} critical-path hop{'s' if critical_hops(g) > 1 else ''}, {g}, lowest rate | "
                 + " | ".join(cell(m, lambda M: f"{M[g]['hop_cost']['latency_ms'] * 1000:.0f} µs at {M[g]['hop_cost']['rate']} req/s") for m in names) + " |")
    for g in groups:
        L.append(f"| whole hop, CPU: (unmerged − merged function-tier CPU per request) ÷ {hops(g)} hop{'s' if hops(g) > 1 else ''}, {g}, lowest rate | "
                 + " | ".join(cell(m, lambda M: f"{M[g]['hop_cost']['cpu_us']:.0f} µs") for m in names) + " |")
    L.append("")
    L.append("The whole hop is what the caller's HTTP client, the gateway and the callee's HTTP server cost together "
             "on loopback; the gateway alone is nginx's share of it. To project the gain to a cluster: a merge saves "
             "per request about (hops on the critical path) × (the cluster's overhead per invocation) of latency, and "
             "(hops) × (its CPU per invocation) of CPU, gateway load and requests. With the lab notes' 8.8 ms per "
             "invocation: " + ", ".join(f"{g} {critical_hops(g)} × 8.8 ≈ {critical_hops(g) * 8.8:.0f} ms per request" for g in groups)
             + " (here the same hops cost the microseconds above).")
    L.append("")


def render_md(R):
    m = R["machine"]
    L = []
    L.append(f"Measured {R['started']} → {R['finished']} (UTC) by `bench/run{' ' + ' '.join(R['argv']) if R['argv'] else ''}` "
             + (f"on a snapshot of git `{R['src_rev']}`" if R.get("src") == "head" else
                f"on the work tree at git `{m['git_rev']}`{' (with uncommitted changes)' if m['git_dirty'] else ''}")
             + f", on {m['cores']} cores "
             f"({m['cpu']}), {m['memory_gib']} GiB, {m['os']}, {m['rustc']}. "
             f"Load average at start {R['loadavg_start']}, at end {R['loadavg_end']}; measurements ran at nice {R.get('nice', 0)}"
             + (f"; {R['elapsed_s'] / 60:.0f} min in all." if R.get("elapsed_s") else "."))
    L.append("")
    if R.get("load"):
        L.append("Three deployments of the same functions: **unmerged** (every function its own process, calls between them "
                 "through the nginx gateway), **merged** (fmerge's binary" + merged_lto(R) + ") and **fused** (the same group written by hand as one "
                 "program, `bench/fused`: the limit of merging). Two testbeds: **shared** (everything shares the cores) and "
                 "**pinned** (the client, the ingress nginx and Redis on one half of the cores, the function tier on the other). "
                 "\"others' CPU\" is the share of the machine used by processes outside the bench during a run (other builds, "
                 f"the VM's own work), a measure of noise; a fixed-rate run with more than {NOISY_OTHERS_PCT:.0f}% is run once more "
                 "and the quieter of the two is kept.")
        L.append("")
        if R.get("control"):
            L.append("**A/A control run** (`--control`): the merged deployment ran the hand-fused binary, so every merged ÷ "
                     "fused figure below is the testbed's noise alone (a difference between merged and fused must exceed it "
                     "to be told), and no verdict on merging is drawn from the load runs.")
            L.append("")
    t = target_rows(R)
    if t:
        L.append("| target | goal | measured | |")
        L.append("| --- | --- | --- | --- |")
        for row in t:
            L.append("| " + " | ".join(row) + " |")
        L.append("")
    lo = R.get("load")
    modes = load_modes(lo)
    for mode, M in modes.items():
        if not any(g in M for g in GROUPS):
            continue
        L.append(f"### Latency at fixed rates, {MODE_TITLES.get(mode, mode)}")
        L.append("")
        if "cpus" in M:  # older results have no mode
            L.append(mode_intro(mode, M))
            L.append("")
        repeat = lo.get("repeat", 1)
        closed = lo.get("closed_repeat", repeat)
        of_closed = "and of the closed loop" if closed == repeat else f"{closed} of the closed loop"
        runs = (f"{repeat} rounds of runs per rate ({of_closed}), the deployments in turn (the order turning each round), "
                "the one with the median p50 (throughput) shown; "
                if max(repeat, closed) > 1 else "")
        L.append(f"oha, latency-corrected, {lo['duration_s']} s per run, {runs}{lo['connections_fixed_rate']} connections; every "
                 "request enters through the (ingress) nginx; unmerged, every call between functions goes through the gateway too. "
                 f"Times in ms. \"sustained\": ≥ {100 * SUSTAIN_FRACTION:.0f}% of the offered rate achieved, ≥ 99.9% 200s and "
                 f"p99 ≤ {SLO_P99_MS:.0f} ms.")
        L.append("")
        for g in ("pair", "chain"):
            if g in M:
                render_group(L, lo, mode, M, g)
    if any(g in M for M in modes.values() for g in GROUPS):
        render_hops(L, modes)
    render_watchdog(L, R)
    render_app(L, R)
    render_loop(L, R)
    render_process(L, R)
    render_httpmode(L, R)
    di = R.get("dispatch")
    if di:
        table_head(L, "### In-process dispatch (criterion, `functions/runtime/benches/dispatch.rs`)",
                   "| call of a no-op handler | mean | 95% CI |", "| --- | ---: | ---: |")
        for n, b in di["benches"].items():
            L.append(f"| `{n}` | {b['mean_ns']:.0f} ns | {b['mean_ci95_ns'][0]:.0f}–{b['mean_ci95_ns'][1]:.0f} ns |")
        L.append("")
    bu = R.get("builds")
    if bu:
        render_builds(L, R, bu)
    sz = R.get("sizes")
    if sz:
        table_head(L, "### Size",
                   "| group | merged binary | sum of unmerged binaries | ratio | stripped: merged | stripped: unmerged sum | ratio |",
                   "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for g, s in sz.items():
            L.append(f"| {g} ({len(GROUPS[g])} functions) | {s['merged_bytes'] / 2**20:.2f} MiB | {s['unmerged_sum_bytes'] / 2**20:.2f} MiB | "
                     f"{s['ratio']:.2f} | {s['merged_stripped_bytes'] / 2**20:.2f} MiB | {s['unmerged_sum_stripped_bytes'] / 2**20:.2f} MiB | {s['stripped_ratio']:.2f} |")
        L.append("")
    return "\n".join(L) + "\n"


def lto_by_group(R):
    """{group: `fmerge build --lto` mode of the merged binary}, where the
    results say (at the top level, or, in older results, in their builds)."""
    if "merged_lto" in R:
        return R["merged_lto"]
    return {g: r["merged_lto"] for g, r in (R.get("builds") or {}).items() if r.get("merged_lto")}


def merged_lto(R):
    """How the merged deployment's binary was built, where the results say."""
    modes = sorted(set(lto_by_group(R).values()))
    return f", `fmerge build --lto {'/'.join(modes)}`" if modes else ""


def render_builds(L, R, bu):
    L.append("### Build cost (`/usr/bin/time -v`: wall, peak RSS of the largest process)")
    L.append("")
    L.append("The merge step and the warm re-merge ran at `fmerge build -j N`: at most N threads compile the merged "
             "module's partitions (a fixed number of them, whatever N) and N caps cargo's jobs; the goals are judged at "
             "N = cores, fmerge's default.")
    L.append("")
    L.append("| group | step | N | wall | CPU (user+sys) | peak RSS | optimize | emit objects | fmerge stages | load avg before |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    names = {"cold_fmerge": "cold `fmerge build` (empty target dir)", "cold_cargo": "cold `cargo build --release` (same functions)",
             "merge_step": "merge step alone (cargo fresh; merge cache defeated)",
             "noop_remerge": "re-merge, nothing changed (fmerge's merge cache hit)",
             "warm_remerge": "warm re-merge (social-graph-get-followers touched, rebuilt by cargo; merge cache defeated)",
             "release_merge": "release merge step (the merged deployment's binary; cargo fresh; merge cache defeated)"}
    detail = ("optimize", "emit object", "codegen")  # codegen = optimize + emit objects
    for g, r in bu.items():
        for k, label in names.items():
            runs = by_jobs(r[k]) if k in ("merge_step", "warm_remerge") else ({"": r[k]} if k in r else {})
            if k == "release_merge":
                label = label.replace("release merge step", f"release merge step, `--lto {lto_by_group(R).get(g)}`")
            for n, s in runs.items():
                st = s["fmerge_stages_s"] or {}
                rest = ", ".join(f"{a} {b:.1f}s" for a, b in st.items() if a not in detail)
                L.append(f"| {g} | {label}{' (waited for a cargo lock)' if s['waited_for_cargo_lock'] else ''} | "
                         f"{n if n != 'default' else ''} | {s['wall_s']:.1f} s | {f1(s.get('cpu_s'), ' s')} | "
                         f"{s['peak_rss_mib']:.0f} MiB | {f1(st.get('optimize'), ' s')} | {f1(st.get('emit object'), ' s')} | "
                         f"{rest} | {s['loadavg_before']} |")
    if R.get("quick"):
        L.append("")
        carried = sorted({r["cold_measured"] for r in bu.values() if r.get("cold_measured")})
        L.append("Cold builds not run (`--quick`)" + (f"; the cold rows are from the last full run ({', '.join(carried)} UTC)" if carried else "")
                 + "; merge step and re-merge ran in a warm target dir.")
    L.append("")


def render_watchdog(L, R):
    W = watchdog_modes(R)
    if not W:
        return
    fn = next(iter(W.values()))["function"]
    L.append("### Our runtime against of-watchdog in front of it")
    L.append("")
    L.append(f"`{fn}` as OpenFaaS deploys it (the real of-watchdog 0.11.6 in HTTP mode forking the function and proxying "
             "every request to it) and served by our runtime directly, with no gateway: the client calls each on "
             "127.0.0.1. Fixed-rate runs are oha latency-corrected; CPU per request is from /proc (Redis and the client "
             "cost both the same and are left out of the ratio); \"others' CPU\": the share of the machine used by "
             "processes outside the bench during the run (noise).")
    L.append("")
    L.append("| mode | served by | req/s offered | achieved | p50 | p99 | CPU µs/request (serving) | of which of-watchdog | "
             "others' CPU | closed loop req/s |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mode, w in W.items():
        for how, label in (("direct", "our runtime, directly"), ("watchdog", "of-watchdog + function")):
            r, c = w["fixed_rate"][how], w["closed_loop"][how]
            cpu = w["cpu_us"]["direct"] if how == "direct" else w["cpu_us"]["watchdog_total"]
            proxy = f1(w["cpu_us"]["of_watchdog"], nd=0) if how == "watchdog" else ""
            L.append(f"| {mode} | {label} | {r['offered_rps']} | {r['achieved_rps']:.0f} | {f1(r['p50_ms'], nd=2)} ms | "
                     f"{f1(r['p99_ms'], nd=2)} ms | {f1(cpu, nd=0)} | {proxy} | {r['cpu_others_pct']:.0f}% | {c['ok_rps']:.0f} |")
    L.append("")
    L.append("of-watchdog ÷ direct: " + "; ".join(
        f"{mode}: CPU per request {f1(w['cpu_ratio'], '×', 2)}, p50 {f1(w['p50_ratio'], '×', 2)}, "
        f"p99 {f1(w['p99_ratio'], '×', 2)}, closed-loop throughput {f1(w['closed_loop_ratio'], '×', 2)}" for mode, w in W.items()) + ".")
    L.append("")
