"""The application benchmark's part of results.md: the deployments, the
builds (one `fmerge build --plan` against the groups one by one), the gateway
hops each deployment makes per request, the latency per entry point at every
fixed rate, the highest sustained rates, function-tier CPU, the verdicts
against the targets, the planner's projected p50 gains beside the measured
ones, and the memory each deployment uses and reserves."""

from .apptier import RSS_EVERY
from .config import APP_BOUNDED_MEMORY, APP_DEPLOYMENTS, APP_ENTRIES, APP_WORKLOADS, SLO_P99_MS, SUSTAIN_FRACTION, TARGETS

MIB = 1024 * 1024

TITLES = {
    "unmerged": "unmerged (every function its own process, behind the gateway)",
    "watchdog": "unmerged, each function behind of-watchdog",
    "planner": "the planner's groups (`fmerge plan`, default constraints, as `fmerge build --all` uses)",
    "bounded": f"the planner's groups with `--max-memory {APP_BOUNDED_MEMORY}` per merged pod",
    "whole": "one group per entry point, merged whole",
}


def f(x, nd=1, unit=""):
    return "n/a" if x is None else f"{x:.{nd}f}{unit}"


def render_app(L, R):
    A = R.get("app")
    if not A:
        return
    lo = A["load"]
    L.append("## The whole application (`bench/run --only app`)")
    L.append("")
    L.append(f"socialNetwork's {len(A['builds']['functions'])} functions (`functions/stack.yml`) on the pinned testbed "
             "(client, ingress nginx and Redis on one half of the CPUs; the function tier, of-watchdog when present and "
             "the internal nginx that carries every call between functions on the other). Data: the seeder's "
             f"{lo['seed']['users']} users, {lo['seed']['degree']} followees each and {lo['seed']['posts']} posts "
             f"({lo.get('redis_keys', '?')} Redis keys), restored before every run. Load: one latency-corrected oha per "
             f"entry point, all at once, at its share of the total rate, {lo['duration_s']} s per run, "
             f"{lo['connections_per_entry']} connections each; each entry point reads one user whose page is full (oha "
             "sends one body). \"sustained\": every entry point has ≥ 99.9% 200s, achieves ≥ "
             f"{100 * SUSTAIN_FRACTION:.0f}% of its rate and p99 ≤ {SLO_P99_MS:.0f} ms. Rates rise until one is not "
             "sustained, then the highest sustained rate is bisected.")
    L.append("")
    for d in APP_DEPLOYMENTS:
        if d in lo["deployments"]:
            L.append(f"- **{d}**: {TITLES[d]}{groups_line(A, d)}")
        for same in lo["deployments"].get(d, {}).get("same_as", []):
            L.append(f"- **{same}**: {TITLES[same]}{groups_line(A, same)}. For {', '.join(APP_ENTRIES)} these are the "
                     f"same groups as **{d}**'s (the same members, so the same merge), so it was measured once, as {d}.")
    if "watchdog" in lo["deployments"]:
        L.append("")
        L.append("of-watchdog 0.11.6 fixes its metrics port at 8081 on every interface, so only one can run per network "
                 "namespace (OpenFaaS gives each pod its own). The watchdog deployment uses it rebuilt from the vendored "
                 "source with that one setting read from `metrics_port` (`bench/fmbench/appbuild.py`); the request path is "
                 "unchanged.")
    L.append("")
    L.append("### Targets")
    L.append("")
    L.append("| target | goal | measured | |")
    L.append("| --- | --- | --- | --- |")
    v = lo["verdicts"].get("mixed/planner") or {}
    for label, key, goal, better in (
            ("mixed workload, highest sustained rate, planner groups ÷ unmerged", "throughput_ratio",
             TARGETS["app_mixed_throughput_ratio"], "ge"),
            ("mixed workload, p50 planner groups ÷ unmerged at equal rates (worst entry point and rate)", "p50_ratio_worst",
             TARGETS["app_mixed_p50_ratio"], "le")):
        x = v.get(key)
        ok = None if x is None else (x >= goal if better == "ge" else x <= goal)
        L.append(f"| {label} | {'≥' if better == 'ge' else '≤'} {goal:g} | {f(x, 2, '×')} | "
                 f"{'n/a' if ok is None else 'met' if ok else '**missed**'} |")
    rows = [r for r in lo.get("projection", []) if r["deployment"] == "planner"]
    if rows:
        met = sum(r["within"] for r in rows)
        L.append(f"| p50 gain `fmerge plan` projects for the planner's groups ÷ the gain measured, per entry point and rate "
                 f"both sustained | within ±{100 * TARGETS['app_projection_tolerance']:.0f}% | {met} of {len(rows)} within | "
                 f"{'met' if met == len(rows) else '**missed**'} |")
    L.append("")
    render_hops(L, A)
    for workload in APP_WORKLOADS:
        if any(workload in d for d in lo["deployments"].values()):
            render_workload(L, lo, workload)
    render_verdicts(L, lo)
    render_projection(L, lo)
    render_memory(L, lo)
    render_build(L, A)


