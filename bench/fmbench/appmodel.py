"""The planner's own figures beside what the application bench measured:
per entry point, the p50 gain `fmerge plan` projects for the groups a
deployment runs (under the traffic and hop costs scraped from the unmerged
deployment's runtimes) against the p50 gain measured; and per deployment, the
memory and cpu it reserves as `fmerge build` writes the merged stack, beside
what plan.json says, and the RSS it used under load."""

import json
import subprocess
from pathlib import Path

from .app import common_rows
from .appreport import profile_rate
from .config import APP_WORKLOADS, TARGETS, child_env, die, log

# plan.json's `reserved` figures, and the calls.json key each sums.
RESERVED = (("memory limits", "memory_bytes"), ("cpu limits", "cpu"), ("memory requests", "requests_memory_bytes"),
            ("cpu requests", "requests_cpu"))


def evaluate(ctx, fmerge, calls, plan_file, out, scrapes=()):
    """`fmerge plan --evaluate`: the planner's figures for exactly the groups
    of plan_file (under the traffic between two scrapes, if given); returns
    its plan.json."""
    argv = [str(fmerge), "plan", "--graph", str(calls), "--evaluate", str(plan_file), "--out", str(out)]
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


def agreement(projected, measured, tolerance=TARGETS["app_projection_tolerance"]):
    """projected ÷ measured, and whether it lies within ±tolerance of 1 (a
    gain measured at 0 or below, or none projected, is a miss)."""
    if projected is None or measured is None or measured <= 0 or projected <= 0:
        return None, False
    r = projected / measured
    return r, abs(r - 1) <= tolerance


def projections(ctx, fmerge, builds, load):
    """Per merged deployment, workload, rate both it and unmerged sustained,
    and entry point: the projected p50 gain (with the hop costs of the
    unmerged run at that rate) beside the measured one."""
    calls = ctx.out / "app" / "callgraph" / "calls.json"
    rows = []
    for kind, plan_file in builds["plan_files"].items():
        for workload in APP_WORKLOADS:
            for rate, mine, base in common_rows(load, workload, kind, "unmerged"):
                if not base.get("metrics"):
                    continue
                out = ctx.out / "app" / "projection" / f"{kind}-{workload}-{rate}"
                gains = entry_gains(evaluate(ctx, fmerge, calls, plan_file, out, base["metrics"]))
                for e, x in mine["entries"].items():
                    measured = base["entries"][e]["p50_ms"] - x["p50_ms"] if x["p50_ms"] is not None and \
                        base["entries"][e]["p50_ms"] is not None else None
                    projected, most = gains.get(e, (None, None))
                    r, within = agreement(projected, measured)
                    rows.append({"deployment": kind, "workload": workload, "rate": rate, "entry": e,
                                 "unmerged_p50_ms": base["entries"][e]["p50_ms"], "p50_ms": x["p50_ms"],
                                 "measured_gain_ms": measured, "projected_gain_ms": projected,
                                 "projected_gain_max_ms": most, "ratio": r, "within": within})
    log(f"app: projected against measured p50 gains: {sum(r['within'] for r in rows)} of {len(rows)} within "
        f"±{100 * TARGETS['app_projection_tolerance']:.0f}%")
    return rows


def reserved(functions, groups):
    """What a deployment reserves as `fmerge build` writes the merged stack:
    every function's own entry (callees stay deployed) and, per group, its
    callees' figures added to its caller's entry. {what: bytes or cores}
    for the figures every function sets."""
    by = {f["name"]: f for f in functions}
    out = {}
    for what, key in RESERVED:
        if any(f.get(key) is None for f in functions):
            continue
        out[what] = sum(f[key] for f in functions) + sum(by[m][key] for g in groups for m in g["members"][1:])
    return out


def planner_reserved(doc):
    """{what: after} of a plan.json, and {what: before}: unmerged's."""
    return {r["what"]: r["after"] for r in doc["reserved"]}, {r["what"]: r["before"] for r in doc["reserved"]}


def memory(ctx, fmerge, builds, load, workload="mixed"):
    """Per deployment: the RSS of its function tier under load (at the
    highest rate every deployment sustained), what it reserves, and what
    the planner's plan.json says it reserves."""
    rate, runs = profile_rate(load, workload) if any(workload in d for d in load["deployments"].values()) else (None, {})
    calls = ctx.out / "app" / "callgraph" / "calls.json"
    functions = builds["graph"]["functions"]
    out = {"workload": workload, "rate": rate, "deployments": {}}
    base_planner = None
    for kind, plan_file in builds["plan_files"].items():
        doc = evaluate(ctx, fmerge, calls, plan_file, ctx.out / "app" / "reserved" / kind)
        totals, base_planner = planner_reserved(doc)
        out["deployments"][kind] = {"planner_reserved": totals}
    for kind, d in load["deployments"].items():
        r = runs.get(kind) or {}
        groups = builds.get(kind, []) if kind in builds["plan_files"] else []
        row = out["deployments"].setdefault(kind, {"planner_reserved": base_planner})
        row.update({"rss_mib_mean": r.get("rss_mib_mean"), "rss_mib_peak": r.get("rss_mib_peak"),
                    "rss_samples": r.get("rss_samples"), "reserved": reserved(functions, groups)})
        for same in d.get("same_as", []):
            out["deployments"][same].update({k: v for k, v in row.items() if k != "planner_reserved"})
            out["deployments"][same]["reserved"] = reserved(functions, builds.get(same, []))
            out["deployments"][same]["measured_as"] = kind
    out["deployments"] = {k: v for k, v in out["deployments"].items() if "reserved" in v}
    base = out["deployments"].get("unmerged", {}).get("rss_mib_mean")
    for row in out["deployments"].values():
        row["rss_change"] = row["rss_mib_mean"] / base - 1 if base and row.get("rss_mib_mean") else None
    return out
