"""bench/run's flags and its main: checks the tools, snapshots the source,
builds, runs the phases asked for, and writes the results."""

import argparse
import atexit
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import __doc__ as DESCRIPTION
from .app import app_load
from .appbuild import app_graph, app_merges, patched_watchdog
from .appchecks import checks
from .appmodel import deployment_stacks, projections, resources
from .appprofile import profile
from .builds import build_phase, check_fused_source, dispatch_phase, functions_build, fused_build, merged_lto_file, sizes
from . import genapp
from .config import (SOCIALNETWORK, APP_DEPLOYMENTS, APP_LADDER, APP_ROUNDS, APP_WORKLOADS, DEPLOYMENTS, GROUPS, HOP_FUNCTION, SLO_P99_MS, SUSTAIN_FRACTION, TARGETS, child_env, die, log, write_atomic)
from .context import Context
from .load import ensure_oha, gateway_hop, group_under_load
from . import httpmode
from .process import check_fixture, only_process, run_worker
from .processes import loadavg
from .report import machine, render_md
from .testbed import System, cpu_split
from .userloop import BASELINE, only_loop
from .watchdog import compare_watchdog, find_watchdog




def parse_rates(items):
    out = {}
    for item in items or []:
        g, _, rates = item.partition("=")
        try:
            values = [int(r) for r in rates.split(",")]
        except ValueError:
            values = []
        if g not in GROUPS or not values or min(values) <= 0:
            die(f"--rates {item}: expected pair=R1,R2,… or chain=R1,R2,… (positive whole req/s)")
        out[g] = values
    return out


def estimate(args):
    """A rough forecast of the run's length on 2 cores, from the last runs."""
    if args.only == "loop":
        # Per revision: the first command, then the chain's functions and the
        # steps; the application's graph, --plan and one by one, and the
        # baseline's --plan only with --app-cold. The minutes are the last
        # runs' (docs/PERFORMANCE.md, "The loop a user lives in").
        return f"about {2 * 6.7 + (9 if args.app_cold else 0):.0f} min"
    if args.only in ("process", "httpmode"):
        # fmerge and the merge, then start-up, the per-call rounds, two closed
        # loops, the fixed rates (about 4 from the ladder) in --repeat rounds
        # and the refining runs.
        # httpmode loads two chains, the whole one and the three-function one.
        chains = 2 if args.only == "httpmode" else 1
        runs = 2 * len(args.rates.get("pair", [0] * 4)) * args.repeat + 2 * (args.refine + 1)
        load = 20 + args.calls * 0.2 + chains * (2 * (args.closed_duration + 1.5) + runs * (args.duration + 1.5))
        return f"about {(60 + load) / 60:.0f} min (builds 1, runs {load / 60:.0f})"
    if args.only == "app":
        builds = 6 * 60 + (15 * 60 if args.app_cold else 0)  # functions, graph, whole groups; cold --plan and one by one
        per = len(APP_LADDER) * 0.7 + args.refine  # runs per deployment and workload, roughly
        load = args.app_rounds * len(args.app_deployments) * (20 + len(args.app_workloads) * per * (args.duration + 1.5))
        return f"about {(builds + load) / 60:.0f} min (builds {builds / 60:.0f}, load runs {load / 60:.0f})"
    only = args.only == "watchdog"
    builds = 0 if args.reuse_bins else 60 if only else 30 + sum(45 if g == "pair" else 70 for g in args.groups)
    if not args.reuse_bins and not args.quick and not only:
        builds += sum(115 if g == "pair" else 140 for g in args.groups) + 60  # cold builds, cold fused build
    dispatch = 0 if args.skip_dispatch else 90
    load = 0
    if not args.skip_load and not only:
        n = len(args.deployments)
        run = args.duration + 1.2  # oha start, Redis re-seed, the pause between runs
        rates = {g: len(args.rates[g]) if g in args.rates else 6 for g in args.groups}
        per_mode = 3 + 2 * run + sum(n * (3 + (args.closed_duration + 1.2) * args.closed_repeat + (rates[g] * args.repeat + args.refine + 1 + 1) * run)
                                     for g in args.groups)
        load = len(args.modes) * per_mode
    if not args.skip_load and args.watchdog:
        # Start-up, 2 warm-ups, 2 fixed-rate and 2 closed-loop runs per mode (of-watchdog's build: once).
        load += len(args.modes) * (5 + 2 * 3.2 + 2 * (args.duration + 1.7) + 2 * (args.closed_duration + 1.7))
    total = builds + dispatch + load
    return f"about {total / 60:.0f} min (builds {builds / 60:.0f}, dispatch bench {dispatch / 60:.1f}, load runs {load / 60:.0f})"


