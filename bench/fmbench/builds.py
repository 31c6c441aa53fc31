"""Builds and what they cost: fmerge build (cold, the merge step alone, the
merge cache hit, the warm re-merge, at -j 1 and -j <cores>) against cargo,
the hand-fused programs, binary sizes, and the criterion dispatch bench."""

import datetime
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from .config import FUSED_PACKAGE, GROUPS, TRIPLE, child_env, die, log
from .processes import loadavg


def parse_time_v(path):
    text = Path(path).read_text(errors="replace")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    secs = 0.0
    if wall:
        for part in wall.group(1).split(":"):
            secs = secs * 60 + float(part)
    user = re.search(r"User time \(seconds\): ([\d.]+)", text)
    system = re.search(r"System time \(seconds\): ([\d.]+)", text)
    cpu = float(user.group(1)) + float(system.group(1)) if user and system else None
    return secs, (int(rss.group(1)) / 1024.0 if rss else None), cpu


def timed(ctx, tag, argv, env=None, cwd=None, check=True):
    """Runs argv (in `cwd`, else the measured source) under /usr/bin/time -v;
    returns wall s, peak RSS MiB, stdout. A failure ends the run, or, with
    check=False, returns (None, the log's tail)."""
    logs = ctx.out / "build-logs"
    logs.mkdir(parents=True, exist_ok=True)
    tv = logs / f"{tag}.time"
    log(f"  {tag}: {' '.join(str(a) for a in argv)}")
    load = loadavg()
    with open(logs / f"{tag}.log", "wb") as err:
        p = subprocess.run(["/usr/bin/time", "-v", "-o", str(tv)] + [str(a) for a in argv], cwd=cwd or ctx.src,
                           env={**child_env(), **(env or {})}, stdout=subprocess.PIPE, stderr=err)
    if p.returncode != 0:
        if not check:
            return None, (logs / f"{tag}.log").read_text(errors="replace")[-1500:]
        die(f"{tag} failed; see {logs / (tag + '.log')}")
    wall, rss, cpu = parse_time_v(tv)
    text = (logs / f"{tag}.log").read_text(errors="replace")
    lines = p.stdout.decode().strip().splitlines()
    # fmerge's --message-format json: one object per line.
    messages = [json.loads(l) for l in lines if l.startswith("{")]
    stages = {m["stage"]: m["seconds"] for m in messages if m.get("reason") == "stage"}
    lock_wait = "Blocking waiting for file lock" in text
    log(f"  {tag}: {wall:.1f} s wall, {rss:.0f} MiB peak RSS" + (" (waited for a cargo lock)" if lock_wait else ""))
    return {"wall_s": wall, "peak_rss_mib": rss, "cpu_s": cpu, "loadavg_before": load, "fmerge_stages_s": stages or None,
            "waited_for_cargo_lock": lock_wait}, messages


def fmerge_cargo(ctx, fmerge, group, target_dir, tag, force=False, jobs=None, lto=None):
    funcs = GROUPS[group]
    out = ctx.out / "bin" / group
    # Our own name, so that our work dir (<target>/fmerge/work/<name>) is not
    # shared with anybody else's merge of the same functions.
    argv = [fmerge, "build", *funcs, "--manifest-path", ctx.src / "Cargo.toml", "--name", f"bench-{group}-merged", "--out", out,
            "--message-format", "json"]
    if force:
        argv.append("--force")  # defeat fmerge's merge cache: measure the merge itself
    if jobs is not None:
        argv += ["-j", str(jobs)]  # codegen threads (and cargo's jobs)
    if target_dir is not None:
        argv += ["--target-dir", target_dir]
    if lto is not None:
        argv += ["--lto", lto]
    m, messages = timed(ctx, tag, argv)
    m["jobs"] = jobs
    done = [x for x in messages if x.get("reason") == "merged"]
    if not done or not Path(done[-1]["binary"]).is_file():
        die(f"fmerge build printed no merged binary: {messages[-1:]}")
    ctx.settings[group] = [x for x in messages if x.get("reason") == "setting"]
    # Kept beside the binaries, for --reuse-bins.
    (ctx.out / "bin").mkdir(parents=True, exist_ok=True)
    (ctx.out / "bin" / f"{group}-settings.json").write_text(json.dumps(ctx.settings[group]))
    return m, Path(done[-1]["binary"])


