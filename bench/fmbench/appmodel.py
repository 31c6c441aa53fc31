"""The planner's own figures beside what the application bench measured:
per deployment, entry point and rate every round sustained, the mean latency gain
`fmerge plan` projects for the groups it runs, priced with the hop costs
scraped in another round's unmerged run (out of sample), against the mean
gain measured in each round; and per deployment, the stack it runs (pods,
requests, limits; appstack) beside plan.json's reservation, and the RSS it
used under load over the rounds."""

import json
import subprocess
import tomllib
from pathlib import Path

from .app import application
from .appstack import MIB, declared_entries, deployment_stack, missing_entries, planned_deployment, totals
from .appstats import common_rate, hop_source, interval, mean_gains, rounds, runs_at, steady_rates, sustained_at
from .config import TARGETS, child_env, die, log


def evaluate(ctx, fmerge, calls, plan_file, out, scrapes=(), plan_args=()):
    """`fmerge plan --evaluate`: the planner's figures for exactly the groups
    of plan_file (under the traffic between two scrapes, if given), planned
    over the part of the stack the plan was (`plan_args`, the application's:
    its deployment's drops depend on it); returns its plan.json."""
    argv = [str(fmerge), "plan", "--graph", str(calls), "--evaluate", str(plan_file), "--out", str(out), *plan_args]
    for s in scrapes:
        argv += ["--metrics", str(s)]
    p = subprocess.run(argv, cwd=ctx.src, env=child_env(), capture_output=True, text=True)
    if p.returncode != 0:
        die(f"{' '.join(argv[1:])} failed: {p.stderr[-2000:]}")
    (Path(out) / "report.txt").write_text(p.stdout + p.stderr)
    return json.loads((Path(out) / "plan.json").read_text())


def entry_gains(doc):
    """{entry point: (critical-path gain, every call's gain)} in ms, of a plan.json."""
    return {e["function"]: (e["latency_gain_ms"], e["latency_gain_max_ms"]) for e in doc["entries"]}


def projected_gains(ctx, fmerge, calls, plan_file, out, scrapes, plan_args, entries):
    """entry_gains of `fmerge plan --evaluate` over the part of the stack the
    plan was made for; an entry point outside that part (a caller the plan
    leaves out, whose calls reach its merged pods) is priced by an
    evaluation of the same groups over the whole stack, where its calls are
    in the model, instead of being left with no projection."""
    gains = entry_gains(evaluate(ctx, fmerge, calls, plan_file, out, scrapes, plan_args))
    if plan_args and any(e not in gains for e in entries):
        whole = entry_gains(evaluate(ctx, fmerge, calls, plan_file, Path(f"{out}-whole-stack"), scrapes))
        gains.update({e: g for e, g in whole.items() if e not in gains})
    return gains


def agreement(projected, measured, tolerance=TARGETS["app_projection_tolerance"]):
    """projected ÷ measured, and whether it lies within ±tolerance of 1 (a
    gain measured at 0 or below, or none projected, is a miss)."""
    if projected is None or measured is None or measured <= 0 or projected <= 0:
        return None, False
    r = projected / measured
    return r, abs(r - 1) <= tolerance


def deployment_stacks(ctx, fmerge, builds, kinds):
    """The stack each deployment runs (appstack.deployment_stack), with what
    plan.json says of its own deployment where its plan file carries the
    planner's decisions (`fmerge build --plan` writes the stack they say);
    sets builds["stacks"] and builds["plan_docs"] (plan.json under the
    profile's scrapes, so its pods' figures come from measured usage)."""
    calls = ctx.out / "app" / "callgraph" / "calls.json"
    functions = builds["graph"]["functions"]
    builds["stacks"], builds["plan_docs"] = {}, {}
    for kind in kinds:
        groups, planned = [], None
        if kind in builds["plan_files"]:
            plan_file = builds["plan_files"][kind]
            doc = evaluate(ctx, fmerge, calls, plan_file, ctx.out / "app" / "reserved" / kind,
                           builds.get("profile_metrics", ()), application(builds)["plan_args"])
            builds["plan_docs"][kind] = doc
            groups = builds.get(kind, [])
            planned = planned_deployment(doc) if carries_deployment(plan_file) else None
        builds["stacks"][kind] = deployment_stack(functions, groups, planned)
    return builds["stacks"]


def carries_deployment(plan_file):
    """Whether a plan file says what its deployment drops or reserves (one
    `fmerge plan` wrote does; a hand-written one may not, and then `fmerge
    build` keeps every callee and sums the members' figures)."""
    plan = tomllib.loads(Path(plan_file).read_text())
    return "dropped" in plan or any("requests" in g or "limits" in g for g in plan.get("group", []))


def measured_as(load):
    """{deployment: the deployment whose runs stand for it}: each measured
    one for itself, and those with the planner's very groups for it."""
    out = {k: k for k in load["deployments"]}
    for k, d in load["deployments"].items():
        out.update({same: k for same in d.get("same_as", [])})
    return out