def parser(bench):
    ap = argparse.ArgumentParser(prog="bench/run", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", choices=["head", "worktree"], default="head",
                    help="build and measure a snapshot of HEAD in bench/out/src (default), or the work tree as it is")
    ap.add_argument("--quick", action="store_true", help="skip the cold builds (merge step and re-merge use the workspace's warm target dir)")
    ap.add_argument("--groups", default="pair,chain", help="which of pair,chain to run (default both)")
    ap.add_argument("--mode", choices=["shared", "pinned", "both"], default="both",
                    help="testbed for the load runs: shared (one nginx, nothing pinned), pinned (outside world and function "
                         "tier on separate CPUs, two nginx), or both (default)")
    ap.add_argument("--merged-lto", choices=["own", "off", "fat"], default="own",
                    help="fmerge build --lto of the merged deployment's binary, built after the timed merge steps (which use "
                         "fmerge's default, off): own (default), the release build, optimized across the group's own crates")
    ap.add_argument("--no-fused", action="store_true",
                    help="leave out the hand-fused deployment (package fmerge-fused in bench/fused); without this flag its "
                         "absence is an error")
    ap.add_argument("--control", action="store_true",
                    help="an A/A run: the merged deployment runs the hand-fused binary too, so that every merged ÷ fused "
                         "figure measures the testbed's noise alone (what a difference between merged and fused must exceed "
                         "to be told); its verdicts are n/a")
    ap.add_argument("--duration", type=int, default=5, help="seconds per fixed-rate run (default 5)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of runs: of each fixed rate, and of the closed loop unless --closed-repeat; the deployments in turn, in an order "
                         "that turns each round; the run with the median throughput or p50 is reported, every figure kept, and "
                         "merged ÷ fused judged on the rounds' pairs (default 1)")
    ap.add_argument("--closed-duration", type=int, default=5, help="seconds per closed-loop run (default 5)")
    ap.add_argument("--closed-repeat", type=int,
                    help="rounds of the closed loop alone, for more pairs of throughput than --repeat's (default: --repeat)")
    ap.add_argument("--hop-rate", type=int, default=500,
                    help="fixed rate of the one-hop runs (social-graph-get-followers direct vs through the gateway; default 500)")
    ap.add_argument("--connections", type=int, default=64, help="oha connections for fixed-rate runs (default 64)")
    ap.add_argument("--closed-connections", type=int, default=32, help="oha connections for closed-loop runs (default 32)")
    ap.add_argument("--rates", action="append", metavar="GROUP=R1,R2,…", help="fixed rates instead of the automatic ladder")
    ap.add_argument("--refine", type=int, default=3,
                    help="bisection steps per deployment to narrow down the highest sustained rate (default 3)")
    ap.add_argument("--nice", type=int, default=-10,
                    help="nice value for the dispatch bench and the load runs (default -10, over other builds; 0 to not change)")
    ap.add_argument("--nginx-workers", default="auto", help="nginx worker_processes (default auto = one per core)")
    ap.add_argument("--crit-time", type=float, default=3, help="criterion measurement time per bench, s (default 3)")
    ap.add_argument("--crit-warmup", type=float, default=1, help="criterion warm-up per bench, s (default 1)")
    ap.add_argument("--skip-load", action="store_true", help="no latency/throughput runs")
    ap.add_argument("--skip-dispatch", action="store_true", help="no criterion dispatch bench")
    ap.add_argument("--reuse-bins", action="store_true",
                    help="no builds at all: reuse the binaries of the last run in bench/out/bin (for debugging the bench)")
    ap.add_argument("--keep-builds", action="store_true", help="keep the cold target dirs under bench/out/build")
    ap.add_argument("--update-summary", action="store_true", help="then paste a summary of the results into docs/PERFORMANCE.md (bench/update-summary)")
    ap.add_argument("--results", help="write RESULTS.json and RESULTS.md (default bench/results, with --only KIND "
                                      "bench/results-KIND)")
    ap.add_argument("--render-only", action="store_true", help="only rewrite RESULTS.md from RESULTS.json")
    ap.add_argument("--only", choices=["watchdog", "app", "loop", "process", "httpmode"],
                    help="watchdog: only our runtime against of-watchdog in front of the same function (no merge, no "
                         "dispatch bench; a few minutes). app: only the whole socialNetwork application (the planner's "
                         "groups, one group per entry point, unmerged with and without of-watchdog) under DeathStarBench's "
                         "workloads, --app-rounds rounds, and the cold build of every group at once against one by one (about an hour). loop: only the "
                         "loop a user lives in, for --baseline and for HEAD, each on a fresh clone: the README's first "
                         "command, the merge step, the re-merge after a one-line edit, and the application's plan built "
                         "cold (about 40 min). process: only the pair in the watchdog-process form (bench/process-pair), each "
                         "function behind of-watchdog against fmerge's binary behind the real one, in a network and mount "
                         "namespace of its own (as root), and the cost of one call between members (a few minutes). "
                         "httpmode: the same for the chain of functions that serve HTTP themselves "
                         "(merger/tests/fixtures/httpmode), each behind of-watchdog in http mode")
    ap.add_argument("--calls", type=int, default=300,
                    help="--only process: rounds of the per-call runs (every kind once per round); --only httpmode: "
                         "calls of the hop's runs (default 300)")
    ap.add_argument("--process-worker", metavar="PLAN", help=argparse.SUPPRESS)
    ap.add_argument("--baseline", default=BASELINE, metavar="REV",
                    help=f"--only loop: the revision this source is measured against (default {BASELINE}, main as of "
                         "2026-11-23)")
    ap.add_argument("--app", choices=[SOCIALNETWORK["name"], genapp.NAME], default=SOCIALNETWORK["name"],
                    help="--only app: which application: socialNetwork's functions (default), or the generated one "
                         "(bench/fmbench/genapp.py: 43 functions, planned with --filter, the planner's out-of-sample "
                         "check; writes results-genapp.*)")
    ap.add_argument("--app-deployments",
                    help=f"--only app: which of {','.join(APP_DEPLOYMENTS)} to load (default all, with --app genapp "
                         f"{','.join(genapp.DEPLOYMENTS)}; unmerged is always first)")
    ap.add_argument("--app-workloads",
                    help=f"--only app: which of {','.join(APP_WORKLOADS)} to run (default both; --app genapp has "
                         f"{','.join(genapp.WORKLOADS)} alone)")
    ap.add_argument("--app-rates", action="append", metavar="WORKLOAD=R1,R2,…",
                    help="--only app: total fixed rates to climb instead of the default ladder")
    ap.add_argument("--app-rounds", type=int, default=APP_ROUNDS,
                    help="--only app: rounds of every deployment's runs, each from a fresh start; figures are the mean over "
                         f"rounds with an interval, and each round's projection uses another round's hop costs (at least 2; "
                         f"default {APP_ROUNDS})")
    ap.add_argument("--no-app-cold", action="store_true",
                    help="--only app: skip the two cold builds (every group at once, one by one; about 15 min)")
    ap.add_argument("--no-watchdog", action="store_true", help="leave the of-watchdog comparison out of the load runs")
    ap.add_argument("--of-watchdog", metavar="PATH",
                    help="the of-watchdog 0.11.6 binary (default: built by shared/tools/of-watchdog/build.sh, found above the repository)")
    return ap


