"""The application benchmark's part of results.md: the deployments, the
checks against the goals config.TARGETS sets, the builds (one `fmerge build --plan`
against the groups one by one), the gateway hops each deployment makes per
request, the latency per entry point at every fixed rate of every round, the
highest sustained rates over rounds, function-tier CPU, the verdicts against
unmerged, the planner's projected mean latency gains (out of sample) beside the
measured ones, and the pods, requests, limits and RSS of each deployment.
A figure over rounds reads "mean [low, high]": its mean and its 95%
Student's t interval over the rounds."""

from .appstack import FROM_PLAN, MIB
from .appstats import common_rate, interval, rounds, runs_at
from .apptier import RSS_EVERY
from .app import application, generated
from .config import APP_BOUNDED_MEMORY, APP_DEPLOYMENTS, SUSTAIN_FRACTION, TARGETS


TITLES = {
    "unmerged": "unmerged (every function its own process, behind the gateway)",
    "watchdog": "unmerged, each function behind of-watchdog",
    "planner": "the planner's groups (`fmerge plan`, default constraints, as `fmerge build --all` uses)",
    "bounded": f"the planner's groups with `--max-memory {APP_BOUNDED_MEMORY}` per merged pod",
    "whole": "one group per entry point, merged whole",
}


def f(x, nd=1, unit=""):
    return "n/a" if x is None else f"{x:.{nd}f}{unit}"


def iv(x, nd=1, unit=""):
    """An interval over rounds as "mean [low, high]" (the mean alone from one round)."""
    if x is None:
        return "n/a"
    if x["low"] is None:
        return f(x["mean"], nd, unit)
    return f"{f(x['mean'], nd, unit)} [{f(x['low'], nd)}, {f(x['high'], nd)}]"