def groups_line(A, d):
    groups = A["builds"].get(d)
    if not groups:
        return ""
    return ": " + "; ".join(f"`{g['name']}` = {' + '.join(g['members'])}" for g in groups)


def render_hops(L, A):
    lo = A["load"]
    L.append("### Gateway calls per request (measured at the internal gateway)")
    L.append("")
    deps = [d for d in APP_DEPLOYMENTS if d in lo["deployments"]]
    L.append("| entry point | " + " | ".join(deps) + " |")
    L.append("| --- |" + " ---: |" * len(deps))
    entries = next(iter(lo["deployments"].values()))["gateway_calls_per_request"]
    for e in entries:
        L.append(f"| {e} | " + " | ".join(f"{lo['deployments'][d]['gateway_calls_per_request'][e]:g}" for d in deps) + " |")
    L.append("")


def render_workload(L, lo, workload):
    shares = ", ".join(f"{100 * w:.0f}% {e}" for e, w in APP_WORKLOADS[workload].items())
    L.append(f"### {workload} workload ({shares})")
    L.append("")
    L.append("p50 / p99 in ms per entry point; function tier: CPU µs per request of everything on the function tier's "
             "CPUs (functions, merged binaries, of-watchdog, the internal nginx); others' CPU: processes outside the bench.")
    L.append("")
    entries = list(APP_WORKLOADS[workload])
    L.append("| total req/s | deployment | " + " | ".join(f"{e} p50 / p99" for e in entries)
             + " | achieved req/s | sustained | function tier µs/req | others' CPU |")
    L.append("| ---: | --- |" + " ---: |" * len(entries) + " ---: | --- | ---: | ---: |")
    rows = []
    for d in APP_DEPLOYMENTS:
        w = lo["deployments"].get(d, {}).get(workload)
        for r in (w or {}).get("runs", []):
            rows.append((r["rate"], APP_DEPLOYMENTS.index(d), d, r))
    for rate, _, d, r in sorted(rows, key=lambda x: (x[0], x[1])):
        cells = [f"{f(r['entries'][e]['p50_ms'], 2)} / {f(r['entries'][e]['p99_ms'], 2)}" for e in entries]
        achieved = sum(x["achieved_rps"] or 0 for x in r["entries"].values())
        L.append(f"| {rate} | {d} | " + " | ".join(cells) + f" | {achieved:.0f} | {'yes' if r['sustained'] else 'no'} | "
                 f"{f(r['function_tier_cpu_us'], 0)} | {r['cpu_others_pct']:.0f}% |")
    L.append("")
    render_profile(L, lo, workload)
    L.append("Highest sustained total rate: " + ", ".join(
        f"{d} {lo['deployments'][d][workload]['max_sustained'] or 'none'}/s"
        + (" (or more: the top rate tried)" if lo["deployments"][d][workload]["lower_bound"] else "")
        for d in APP_DEPLOYMENTS if workload in lo["deployments"].get(d, {})) + ".")
    L.append("")


def render_verdicts(L, lo):
    V = lo["verdicts"]
    if not V:
        return
    L.append("### Against unmerged")
    L.append("")
    L.append("| workload / deployment | highest sustained rate ÷ unmerged | p50 ÷ unmerged (worst) | p99 ÷ unmerged (worst) | "
             "function-tier CPU, unmerged ÷ this (median) | rates both sustained |")
    L.append("| --- | ---: | ---: | ---: | ---: | --- |")
    for k, v in V.items():
        L.append(f"| {k} | {f(v['throughput_ratio'], 2, '×')} | {f(v['p50_ratio_worst'], 2, '×')} | "
                 f"{f(v['p99_ratio_worst'], 2, '×')} | {f(v['tier_cpu_unmerged_over_this'], 2, '×')} | "
                 f"{', '.join(map(str, v['rates_compared'])) or 'none'} |")
    L.append("")