def parse_args(argv, bench):
    """The flags, checked, with what follows from them: groups, rates,
    modes, deployments. Errors exit with a message naming the flag."""
    args = parser(bench).parse_args(argv)
    if args.results is None:
        args.results = str(bench / {"watchdog": "results-watchdog",
                                    "app": "results-genapp" if args.app == genapp.NAME else "results-app",
                                    "loop": "results-loop", "process": "results-process",
                                    "httpmode": "results-httpmode"}.get(args.only, "results"))
    if args.render_only:
        return args
    if args.repeat < 1:
        die(f"--repeat {args.repeat}: runs per deployment and rate, 1 or more")
    if args.closed_repeat is None:
        args.closed_repeat = args.repeat
    elif args.closed_repeat < 1:
        die(f"--closed-repeat {args.closed_repeat}: closed-loop runs per deployment, 1 or more")
    args.groups = [g for g in args.groups.split(",") if g]
    for g in args.groups:
        if g not in GROUPS:
            die(f"--groups: unknown group {g}")
    args.groups_for_build = args.groups
    args.rates = parse_rates(args.rates)
    args.modes = ["shared", "pinned"] if args.mode == "both" else [args.mode]
    args.deployments = [d for d in DEPLOYMENTS if not (d == "fused" and args.no_fused)]
    args.watchdog = not args.no_watchdog
    if args.control and (args.no_fused or args.skip_load or args.only):
        die("--control runs the hand-fused binary as merged too: it needs the load runs and the fused deployment "
            "(drop --no-fused, --skip-load and --only)")
    if args.only == "watchdog":
        if args.no_watchdog:
            die("--only watchdog and --no-watchdog contradict each other")
        if args.skip_load:
            die("--only watchdog is a load run: drop --skip-load")
        args.skip_dispatch = True
    if args.only == "app":
        parse_app_args(args)
    elif args.app != SOCIALNETWORK["name"]:
        die(f"--app {args.app} chooses the application of --only app: add --only app")
    if args.only == "loop":
        args.skip_load = args.skip_dispatch = True
        args.app_cold = not args.no_app_cold
    if args.only in ("process", "httpmode"):
        if args.skip_load or args.no_watchdog or args.reuse_bins:
            die(f"--only {args.only} builds and loads both deployments behind of-watchdog: drop --skip-load, --no-watchdog and --reuse-bins")
        if args.calls < 1:
            die(f"--calls {args.calls}: rounds of the per-call runs, 1 or more")
        args.skip_dispatch = True
        args.modes = []
    return args