def job_counts():
    """The merge step's codegen threads (`-j`) measured side by side: 1 and
    one per core (fmerge's default)."""
    cores = os.cpu_count() or 1
    return [1, cores] if cores > 1 else [1]


def warm_target(ctx, args):
    """The persistent target dir of --quick runs: ours for a snapshot, the
    workspace's own (None: fmerge's default) for a --quick run of the work tree."""
    return ctx.out / "build" / "warm" if (ctx.src != ctx.root or not args.quick) else None


def merge_steps(ctx, fmerge, group, target, touched):
    """The merge step (cargo fresh) and the warm re-merge (one function
    touched), each at every job count, plus the merge cache hit. Returns the
    measurements and the binary of the last build (-j <cores>, the default)."""
    r = {"merge_step": {}, "warm_remerge": {}}
    jobs = job_counts()
    # fmerge keeps the binary when no bitcode changed (its merge cache);
    # --force makes it merge again.
    for n in jobs:
        log(f"{group}: merge step alone, -j {n} (fmerge build with cargo fresh, merge cache defeated)")
        r["merge_step"][str(n)], _ = fmerge_cargo(ctx, fmerge, group, target, f"{group}-merge-step-j{n}", force=True, jobs=n)
    log(f"{group}: re-merge with nothing changed (fmerge's merge cache)")
    r["noop_remerge"], _ = fmerge_cargo(ctx, fmerge, group, target, f"{group}-noop-remerge", jobs=jobs[-1])
    for n in jobs:
        log(f"{group}: warm re-merge, -j {n}, after touching {touched.relative_to(ctx.src)} (cargo rebuilds it; merge cache defeated)")
        os.utime(touched)
        r["warm_remerge"][str(n)], binary = fmerge_cargo(ctx, fmerge, group, target, f"{group}-warm-remerge-j{n}", force=True, jobs=n)
    r["jobs"] = jobs
    return r, binary