def render_build(L, A):
    t = A["timings"]
    L.append("### Building the application's groups")
    L.append("")
    c = t.get("cold")
    if c:
        p, o = c["plan"], c["one_by_one"]
        L.append(f"The planner's {c['groups']} groups from empty target dirs (`/usr/bin/time -v`): one `fmerge build --plan` "
                 "(one cargo build of every member, the groups merged in parallel) against one `fmerge build -f stack.yml "
                 "--config plan/<caller>.toml` per group, one after another, in one target dir of their own (cargo reuses "
                 "what an earlier group built).")
        L.append("")
        L.append("| how | wall | CPU | peak RSS |")
        L.append("| --- | ---: | ---: | ---: |")
        L.append(f"| `fmerge build --plan` | {f(p['wall_s'])} s | {f(p['cpu_s'])} s | {f(p['peak_rss_mib'], 0)} MiB |")
        L.append(f"| one group after another | {f(o['wall_s'])} s | {f(o['cpu_s'])} s | {f(o['peak_rss_mib'], 0)} MiB |")
        L.append("")
        L.append(f"One after another ÷ `--plan`, wall: {f(c['wall_ratio'], 2, '×')}. Per group: " + ", ".join(
            f"{g} {f(x['wall_s'])} s" for g, x in o["groups"].items()) + ".")
        L.append("")
        render_stages(L, p.get("timings"))
    else:
        L.append("Cold builds not measured in this run (`--no-app-cold`).")
    L.append("")


def render_stages(L, t):
    """fmerge's own `timings` record of a `--plan` build: the wall clock,
    then each stage summed over the groups, then each group."""
    if not t:
        return
    w = t["wall"]
    L.append("Where `--plan`'s time went (fmerge's own `timings` record): wall " + ", ".join(
        f"{k} {f(v)} s" for k, v in w.items()) + ".")
    L.append("")
    # Stages with time in them; the record's own total is the last column.
    stages = [s for s, v in t["sum"].items() if s != "total" and v]
    L.append("| group | " + " | ".join(stages) + " | merge | total |")
    L.append("| --- | " + " | ".join("---:" for _ in stages) + " | ---: | ---: |")
    for g in t["groups"]:
        L.append(f"| {g['name']} | " + " | ".join(f(g['stages'].get(s)) for s in stages)
                 + f" | {f(g['merge'])} | {f(g['total'])} |")
    L.append("| **sum** | " + " | ".join(f(t["sum"][s]) for s in stages) + f" | | {f(t['sum'].get('total'))} |")
    L.append("")


def profile_rate(lo, workload):
    """The highest rate every deployment sustained (else the lowest tried)."""
    runs = {d: {r["rate"]: r for r in lo["deployments"][d][workload]["runs"]}
            for d in APP_DEPLOYMENTS if workload in lo["deployments"].get(d, {})}
    common = set.intersection(*[{x for x, r in rs.items() if r["sustained"]} for rs in runs.values()]) if runs else set()
    rate = max(common) if common else min(set.intersection(*[set(rs) for rs in runs.values()]), default=None)
    return rate, {d: rs.get(rate) for d, rs in runs.items()}


def render_profile(L, lo, workload):
    """Where the CPU goes per request, by process, at one common rate: what
    explains each deployment's cost (the processes above 3% of some
    deployment's total; the rest summed)."""
    rate, runs = profile_rate(lo, workload)
    runs = {d: r for d, r in runs.items() if r and r.get("cpu_us_per_request")}
    if not runs:
        return
    names = set()
    for r in runs.values():
        c = r["cpu_us_per_request"]
        total = sum(c.values())
        names |= {k for k, v in c.items() if v >= 0.03 * total}
    L.append(f"CPU µs per request by process at {rate} req/s (the highest rate every deployment sustained): where each "
             "deployment's cost goes (\"of-watchdog <f>\": of-watchdog and the function it forks).")
    L.append("")
    L.append("| process | " + " | ".join(runs) + " |")
    L.append("| --- |" + " ---: |" * len(runs))
    for n in sorted(names, key=lambda n: -max(r["cpu_us_per_request"].get(n, 0) for r in runs.values())):
        L.append(f"| {n} | " + " | ".join(f(r["cpu_us_per_request"].get(n), 0) if n in r["cpu_us_per_request"] else ""
                                         for r in runs.values()) + " |")
    L.append("| every other process | " + " | ".join(
        f(sum(v for k, v in r["cpu_us_per_request"].items() if k not in names), 0) for r in runs.values()) + " |")
    L.append("| **all** | " + " | ".join(f(sum(r["cpu_us_per_request"].values()), 0) for r in runs.values()) + " |")
    L.append("")