def parse_app_args(args):
    """--only app's own flags, checked."""
    if args.skip_load:
        die("--only app is a load run: drop --skip-load")
    if args.mode == "shared":
        die("--only app runs on the pinned testbed: drop --mode shared")
    args.modes = ["pinned"]
    generated = args.app == genapp.NAME
    workloads = genapp.WORKLOADS if generated else APP_WORKLOADS
    deps = [d for d in (args.app_deployments or ",".join(genapp.DEPLOYMENTS if generated else APP_DEPLOYMENTS)).split(",") if d]
    for d in deps:
        if d not in APP_DEPLOYMENTS:
            die(f"--app-deployments: unknown deployment {d} (one of {', '.join(APP_DEPLOYMENTS)})")
    # Unmerged first: it is seeded and gives the replies the others must match.
    args.app_deployments = ["unmerged"] + [d for d in APP_DEPLOYMENTS if d in deps and d != "unmerged"]
    args.app_workloads = [w for w in (args.app_workloads or ",".join(workloads)).split(",") if w]
    for w in args.app_workloads:
        if w not in workloads:
            die(f"--app-workloads: unknown workload {w} (one of {', '.join(workloads)})")
    rates = {}
    for item in args.app_rates or []:
        w, _, values = item.partition("=")
        try:
            values = sorted(int(r) for r in values.split(","))
        except ValueError:
            values = []
        if w not in workloads or not values or values[0] <= 0:
            die(f"--app-rates {item}: expected WORKLOAD=R1,R2,… with WORKLOAD one of {', '.join(workloads)} "
                "(positive whole req/s)")
        rates[w] = values
    args.app_rates = rates
    if args.app_rounds < 2:
        die(f"--app-rounds {args.app_rounds}: at least 2 (each round's projection is priced with another round's hop costs)")
    args.app_cold = not args.no_app_cold
    args.watchdog = "watchdog" in args.app_deployments
    args.skip_dispatch = True