def render_app(L, R):
    A = R.get("app")
    if not A:
        return
    lo = A["load"]
    L.append("## The generated application (`bench/run --only app --app genapp`)" if generated(lo)
             else "## The whole application (`bench/run --only app`)")
    L.append("")
    if "rounds" not in lo:
        L.append(f"These results predate rounds: render them with the bench of their revision ({R.get('src_rev', '?')}).")
        L.append("")
        return
    spec = application(lo)
    if not generated(lo):
        what = (f"socialNetwork's {len(A['builds']['functions'])} functions (`functions/stack.yml`)", "the seeder's "
                f"{lo['seed']['users']} users, {lo['seed']['degree']} followees each and {lo['seed']['posts']} posts")
    else:
        what = (f"The generated application's {len(A['builds']['functions'])} functions (`bench/fmbench/genapp.py`; "
                f"planned: `fmerge plan {' '.join(spec['plan_args'])}`)", "the keys its functions read")
    L.append(f"{what[0]} on the pinned testbed "
             "(client, ingress nginx and Redis on one half of the CPUs; the function tier, of-watchdog when present and "
             f"the internal nginx that carries every call between functions on the other). Data: {what[1]} "
             f"({lo.get('redis_keys', '?')} Redis keys), restored before every run. Load: one latency-corrected oha per "
             f"entry point, all at once, at its share of the total rate, {lo['duration_s']} s per run, "
             f"{lo['connections_per_entry']} connections each; " + (
                 "each entry point reads one user whose page is full (oha sends one body). " if not generated(lo)
                 else "each entry point's one request (`genapp.ENTRIES`: the path it takes). ") +
             "\"sustained\": every entry point has ≥ 99.9% 200s, achieves ≥ "
             f"{100 * SUSTAIN_FRACTION:.0f}% of its rate and p99 ≤ {spec['slo_p99_ms']:.0f} ms. Rates rise until one is not "
             "sustained, then the highest sustained rate is bisected. "
             f"{lo.get('rounds', 1)} rounds: each round starts every deployment afresh, in turn, and climbs its ladder; "
             "a figure over rounds reads \"mean [low, high]\", its mean and 95% Student's t interval over the rounds.")
    L.append("")
    for d in APP_DEPLOYMENTS:
        if d in lo["deployments"]:
            L.append(f"- **{d}**: {TITLES[d]}{groups_line(A, d)}")
        for same in lo["deployments"].get(d, {}).get("same_as", []):
            L.append(f"- **{same}**: {TITLES[same]}{groups_line(A, same)}. For {', '.join(spec['entries'])} these are the "
                     f"same groups as **{d}**'s (the same members, so the same merge), so it was measured once, as {d}.")
    if "watchdog" in lo["deployments"]:
        L.append("")
        L.append("of-watchdog 0.11.6 fixes its metrics port at 8081 on every interface, so only one can run per network "
                 "namespace (OpenFaaS gives each pod its own). The watchdog deployment uses it rebuilt from the vendored "
                 "source with that one setting read from `metrics_port` (`bench/fmbench/appbuild.py`); the request path is "
                 "unchanged.")
    L.append("")
    render_checks(L, lo)
    render_hops(L, A)
    for workload in spec["workloads"]:
        if any(workload in d for d in lo["deployments"].values()):
            render_workload(L, lo, workload)
    render_verdicts(L, lo)
    render_projection(L, lo)
    render_resources(L, lo)
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
    workloads = application(lo)["workloads"]
    shares = ", ".join(f"{100 * w:.0f}% {e}" for e, w in workloads[workload].items())
    L.append(f"### {workload} workload ({shares})")
    L.append("")
    L.append("p50 / p99 in ms per entry point, every run of every round; function tier: CPU µs per request of everything "
             "on the function tier's CPUs (functions, merged binaries, of-watchdog, the internal nginx); others' CPU: "
             "processes outside the bench.")
    L.append("")
    entries = list(workloads[workload])
    L.append("| total req/s | deployment | round | " + " | ".join(f"{e} p50 / p99" for e in entries)
             + " | achieved req/s | sustained | function tier µs/req | others' CPU |")
    L.append("| ---: | --- | ---: |" + " ---: |" * len(entries) + " ---: | --- | ---: | ---: |")
    rows = []
    for d in APP_DEPLOYMENTS:
        for k, rnd in enumerate(rounds(lo, d, workload)):
            for r in rnd["runs"]:
                rows.append((r["rate"], APP_DEPLOYMENTS.index(d), k, d, r))
    for rate, _, k, d, r in sorted(rows, key=lambda x: x[:3]):
        cells = [f"{f(r['entries'][e]['p50_ms'], 2)} / {f(r['entries'][e]['p99_ms'], 2)}" for e in entries]
        achieved = sum(x["achieved_rps"] or 0 for x in r["entries"].values())
        L.append(f"| {rate} | {d} | {k + 1} | " + " | ".join(cells) + f" | {achieved:.0f} | "
                 f"{'yes' if r['sustained'] else 'no'} | {f(r['function_tier_cpu_us'], 0)} | {r['cpu_others_pct']:.0f}% |")
    L.append("")
    render_profile(L, lo, workload)
    L.append("Highest sustained total rate over rounds (each round's in brackets after): " + "; ".join(
        f"{d} {iv(interval([x['max_sustained'] for x in rounds(lo, d, workload)]), 0, '/s')} ("
        + ", ".join(f"{x['max_sustained'] or 'none'}" + ("+" if x["lower_bound"] else "") for x in rounds(lo, d, workload))
        + ")" for d in APP_DEPLOYMENTS if rounds(lo, d, workload)) + (
        " (+: the top rate tried, so at least that)" if any(x["lower_bound"] for d in APP_DEPLOYMENTS
                                                            for x in rounds(lo, d, workload)) else "") + ".")
    L.append("")


def render_verdicts(L, lo):
    V = lo["verdicts"]
    if not V:
        return
    L.append("### Against unmerged, over rounds")
    L.append("")
    L.append("Highest sustained rate ÷ unmerged's in the same round; p50 and p99 ÷ unmerged's per entry point at the rates "
             "both sustained in every round, the worst of each round; function-tier CPU per request, unmerged ÷ this, the "
             "median of each round.")
    L.append("")
    L.append("| workload / deployment | highest sustained rate ÷ unmerged | p50 ÷ unmerged (worst) | p99 ÷ unmerged (worst) | "
             "function-tier CPU, unmerged ÷ this (median) | rates both sustained in every round |")
    L.append("| --- | ---: | ---: | ---: | ---: | --- |")
    for k, v in V.items():
        L.append(f"| {k} | {iv(v['throughput_ratio'], 2, '×')} | {iv(v['p50_ratio_worst'], 2, '×')} | "
                 f"{iv(v['p99_ratio_worst'], 2, '×')} | {iv(v['tier_cpu_unmerged_over_this'], 2, '×')} | "
                 f"{', '.join(map(str, v['rates_compared'])) or 'none'} |")
    L.append("")