def render_projection(L, lo):
    """The p50 gain `fmerge plan --evaluate` projects for each deployment's
    groups, with the unmerged run's traffic and hop costs at that rate,
    beside the gain measured."""
    rows = lo.get("projection")
    if not rows:
        return
    tol = 100 * TARGETS["app_projection_tolerance"]
    L.append("### Projected against measured p50 gains")
    L.append("")
    L.append("The gain `fmerge plan` projects for exactly the groups deployed (`fmerge plan --graph calls.json --metrics "
             "BEFORE --metrics AFTER --evaluate plan.toml`, the two scrapes of every unmerged function's `/metrics` taken "
             "around unmerged's run at that rate: its requests, and each gateway call at the mean "
             "`fmerge_invoke_duration_seconds` its caller saw less the callee's mean `http_request_duration_seconds` "
             "for that caller), the critical path's cost removed (every call's cost "
             "removed in brackets), beside the gain measured (unmerged p50 − this deployment's p50, same rate). "
             f"Target: projected ÷ measured within ±{tol:.0f}%.")
    L.append("")
    L.append("| deployment | workload | total req/s | entry point | unmerged p50 | p50 | measured gain | projected gain "
             "(every call) | projected ÷ measured | |")
    L.append("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        L.append(f"| {r['deployment']} | {r['workload']} | {r['rate']} | {r['entry']} | {f(r['unmerged_p50_ms'], 2)} | "
                 f"{f(r['p50_ms'], 2)} | {f(r['measured_gain_ms'], 2)} | {f(r['projected_gain_ms'], 2)} "
                 f"({f(r['projected_gain_max_ms'], 2)}) | {f(r['ratio'], 2, '×')} | "
                 f"{'within' if r['within'] else '**miss**'} |")
    L.append("")


def render_memory(L, lo):
    """Per deployment: the function tier's RSS under load and what it
    reserves, as the bench adds it up beside the planner's plan.json."""
    m = lo.get("memory")
    if not m or not m["deployments"]:
        return
    L.append("### Memory and cpu: used under load, reserved")
    L.append("")
    L.append(f"RSS: the sum over every process of the function tier the bench started (functions, merged binaries, "
             f"of-watchdog and the function it forks; not nginx or Redis), sampled every {RSS_EVERY:g} s during the "
             f"{m['workload']} run at {m['rate']} req/s (the highest rate every deployment sustained): the mean of the "
             "samples and the peak. Every function keeps its own process (a callee stays deployed for other callers), "
             "so a merged binary adds to the total. Reserved: `limits` and `requests` as `fmerge build` writes the merged "
             "stack (every function's own entry, each group's callees added to its caller's), added up by the bench from "
             "`calls.json` and the groups built / as `fmerge plan` reports them in plan.json. Provuse reports −54% RAM from "
             "fusion.")
    L.append("")
    whats = ("memory limits", "memory requests", "cpu limits", "cpu requests")
    L.append("| deployment | RSS mean / peak | RSS vs unmerged | " + " | ".join(f"{w} (bench / planner)" for w in whats) + " |")
    L.append("| --- | ---: | ---: |" + " ---: |" * len(whats))
    for d in APP_DEPLOYMENTS:
        row = m["deployments"].get(d)
        if not row:
            continue
        cells = []
        for w in whats:
            mine, planner = row["reserved"].get(w), (row.get("planner_reserved") or {}).get(w)
            cells.append(f"{amount(w, mine)} / {amount(w, planner)}")
        change = "" if d == "unmerged" else f(None if row["rss_change"] is None else 100 * row["rss_change"], 1, "%")
        name = d + (f" (measured as {row['measured_as']})" if row.get("measured_as") else "")
        L.append(f"| {name} | {f(row['rss_mib_mean'], 0)} / {f(row['rss_mib_peak'], 0)} MiB | {change} | "
                 + " | ".join(cells) + " |")
    L.append("")


def amount(what, x):
    """A reserved amount as stack files write it."""
    if x is None:
        return "n/a"
    return f"{x / MIB:.0f}Mi" if what.startswith("memory") else f"{x:.2f} cores"