def build_phase(ctx, args, fmerge):
    """Builds the merged binaries (timing what the issue asks for); returns
    their paths, the unmerged binaries' paths, and the measurements."""
    res = {}
    bins = {}
    touched = ctx.src / "functions" / "social-graph-get-followers" / "src" / "main.rs"
    for group in args.groups_for_build:
        r = {}
        if args.quick:
            target = warm_target(ctx, args)
            log(f"{group}: fmerge build (untimed, so that cargo is fresh)")
            fmerge_cargo(ctx, fmerge, group, target, f"{group}-prime")
        else:
            target = ctx.out / "build" / f"{group}-fmerge"
            cargo_target = ctx.out / "build" / f"{group}-cargo"
            for d in (target, cargo_target):
                if d.exists():
                    shutil.rmtree(d)
            log(f"{group}: cold fmerge build into an empty {target.relative_to(ctx.root)}")
            r["cold_fmerge"], _ = fmerge_cargo(ctx, fmerge, group, target, f"{group}-cold-fmerge")
            log(f"{group}: cold cargo build --release of the same functions into {cargo_target.relative_to(ctx.root)}")
            pkgs = [a for f in GROUPS[group] for a in ("-p", f)]
            r["cold_cargo"], _ = timed(ctx, f"{group}-cold-cargo", ["cargo", "build", "--release", *pkgs, "--target-dir", cargo_target])
            r["cold_ratio"] = r["cold_fmerge"]["wall_s"] / r["cold_cargo"]["wall_s"]
            r["cold_cpu_ratio"] = r["cold_fmerge"]["cpu_s"] / r["cold_cargo"]["cpu_s"]
            r["cold_measured"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
            if not args.keep_builds:
                shutil.rmtree(cargo_target, ignore_errors=True)
        steps, binary = merge_steps(ctx, fmerge, group, target, touched)
        r.update(steps)
        if args.merged_lto != "off":
            # The loop's steps above use fmerge's default; the merged
            # deployment runs the binary a release image would ship.
            log(f"{group}: release merge step, --lto {args.merged_lto} (the merged deployment's binary; merge cache defeated)")
            r["release_merge"], binary = fmerge_cargo(ctx, fmerge, group, target, f"{group}-release-merge", force=True,
                                                      lto=args.merged_lto)
        r["target_dir"] = str((target or ctx.root / "target").relative_to(ctx.root))
        res[group] = r
        build_bins = (target or ctx.root / "target") / "fmerge" / "build" / TRIPLE / "release"
        # Copies, so that nobody's rebuild swaps a binary under the running bench.
        keep = ctx.out / "bin" / "unmerged"
        keep.mkdir(parents=True, exist_ok=True)
        for f in GROUPS[group]:
            shutil.copy2(build_bins / f, keep / f)
        merged_copy = ctx.out / "bin" / f"{group}-merged"
        shutil.copy2(binary, merged_copy)
        # Beside the copy, so that --reuse-bins can say which build it runs.
        merged_lto_file(ctx, group).write_text(args.merged_lto + "\n")
        bins[group] = merged_copy
        if not args.quick and not args.keep_builds:
            # The last group's dir (the chain's holds the pair's functions
            # too) becomes the warm target dir of later --quick runs.
            warm = ctx.out / "build" / "warm"
            if group == args.groups_for_build[-1]:
                shutil.rmtree(warm, ignore_errors=True)
                target.rename(warm)
            else:
                shutil.rmtree(target, ignore_errors=True)
    return res, bins


def merged_lto_file(ctx, group):
    """Where the `fmerge build --lto` mode of the merged binary's copy is kept."""
    return ctx.out / "bin" / f"{group}-merged.lto"


def check_fused_source(ctx):
    """The hand-fused baseline must be there (said before any build, not after)."""
    manifest = ctx.src / "bench" / "fused" / "Cargo.toml"
    if not manifest.is_file():
        where = "the snapshot of HEAD (commit it, or use --src worktree)" if ctx.src != ctx.root else "the work tree"
        die(f"the hand-fused baseline is missing: no {manifest.relative_to(ctx.src)} (package {FUSED_PACKAGE}) in {where}; "
            "pass --no-fused to benchmark without it")


def fused_build(ctx, args):
    """Builds the hand-fused programs (package fmerge-fused, bench/fused) with
    cargo's release profile, untimed, into the warm target dir; returns
    {group: copy of its binary}."""
    check_fused_source(ctx)
    target = warm_target(ctx, args) or ctx.root / "target"
    log(f"cargo build --release -p {FUSED_PACKAGE} (untimed) into {target.relative_to(ctx.root)}")
    logf = ctx.out / "build-logs" / "fused.log"
    logf.parent.mkdir(parents=True, exist_ok=True)
    with open(logf, "wb") as f:
        p = subprocess.run(["cargo", "build", "--release", "-p", FUSED_PACKAGE, "--target-dir", str(target)], cwd=ctx.src,
                           env=child_env(), stdout=f, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        die(f"cargo build -p {FUSED_PACKAGE} failed; see {logf}")
    out = {}
    for group in args.groups:
        built = target / "release" / f"fused-{group}"
        if not built.is_file():
            die(f"{FUSED_PACKAGE} built no binary fused-{group} (looked for {built})")
        out[group] = ctx.out / "bin" / f"fused-{group}"
        shutil.copy2(built, out[group])  # a copy: nobody's rebuild swaps it under the bench
    return out


def functions_target(ctx):
    """The target dir of the functions' plain cargo builds and the
    application's merges: the warm one for a snapshot, the workspace's own
    for the work tree."""
    return ctx.out / "build" / "warm" if ctx.src != ctx.root else ctx.root / "target"


def functions_build(ctx, names, cwd=None):
    """Builds functions unmerged with plain `cargo build --release` (untimed;
    for --only watchdog, which needs no merge): into the warm target dir for a
    snapshot, the workspace's own for the work tree, from the workspace in
    `cwd` (default the source's). Copies them to out/bin/unmerged, where the
    testbed starts them from."""
    target = functions_target(ctx)
    pkgs = [a for f in names for a in ("-p", f)]
    log(f"cargo build --release {' '.join(pkgs)} (untimed) into {target.relative_to(ctx.root)}")
    logf = ctx.out / "build-logs" / "functions.log"
    logf.parent.mkdir(parents=True, exist_ok=True)
    with open(logf, "wb") as f:
        p = subprocess.run(["cargo", "build", "--release", *pkgs, "--target-dir", str(target)], cwd=cwd or ctx.src, env=child_env(),
                           stdout=f, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        die(f"cargo build {' '.join(pkgs)} failed; see {logf}")
    keep = ctx.out / "bin" / "unmerged"
    keep.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy2(target / "release" / name, keep / name)  # a copy: nobody's rebuild swaps it under the bench


def sizes(ctx, bins):
    res = {}
    for group, merged in bins.items():
        unmerged = [ctx.out / "bin" / "unmerged" / f for f in GROUPS[group]]

        def stripped(p):
            tmp = ctx.out / "bin" / "stripped.tmp"
            subprocess.run(["strip", "-s", "-o", str(tmp), str(p)], check=True)
            n = tmp.stat().st_size
            tmp.unlink()
            return n

        res[group] = {
            "merged_bytes": merged.stat().st_size,
            "unmerged_sum_bytes": sum(p.stat().st_size for p in unmerged),
            "unmerged_bytes": {p.name: p.stat().st_size for p in unmerged},
            "merged_stripped_bytes": stripped(merged),
            "unmerged_sum_stripped_bytes": sum(stripped(p) for p in unmerged),
        }
        res[group]["ratio"] = res[group]["merged_bytes"] / res[group]["unmerged_sum_bytes"]
        res[group]["stripped_ratio"] = res[group]["merged_stripped_bytes"] / res[group]["unmerged_sum_stripped_bytes"]
    return res




def dispatch_phase(ctx, args):
    crit = ctx.out / "criterion"
    if crit.exists():
        shutil.rmtree(crit)
    log("dispatch: cargo bench -p fmerge-runtime --bench dispatch")
    logf = ctx.out / "dispatch.log"
    with open(logf, "wb") as f:
        p = subprocess.run(
            ["cargo", "bench", "-p", "fmerge-runtime", "--bench", "dispatch", "--",
             "--warm-up-time", str(args.crit_warmup), "--measurement-time", str(args.crit_time)],
            cwd=ctx.src, env={**child_env(), "CRITERION_HOME": str(crit), "CARGO_TARGET_DIR": str(ctx.tool_target)},
            stdout=f, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        die(f"the dispatch bench failed; see {logf}")
    res = {}
    for d in sorted((crit / "dispatch").iterdir()):
        est = d / "new" / "estimates.json"
        if not est.is_file():
            continue
        e = json.loads(est.read_text())
        res[d.name] = {
            "mean_ns": e["mean"]["point_estimate"],
            "mean_ci95_ns": [e["mean"]["confidence_interval"]["lower_bound"], e["mean"]["confidence_interval"]["upper_bound"]],
            "median_ns": e["median"]["point_estimate"],
        }
    need = ["direct_async_fn", "direct_entry", "invoke_merged_first_of_8", "invoke_merged_last_of_8", "invoke_http_loopback"]
    missing = [n for n in need if n not in res]
    if missing:
        die(f"criterion wrote no estimates for {missing}")
    out = {"benches": res, "loadavg_after": loadavg()}
    inv = max(res["invoke_merged_first_of_8"]["mean_ns"], res["invoke_merged_last_of_8"]["mean_ns"])
    out["overhead_vs_direct_async_fn_ns"] = inv - res["direct_async_fn"]["mean_ns"]
    out["overhead_vs_direct_entry_ns"] = inv - res["direct_entry"]["mean_ns"]
    out["http_over_merged"] = res["invoke_http_loopback"]["mean_ns"] / res["invoke_merged_first_of_8"]["mean_ns"]
    return out