def main(root, argv=None):
    ctx = Context(root)
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv, ctx.bench)
    if args.process_worker:
        # --only process re-runs this script here, in its namespace.
        set_nice(args)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda s, f: sys.exit(128 + s))
        return run_worker(ctx, args, ctx.tools / "bin" / "oha")
    if args.render_only:
        res = Path(args.results)
        if not res.with_suffix(".json").is_file():
            die(f"--render-only: {res.with_suffix('.json')} does not exist: run bench/run first (or pass --results PATH)")
        write_atomic(res.with_suffix(".md"), render_md(json.loads(res.with_suffix(".json").read_text())))
        return
    atexit.register(ctx.procs.stop_all)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    check_tools(args)
    ctx.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log(f"estimated time: {estimate(args)}")
    rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ctx.root, capture_output=True, text=True).stdout.strip()
    R = {"started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), "argv": argv,
         "src": args.src, "src_rev": rev,
         "quick": args.quick, "control": args.control, "loadavg_start": loadavg(), "targets": TARGETS}
    oha = ensure_oha(ctx) if not args.skip_load else None
    if args.watchdog and not args.skip_load:
        args.of_watchdog = str(find_watchdog(ctx.root, args.of_watchdog))  # built (or refused) before any build of ours
    if args.only == "loop":
        R["loop"] = only_loop(ctx, args)
        return finish(ctx, args, R, t0)
    if args.src == "head":
        snapshot(ctx, args, rev)
    if args.only == "watchdog":
        return only_watchdog(ctx, args, R, oha, t0)
    if args.only == "app":
        return only_app(ctx, args, R, oha, t0)
    if args.only == "process":
        check_fixture(ctx)
        fmerge = fmerge_tool(ctx, args)
        R["nice"] = args.nice
        only_process(ctx, args, R, oha, fmerge, Path(args.of_watchdog))
        return finish(ctx, args, R, t0)
    if args.only == "httpmode":
        httpmode.check_fixture(ctx)
        fmerge = fmerge_tool(ctx, args)
        R["nice"] = args.nice
        httpmode.only_httpmode(ctx, args, R, oha, fmerge, Path(args.of_watchdog))
        return finish(ctx, args, R, t0)
    bins, fused = builds(ctx, args, R)
    set_nice(args)
    R["nice"] = args.nice
    if not args.skip_dispatch:
        R["dispatch"] = dispatch_phase(ctx, args)
    if not args.skip_load:
        R["load"] = load_phase(ctx, args, bins, fused, oha)
    finish(ctx, args, R, t0)


def check_tools(args):
    """What the run needs on this machine, said before anything starts."""
    for tool in ("redis-server", "nginx", "strip"):
        if not shutil.which(tool):
            die(f"{tool} is not installed (Debian: apt-get install -y redis-server nginx binutils)")
    if not Path("/usr/bin/time").exists():
        die("/usr/bin/time is not installed (Debian: apt-get install -y time)")
    if "pinned" in args.modes and not args.skip_load:
        if not shutil.which("taskset"):
            die("--mode pinned needs taskset (util-linux; Debian: apt-get install -y util-linux), or use --mode shared")
        cpu_split()  # enough CPUs?


def snapshot(ctx, args, rev):
    """Others may be editing the work tree: measure the last commit, as a
    snapshot (git archive keeps commit times as mtimes, so cargo sees an
    unchanged file as fresh from one snapshot to the next)."""
    ctx.src = ctx.out / "src"
    ctx.tool_target = ctx.out / "tool-target"
    if not args.reuse_bins:
        if ctx.src.exists():
            shutil.rmtree(ctx.src)
        ctx.src.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=ctx.root, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(ctx.src)], input=archive, check=True)
        log(f"measuring a snapshot of HEAD ({rev}) in {ctx.src.relative_to(ctx.root)}")