def projections(ctx, fmerge, builds, load):
    """Per deployment other than unmerged, workload, rate it and unmerged
    sustained in every round, and entry point: the mean latency gain measured in each
    round (unmerged's mean − its own, same round) beside the gain `fmerge
    plan --evaluate` projects for round k with the scrapes of unmerged's run
    at that rate in round hop_source(k) ≠ k; their means and intervals, and
    projected ÷ measured. A deployment without groups has 0 projected."""
    calls = ctx.out / "app" / "callgraph" / "calls.json"
    rows, cache = [], {}
    every = list(load["deployments"])
    spec = application(builds)
    workloads, plan_args = spec["workloads"], spec["plan_args"]
    for workload in workloads:
        base = rounds(load, "unmerged", workload)
        n = len(base)
        all_steady = set(steady_rates(load, workload, every))
        for kind, source in measured_as(load).items():
            if kind == "unmerged":
                continue
            plan_file = builds["plan_files"].get(kind)
            for rate in steady_rates(load, workload, [source, "unmerged"]):
                scraped = {j for j, r in enumerate(base) if sustained_at(r)[rate].get("metrics")}
                hops = [hop_source(k, scraped, n) for k in range(n)]
                gains = {}
                for j in {j for j in hops if j is not None and plan_file}:
                    key = (kind, workload, rate, j)
                    if key not in cache:
                        out = ctx.out / "app" / "projection" / f"{kind}-{workload}-{rate}-hops-round{j}"
                        cache[key] = projected_gains(ctx, fmerge, calls, plan_file, out,
                                                     sustained_at(base[j])[rate]["metrics"], plan_args,
                                                     workloads[workload])
                    gains[j] = cache[key]
                for e in workloads[workload]:
                    g = mean_gains(load, source, workload, rate, e)
                    projected = [0.0 if not plan_file else None if j is None else gains[j].get(e, (None, None))[0]
                                 for j in hops]
                    most = [0.0 if not plan_file else None if j is None else gains[j].get(e, (None, None))[1]
                            for j in hops]
                    rows.append(projection_row(kind, source, workload, rate, e, g, projected, most, hops,
                                               base_mean=[sustained_at(r)[rate]["entries"][e].get("mean_ms") for r in base],
                                               modelled=bool(plan_file), all_sustain=rate in all_steady))
    judged = [r for r in rows if r["modelled"]]
    log(f"app: projected (out of sample) against measured mean latency gains: {sum(r['within'] for r in judged)} of {len(judged)} "
        f"within ±{100 * TARGETS['app_projection_tolerance']:.0f}%")
    return rows


def projection_row(kind, source, workload, rate, entry, g, projected, most, hops, base_mean, modelled, all_sustain):
    """One row of the projection table: the per-round figures and their intervals."""
    measured, proj = interval(g["gain_ms"]), interval(projected)
    r, within = agreement(proj and proj["mean"], measured and measured["mean"])
    per_round = [agreement(p, m)[0] for p, m in zip(projected, g["gain_ms"])]
    return {"deployment": kind, "measured_as": source, "workload": workload, "rate": rate, "entry": entry,
            "hop_rounds": hops, "unmerged_mean_ms": interval(base_mean), "mean_ms": interval(g["mean_ms"]),
            "measured_gain_ms": measured, "projected_gain_ms": proj, "projected_gain_max_ms": interval(most),
            "per_round": {"measured_gain_ms": g["gain_ms"], "projected_gain_ms": projected, "ratio": per_round},
            "ratio": r, "within": within if modelled else None, "modelled": modelled, "all_sustain": all_sustain,
            "requests": min(g.get("requests") or [0])}


def planner_reserved(doc):
    """{what: after} of a plan.json, and {what: before}: unmerged's."""
    return {r["what"]: r["after"] for r in doc["reserved"]}, {r["what"]: r["before"] for r in doc["reserved"]}


def resources(builds, load, workload="mixed"):
    """Per deployment: the stack it runs (pods, requests, limits, where a
    merged pod's figures came from), whether it keeps every declared entry
    point, its function tier's RSS over the rounds (each round's mean during
    the run at the highest rate every deployment sustained in every round),
    and plan.json's own reservation for it."""
    kinds = measured_as(load)
    rate = common_rate(load, workload, list(load["deployments"]))
    declared = declared_entries(builds["stack"])
    out = {"workload": workload, "rate": rate, "declared_entries": declared, "deployments": {}}
    base = None
    for kind, doc in builds.get("plan_docs", {}).items():
        base = planner_reserved(doc)[1]
    for kind, source in kinds.items():
        stack = builds["stacks"].get(kind)
        if stack is None:
            continue
        runs = runs_at(load, source, workload, rate) if rate is not None else []
        doc = builds.get("plan_docs", {}).get(kind)
        out["deployments"][kind] = {
            **totals(stack), "stack": stack, "measured_as": source if source != kind else None,
            "sources": sorted({e["source"] for e in stack if "group" in e}),
            "missing_entries": missing_entries(stack, declared),
            "rss_mib": interval([r.get("rss_mib_mean") if r else None for r in runs]),
            "rss_mib_peak": max([r["rss_mib_peak"] for r in runs if r and r.get("rss_mib_peak")], default=None),
            "planner_reserved": planner_reserved(doc)[0] if doc else base,
            "planner_deployment": (doc or {}).get("cluster"),
            "merged_pods": merged_pods(stack, runs)}
    unmerged = out["deployments"].get("unmerged", {}).get("rss_mib")
    for row in out["deployments"].values():
        row["rss_change"] = row["rss_mib"]["mean"] / unmerged["mean"] - 1 if unmerged and row["rss_mib"] else None
    return out


def merged_pods(stack, runs):
    """Each merged pod's memory request beside the resident memory its
    process held (the most of the rounds' means, MiB): whether the requests
    the planner made of the members' usage hold the merged process."""
    out = {}
    for e in stack:
        if "group" not in e:
            continue
        held = [(r.get("rss_mib_by_process") or {}).get(e["group"]) for r in runs if r]
        held = [x for x in held if x is not None]
        request = e["requests"]["memory"]
        out[e["name"]] = {"group": e["group"], "request_mib": request / MIB if request is not None else None,
                          "rss_mib": max(held) if held else None}
    return out