def render_checks(L, lo):
    """The goals for the whole application (appchecks), each with its figure."""
    L.append("### Checks")
    L.append("")
    L.append("| check | goal | measured | | |")
    L.append("| --- | --- | --- | --- | --- |")
    for c in lo.get("checks", []):
        m = c["measured"]
        shown = iv(m, 2, "×") if isinstance(m, dict) else f(m, 2, "×") if isinstance(m, float) else "n/a" if m is None \
            else str(m)
        verdict = "n/a" if c["met"] is None else "met" if c["met"] else "**missed**"
        L.append(f"| {c['check']} | {c['goal']} | {shown} | {verdict} | {c['detail']} |")
    if not generated(lo):  # socialNetwork's goal (the verdicts table has it for any application)
        v = lo["verdicts"].get("mixed/planner") or {}
        x = (v.get("p50_ratio_worst") or {}).get("mean")
        goal = TARGETS["app_mixed_p50_ratio"]
        L.append(f"| mixed workload, p50 planner ÷ unmerged at equal rates (worst entry point and rate per round) | ≤ {goal:g} | "
                 f"{iv(v.get('p50_ratio_worst'), 2, '×')} | {'n/a' if x is None else 'met' if x <= goal else '**missed**'} | |")
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
    """The highest rate every deployment sustained in every round (else the
    lowest every round ran), and each deployment's run at it in the last round."""
    kinds = [d for d in APP_DEPLOYMENTS if rounds(lo, d, workload)]
    rate = common_rate(lo, workload, kinds)
    return rate, {d: runs_at(lo, d, workload, rate)[-1] for d in kinds} if rate is not None else {}


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
    L.append(f"CPU µs per request by process at {rate} req/s (the highest rate every deployment sustained in every round; "
             "the last round's run): where each "
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
    """The mean latency gain `fmerge plan --evaluate` projects for each deployment's
    groups, priced out of sample, beside the gain measured, over rounds."""
    rows = lo.get("projection")
    if not rows:
        return
    tol = 100 * TARGETS["app_projection_tolerance"]
    L.append("### Projected against measured mean latency gains (out of sample)")
    L.append("")
    L.append("The gain `fmerge plan` projects for exactly the groups deployed (`fmerge plan --graph calls.json --metrics "
             "BEFORE --metrics AFTER --evaluate plan.toml`: every unmerged runtime's `/metrics` scraped before and after "
             "unmerged's run at that rate, its requests and each gateway call at the mean `fmerge_invoke_duration_seconds` "
             "its caller saw less the callee's mean `fmerge_handler_duration_seconds` for that caller), the critical path's "
             "cost removed (every call's in brackets), against the gain measured (unmerged's mean latency − this deployment's, "
             "same round and rate: the plan projects expected latency, so its gain is judged on the means). **Out of sample**: round k's projection is priced with the scrapes of unmerged's run "
             "in another round (the next one that sustained that rate; \"hop costs from\" lists them per round), never "
             "the run whose latency it predicts. Rates: those the deployment and unmerged sustained in every round; * marks "
             "those every deployment sustained in every round, where the check applies. An entry point outside the part "
             "of the stack the plan was made for (its callers left out, whose calls reach its pods) is priced by the same "
             "evaluation over the whole stack. A deployment with no groups has "
             f"0 projected and is not judged. Target: projected ÷ measured (means over rounds) within ±{tol:.0f}%.")
    L.append("")
    L.append("| deployment | workload | total req/s | entry point | unmerged mean | mean | measured gain | projected gain "
             "(every call) | hop costs from rounds | projected ÷ measured (per round) | |")
    L.append("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    for r in rows:
        name = r["deployment"] + (f" (as {r['measured_as']})" if r["measured_as"] != r["deployment"] else "")
        per = ", ".join(f(x, 2) for x in r["per_round"]["ratio"])
        hops = ", ".join(f"{k + 1}←{'none' if j is None else j + 1}" for k, j in enumerate(r["hop_rounds"])) \
            if r["modelled"] else "—"
        verdict = "not modelled" if not r["modelled"] else "within" if r["within"] else "**miss**"
        L.append(f"| {name} | {r['workload']} | {r['rate']}{'*' if r['all_sustain'] else ''} | {r['entry']} | "
                 f"{iv(r['unmerged_mean_ms'], 2)} | {iv(r['mean_ms'], 2)} | {iv(r['measured_gain_ms'], 2)} | "
                 f"{iv(r['projected_gain_ms'], 2)} ({iv(r['projected_gain_max_ms'], 2)}) | {hops} | "
                 f"{f(r['ratio'], 2, '×')} ({per}) | {verdict} |")
    L.append("")


def render_resources(L, lo):
    """Per deployment: the stack it runs (pods, requests, limits), its RSS
    over rounds, and plan.json's own reservation."""
    m = lo.get("resources")
    if not m or not m["deployments"]:
        return
    L.append("### Pods, requests, limits and resident memory per deployment")
    L.append("")
    L.append("Pods: the entries of the stack the deployment runs (the bench starts exactly these; of-watchdog shares its "
             "function's pod). Requests and limits: added up over those entries, from `functions/stack.yml` (through "
             "calls.json); a merged pod takes its caller's place with the figures plan.json gives it "
             f"(\"{FROM_PLAN}\", planned from the profile run's scrapes) where its plan file carries them, else its "
             "members' sums, as `fmerge build` writes the merged stack; a callee stays deployed unless plan.json drops it. "
             "Declared entry points: the functions the stack labels `com.openfaas.fmerge.entry` "
             f"({', '.join(m['declared_entries'])}); \"missing\": not deployed. RSS: the sum over every "
             "process of the function tier the bench started (not nginx or Redis), sampled every "
             f"{RSS_EVERY:g} s during the {m['workload']} run at {m['rate']} req/s (the highest rate every deployment "
             "sustained in every round), each round's mean, over rounds; the peak is the highest sample of any round. "
             "Planner: plan.json's `reserved` totals for the deployment's groups.")
    L.append("")
    whats = (("requests", "memory"), ("requests", "cpu"), ("limits", "memory"), ("limits", "cpu"))
    L.append("| deployment | pods | " + " | ".join(f"{w} {k}" for k, w in whats)
             + " | merged pods' figures | declared entry points missing | RSS MiB | RSS peak | RSS vs unmerged | "
             "planner's memory limits / requests |")
    L.append("| --- | ---: |" + " ---: |" * len(whats) + " --- | --- | ---: | ---: | ---: | ---: |")
    for d in APP_DEPLOYMENTS:
        row = m["deployments"].get(d)
        if not row:
            continue
        cells = [amount(w, row[k][w]) for k, w in whats]
        change = "" if d == "unmerged" else f(None if row["rss_change"] is None else 100 * row["rss_change"], 1, "%")
        name = d + (f" (measured as {row['measured_as']})" if row.get("measured_as") else "")
        p = row.get("planner_reserved") or {}
        L.append(f"| {name} | {row['pods']} | " + " | ".join(cells) + f" | {', '.join(row['sources']) or '—'} | "
                 f"{', '.join(row['missing_entries']) or 'none'} | {iv(row['rss_mib'], 0)} | {f(row['rss_mib_peak'], 0)} | "
                 f"{change} | {amount('memory', p.get('memory limits'))} / {amount('memory', p.get('memory requests'))} |")
    L.append("")
    pods = [(d, n, x) for d in APP_DEPLOYMENTS for n, x in ((m["deployments"].get(d) or {}).get("merged_pods") or {}).items()]
    if pods:
        L.append("Each merged pod's memory request beside the resident memory its process held (the most of the rounds' "
                 "means at the same rate):")
        L.append("")
        L.append("| deployment | pod | memory request | RSS MiB |")
        L.append("| --- | --- | ---: | ---: |")
        for d, n, x in pods:
            L.append(f"| {d} | {x['group']} | {f(x['request_mib'], 1)} MiB | {f(x['rss_mib'], 1)} |")
        L.append("")


def amount(what, x):
    """A reserved amount as stack files write it."""
    if x is None:
        return "n/a"
    return f"{x / MIB:.0f}Mi" if what.startswith("memory") else f"{x:.2f} cores"
