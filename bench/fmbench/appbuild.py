"""The application benchmark's builds: every function of the application unmerged,
the call graph and the planner's groups (`fmerge graph`, `fmerge plan`),
one group per entry point merged whole, and what one `fmerge build --plan`
costs against building the same groups one by one, both from cold.

A group's binary replaces its caller's deployment; its callees stay deployed
for everybody else. fmerge's own JSON lines say which binary is which group's
and which variables its merged callees read, so the bench never copies
fmerge's naming rules."""

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

from .appstack import function_blocks
from .builds import functions_build, functions_target, timed
from .config import APP_BOUNDED_MEMORY, SOCIALNETWORK, child_env, die, log
from . import genapp


def stack_functions(stack):
    """The function names of a faas-cli stack file, in order."""
    names = [name for name, _ in function_blocks(stack)]
    if not names:
        die(f"{stack}: no functions found under `functions:`")
    return names


def closure(edges, entry):
    """entry and every function it reaches through calls whose callee is a
    literal name (an unknown callee is never guessed)."""
    seen, todo = [entry], [entry]
    while todo:
        f = todo.pop()
        for e in edges:
            if e["from"] == f and e.get("to") and e["to"] not in seen:
                seen.append(e["to"])
                todo.append(e["to"])
    return seen


def whole_plan(graph, entries, stack_rel):
    """A plan file with one group per entry point: the entry and everything it
    reaches, merged whole (the upper bound of merging along each path)."""
    known = {f["name"] for f in graph["functions"]}
    lines = [f'stack = "{stack_rel}"', ""]
    groups = []
    for entry in entries:
        if entry not in known:
            die(f"entry point {entry} is not in the call graph's functions")
        members = [f for f in closure(graph["edges"], entry) if f in known]
        if len(members) < 2:
            continue  # calls no one: nothing to merge
        groups.append(members)
        callees = ", ".join(f'"{c}"' for c in members[1:])
        lines += ["[[group]]", f'caller = "{members[0]}"', f"callees = [{callees}]", f'name = "{members[0]}-whole"', ""]
    return "\n".join(lines), groups


def read_plan(path):
    """The groups of a plan.toml: [(caller, [callees], name)]."""
    plan = tomllib.loads(Path(path).read_text())
    return [(g["caller"], list(g.get("callees", [])), g.get("name") or f"{g['caller']}-merged") for g in plan.get("group", [])]


def merged_groups(messages):
    """The groups one fmerge build reported (--message-format json): each
    `merged` line, with the `setting` lines printed before it."""
    out, settings = [], []
    for m in messages:
        if m.get("reason") == "setting":
            settings.append(m)
        elif m.get("reason") == "merged":
            out.append({"name": m["name"], "members": m["members"], "binary": m["binary"], "settings": settings})
            settings = []
    return out


def fmerge_json(ctx, tag, argv):
    """A timed fmerge run with --message-format json."""
    m, messages = timed(ctx, tag, [*argv, "--message-format", "json"])
    return m, messages


def keep(ctx, kind, groups):
    """Copies the merged binaries to out/bin/app/<kind>/ (nobody's rebuild
    swaps them under the bench) and returns the groups pointing there."""
    d = ctx.out / "bin" / "app" / kind
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for g in groups:
        dst = d / g["name"]
        shutil.copy2(g["binary"], dst)
        g["binary"] = str(dst)
    (d / "groups.json").write_text(json.dumps(groups, indent=1))
    return groups