def builds(ctx, args, R):
    """fmerge, the merged binaries (timed: R["builds"]), the fused programs
    and the sizes; or, with --reuse-bins, the last run's binaries. Returns
    ({group: merged binary}, {group: fused binary})."""
    if "fused" in args.deployments and not args.skip_load and not args.reuse_bins:
        check_fused_source(ctx)
    fmerge = fmerge_tool(ctx, args)
    if args.reuse_bins:
        R["builds"] = None
        bins = {g: ctx.out / "bin" / f"{g}-merged" for g in args.groups}
        fused = {g: ctx.out / "bin" / f"fused-{g}" for g in args.groups} if "fused" in args.deployments and not args.skip_load else {}
        for g in args.groups:
            for b in [bins[g], ctx.out / "bin" / f"{g}-settings.json"] + [ctx.out / "bin" / "unmerged" / f for f in GROUPS[g]] + \
                     ([fused[g]] if fused else []):
                if not b.is_file():
                    die(f"--reuse-bins: {b} is missing; run once without it")
            ctx.settings[g] = json.loads((ctx.out / "bin" / f"{g}-settings.json").read_text())
        # Copies from before the mode was kept beside them say nothing.
        kept = {g: merged_lto_file(ctx, g) for g in args.groups}
        R["merged_lto"] = {g: f.read_text().strip() for g, f in kept.items() if f.is_file()}
    else:
        R["builds"], bins = build_phase(ctx, args, fmerge)
        R["merged_lto"] = {g: args.merged_lto for g in args.groups_for_build}
        prev = ctx.bench / "results.json"
        if args.quick and prev.is_file():
            # Keep the cold builds of the last full run, marked as such.
            try:
                old = json.loads(prev.read_text())
            except ValueError:
                old = {}
            for g, r in (old.get("builds") or {}).items():
                if g in R["builds"] and "cold_ratio" in r:
                    for k in ("cold_fmerge", "cold_cargo", "cold_ratio", "cold_cpu_ratio"):
                        if k in r:
                            R["builds"][g][k] = r[k]
                    R["builds"][g]["cold_measured"] = r.get("cold_measured") or old.get("started")
        fused = fused_build(ctx, args) if "fused" in args.deployments and not args.skip_load else {}
    R["sizes"] = sizes(ctx, bins) if not args.reuse_bins else None
    if args.control:
        log("--control: the merged deployment runs the hand-fused binary")
        bins = dict(fused)
    return bins, fused


def set_nice(args):
    if args.nice:
        # From here on (dispatch bench, load runs) the system under test, this
        # script's children, has priority over other work on the machine
        # (builds), which otherwise takes every cycle the bench leaves idle.
        try:
            os.setpriority(os.PRIO_PROCESS, 0, args.nice)
            log(f"running the measurements at nice {args.nice}")
        except PermissionError:
            log(f"cannot set nice {args.nice} (not root?): measuring at normal priority")
            args.nice = 0


def only_watchdog(ctx, args, R, oha, t0):
    """--only watchdog: the function alone (built unmerged with cargo), redis,
    the gateway, and of-watchdog in front of the function, in each mode."""
    if args.reuse_bins:
        if not (ctx.out / "bin" / "unmerged" / HOP_FUNCTION).is_file():
            die(f"--reuse-bins: {ctx.out / 'bin' / 'unmerged' / HOP_FUNCTION} is missing; run once without it")
    else:
        functions_build(ctx, [HOP_FUNCTION])
    set_nice(args)
    R["nice"] = args.nice
    run = ctx.run_dir
    if run.exists():
        shutil.rmtree(run)
    R["watchdog"] = {}
    for mode in args.modes:
        sysm = System(ctx, args, {}, {}, mode, groups=[])
        R["watchdog"][mode] = compare_watchdog(sysm, oha, args)
        ctx.procs.stop_all()
    finish(ctx, args, R, t0)