def cold_builds(ctx, fmerge, stack, plan, plan_groups):
    """The same groups built from empty target dirs: one `fmerge build --plan`
    (one cargo build, groups merged in parallel), then one `fmerge build
    --config` per group after another in a second target dir (what a script
    or a CI job per group does on one machine). Returns the timings and the
    --plan build's groups."""
    dirs = {k: ctx.out / "build" / f"app-{k}" for k in ("plan", "one-by-one")}
    for d in dirs.values():
        if d.exists():
            shutil.rmtree(d)
    log("application: cold `fmerge build --plan` of the planner's groups (one cargo build)")
    together, messages = fmerge_json(ctx, "app-cold-plan", [fmerge, "build", "--plan", plan, "--target-dir", dirs["plan"]])
    together["timings"] = next((m for m in messages if m.get("reason") == "timings"), None)
    groups = merged_groups(messages)
    if len(groups) != len(plan_groups):
        die(f"fmerge build --plan reported {len(groups)} merged groups, the plan has {len(plan_groups)}")
    log(f"application: the same {len(plan_groups)} groups cold, one `fmerge build --config` after another")
    each = {}
    for caller, _, _ in plan_groups:
        each[caller], _ = fmerge_json(ctx, f"app-cold-group-{caller}",
                                      [fmerge, "build", "-f", stack, "--config", Path(plan).parent / f"{caller}.toml",
                                       "--target-dir", dirs["one-by-one"]])
    groups = keep(ctx, "planner", groups)  # before their target dir goes
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
    one_by_one = {"wall_s": sum(x["wall_s"] for x in each.values()),
                  "cpu_s": sum(x["cpu_s"] or 0 for x in each.values()),
                  "peak_rss_mib": max(x["peak_rss_mib"] or 0 for x in each.values()),
                  "groups": each}
    return {"groups": len(plan_groups), "plan": together, "one_by_one": one_by_one,
            "wall_ratio": one_by_one["wall_s"] / together["wall_s"] if together["wall_s"] else None}, groups


def plan(ctx, fmerge, calls, out, extra=(), metrics=()):
    """`fmerge plan` on the graph (under the traffic and usage between the
    scrapes `metrics`, if given; `extra` holds what the application's
    plan_args say to plan of it); returns the plan file and its groups."""
    if out.exists():
        shutil.rmtree(out)
    scrapes = [a for m in metrics for a in ("--metrics", str(m))]
    p = subprocess.run([str(fmerge), "plan", "--graph", str(calls), "--out", str(out), *scrapes, *extra],
                       cwd=ctx.src, env=child_env(), capture_output=True, text=True)
    if p.returncode != 0:
        die(f"fmerge plan {' '.join(extra)} failed: {p.stderr[-2000:]}")
    (out / "report.txt").write_text(p.stdout + p.stderr)
    return out / "plan.toml", read_plan(out / "plan.toml"), p.stdout


def app_graph(ctx, fmerge, app=SOCIALNETWORK["name"]):
    """The application `app` (socialnetwork, or genapp written out first),
    its functions, the seeder and the static call graph. Returns (builds,
    timings), the rest of the builds to follow (app_merges)."""
    spec = genapp.application(ctx) if app == genapp.NAME else SOCIALNETWORK
    stack = ctx.src / spec["stack"]  # an absolute path stays as it is
    names = stack_functions(stack)
    functions_build(ctx, names, cwd=ctx.src / spec["workspace"])
    if spec["seed"] == "seeder":
        seeder_build(ctx)
    work = ctx.out / "app"
    work.mkdir(parents=True, exist_ok=True)
    log("application: fmerge graph (the static call graph from the functions' IR)")
    timings = {}
    timings["graph"], _ = timed(ctx, "app-graph", [fmerge, "graph", "-f", stack, "--out", work / "callgraph", "--picture",
                                                   "none", "--target-dir", functions_target(ctx), "-q"])
    graph = json.loads((work / "callgraph" / "calls.json").read_text())
    return {"application": spec, "functions": names, "stack": str(stack), "graph": graph, "plan_files": {}}, timings