def fmerge_tool(ctx, args):
    """fmerge itself, built from the measured source (out/bin/fmerge)."""
    fmerge = ctx.out / "bin" / "fmerge"
    if not args.reuse_bins:
        log("cargo build --release -p fmerge")
        subprocess.run(["cargo", "build", "--release", "-p", "fmerge"], cwd=ctx.src, check=True,
                       env={**child_env(), "CARGO_TARGET_DIR": str(ctx.tool_target)})
        fmerge.parent.mkdir(parents=True, exist_ok=True)
        # The launcher runs fmerge-llvm from its own folder.
        for name in ("fmerge", "fmerge-llvm"):
            shutil.copy2(ctx.tool_target / "release" / name, fmerge.parent / name)
    return fmerge


def only_app(ctx, args, R, oha, t0):
    """--only app: the functions and their call graph; a profile run of the
    unmerged deployment the planner plans from; the merged deployments'
    builds; then every deployment under every workload on the pinned
    testbed."""
    fmerge = fmerge_tool(ctx, args)
    if args.reuse_bins:
        die("--only app builds what it measures: drop --reuse-bins")
    builds, timings = app_graph(ctx, fmerge, args.app)
    watchdog = patched_watchdog(ctx, args.of_watchdog) if args.watchdog else None
    set_nice(args)
    R["nice"] = args.nice
    run = ctx.run_dir
    if run.exists():
        shutil.rmtree(run)
    seeded = profile(ctx, args, builds, oha)
    app_merges(ctx, args, fmerge, builds, timings, seeded["metrics"])
    deployment_stacks(ctx, fmerge, builds, args.app_deployments)
    load = app_load(ctx, args, builds, oha, watchdog, seeded)
    load["profile"] = {"rate": seeded["rate"], "metrics": seeded["metrics"], "duration_s": args.duration}
    load["projection"] = projections(ctx, fmerge, builds, load)
    load["resources"] = resources(builds, load)
    load["checks"] = checks(load)
    R["app"] = {"builds": {k: v for k, v in builds.items() if k not in ("graph", "plan_docs")}, "timings": timings,
                "load": load}
    finish(ctx, args, R, t0)


def finish(ctx, args, R, t0):
    """Writes RESULTS.json and RESULTS.md (and the summary in docs/PERFORMANCE.md)."""
    R["machine"] = machine(ctx)
    R["loadavg_end"] = loadavg()
    R["finished"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    R["elapsed_s"] = round(time.time() - t0)
    res = Path(args.results)
    write_atomic(res.with_suffix(".json"), json.dumps(R, indent=2) + "\n")
    write_atomic(res.with_suffix(".md"), render_md(R))
    log(f"done in {R['elapsed_s']} s: {res.with_suffix('.json')} and {res.with_suffix('.md')}")
    if args.update_summary:
        subprocess.run([str(ctx.bench / "update-summary"), str(res.with_suffix(".md"))], check=True)


def load_phase(ctx, args, bins, fused, oha):
    run = ctx.run_dir
    if run.exists():
        shutil.rmtree(run)
    res = {"slo_p99_ms": SLO_P99_MS, "sustain_fraction": SUSTAIN_FRACTION, "nginx_workers": args.nginx_workers,
           "duration_s": args.duration, "repeat": args.repeat, "closed_repeat": args.closed_repeat,
           "closed_duration_s": args.closed_duration,
           "connections_fixed_rate": args.connections, "connections_closed_loop": args.closed_connections,
           "deployments": args.deployments, "modes": {}}
    for mode in args.modes:
        sysm = System(ctx, args, bins, fused, mode)
        m = {"cpus": {"outside": sysm.outside, "function_tier": sysm.tier} if mode == "pinned" else None,
             "nginx": {role: name for role, (name, _) in sysm.nginx.items()},
             "gateway_hop": gateway_hop(sysm, oha, args)}
        for group in args.groups:
            m[group] = group_under_load(sysm, oha, group, args)
        if args.watchdog:
            m["watchdog"] = compare_watchdog(sysm, oha, args)
        res["modes"][mode] = m
        ctx.procs.stop_all()
    return res