def app_merges(ctx, args, fmerge, builds, timings, metrics):
    """Every merged deployment's plan and binaries: the planner's (default
    constraints) and the bounded one planned from the unmerged deployment's
    scrapes `metrics` (its traffic and each function's usage, as a team
    plans from its cluster), and one group per entry point merged whole."""
    stack, target, work = Path(builds["stack"]), functions_target(ctx), ctx.out / "app"
    spec = builds["application"]
    calls = work / "callgraph" / "calls.json"
    log(f"application: fmerge plan {' '.join(spec['plan_args'] + ['(default constraints, the profile’s scrapes)'])}")
    plan_file, plan_groups, report = plan(ctx, fmerge, calls, work / "plan", spec["plan_args"], metrics)
    builds.update({"plan_groups": plan_groups, "plan_report": report, "profile_metrics": [str(m) for m in metrics]})
    builds["plan_files"]["planner"] = str(plan_file)
    if args.app_cold:
        timings["cold"], planner = cold_builds(ctx, fmerge, stack, plan_file, plan_groups)
    else:
        log("application: fmerge build --plan (the planner's groups; warm: --no-app-cold)")
        _, messages = fmerge_json(ctx, "app-plan", [fmerge, "build", "--plan", plan_file, "--target-dir", target])
        planner = keep(ctx, "planner", merged_groups(messages))
    builds["planner"] = planner
    if "bounded" in args.app_deployments:
        log(f"application: fmerge plan --max-memory {APP_BOUNDED_MEMORY}, and its groups")
        bounded_file, builds["bounded_groups"], builds["bounded_report"] = plan(
            ctx, fmerge, calls, work / "plan-bounded", ("--max-memory", APP_BOUNDED_MEMORY, *spec["plan_args"]), metrics)
        _, messages = fmerge_json(ctx, "app-bounded", [fmerge, "build", "--plan", bounded_file, "--target-dir", target])
        builds["bounded"] = keep(ctx, "bounded", merged_groups(messages))
        builds["plan_files"]["bounded"] = str(bounded_file)
    if "whole" in args.app_deployments:
        log("application: fmerge build --plan with one group per entry point, merged whole")
        text, _ = whole_plan(builds["graph"], spec["entries"], stack.resolve())
        whole_file = work / "whole" / "plan.toml"
        whole_file.parent.mkdir(exist_ok=True)
        whole_file.write_text(text)
        timings["whole"], messages = fmerge_json(ctx, "app-whole", [fmerge, "build", "--plan", whole_file, "--target-dir", target])
        builds["whole"] = keep(ctx, "whole", merged_groups(messages))
        builds["plan_files"]["whole"] = str(whole_file)
    return builds, timings


def seeder_build(ctx):
    """The data seeder (fmerge-testkit's `seed`), copied to out/bin."""
    target = functions_target(ctx)
    log("cargo build --release -p fmerge-testkit --bin seed (untimed)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "fmerge-testkit", "--bin", "seed", "--target-dir", str(target)],
                   cwd=ctx.src, env=child_env(), check=True)
    shutil.copy2(target / "release" / "seed", ctx.out / "bin" / "seed")


def patched_watchdog(ctx, real):
    """of-watchdog 0.11.6 with one change, for deployment (b): its metrics
    port read from `metrics_port` instead of fixed at 8081 on every interface,
    so that 26 of them can run on one host (in OpenFaaS each has its pod's own
    network namespace). Built from the same vendored source and Go as
    shared/tools/of-watchdog/build.sh (`real` is what that printed); the request
    path is untouched."""
    out = ctx.out / "bin" / "of-watchdog-metrics-port"
    if out.is_file():
        return out
    tools = Path(real).resolve().parent.parent  # <out>/bin/of-watchdog -> <out>
    gos = sorted(tools.glob("venv/lib/python3*/site-packages/go/bin/go"))
    tarball = next((d / "shared" / "tools" / "of-watchdog" / "of-watchdog-0.11.6-src.tar.gz"
                    for d in [ctx.root.resolve(), *ctx.root.resolve().parents]
                    if (d / "shared" / "tools" / "of-watchdog" / "of-watchdog-0.11.6-src.tar.gz").is_file()), None)
    if not gos or tarball is None:
        die(f"cannot rebuild of-watchdog with a metrics_port setting: Go under {tools}/venv or the source tarball is missing")
    src = ctx.out / "of-watchdog-src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(tarball), "-C", str(src)], check=True)
    config = src / "of-watchdog-0.11.6" / "config" / "config.go"
    text = config.read_text()
    fixed = "MetricsPort:         8081,"
    if text.count(fixed) != 1:
        die(f"{config}: expected one `{fixed}` to change")
    config.write_text(text.replace(fixed, 'MetricsPort:         getInt(envMap, "metrics_port", 8081),'))
    env = {**child_env(), "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=vendor", "GOPROXY": "off", "CGO_ENABLED": "0",
           "GOCACHE": str(tools / "gocache")}
    subprocess.run([str(gos[0]), "build", "-ldflags", "-s -w -X main.Version=0.11.6-metrics-port", "-o", str(out), "."],
                   cwd=src / "of-watchdog-0.11.6", env=env, check=True)
    return out
