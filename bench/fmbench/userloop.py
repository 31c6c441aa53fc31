"""--only loop: the loop a user lives in, for this source and for a baseline
revision (default: BASELINE, the source the loop's goals were set
against), both in the same run on the same machine: the README's first
command from a fresh clone, the merge step with a cold object cache, the
re-merge after a one-line edit of a callee, and the application's default
plan built cold with `fmerge build --plan` (per stage, and against one group
after another)."""

import os
import re
import shutil
import statistics
import subprocess

from .appbuild import cold_builds, plan
from .appreport import f, render_stages
from .builds import timed
from .config import APP_STACK, GROUPS, child_env, die, log
from .load import ratio

# The source the loop's goals were set against, so that a run compares with
# the figures they start from (docs/PERFORMANCE.md, "The loop a user lives in").
BASELINE = "9894550"
# The README's first command merges the pair.
FIRST = GROUPS["pair"]
# The callee each group's one-line edit goes into.
EDITED = {"pair": "social-graph-get-followers", "chain": "url-shorten"}
# Runs per step; the median is reported.
RUNS = 3


def commit_of(root, rev):
    """The full hash of the commit `rev` names in the repository at `root`,
    or None if it names none."""
    p = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=root,
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def baseline_commit(root, rev, head):
    """--baseline's commit, said before anything is built: one that exists
    and is not HEAD itself."""
    full = commit_of(root, rev)
    if full is None:
        die(f"--baseline {rev}: no such commit in {root} (a hash, tag or branch this clone has; "
            f"`git fetch` it, or leave --baseline out for {BASELINE})")
    if full == head:
        die(f"--baseline {rev} is HEAD itself: name an older revision")
    return full


def clone(ctx, rev, label):
    """A fresh clone of the repository at `rev`: no target dir, its own."""
    d = ctx.out / "loop" / label
    if d.exists():
        shutil.rmtree(d)
    d.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ctx.root), str(d)], check=True)
    subprocess.run(["git", "checkout", "--quiet", "--detach", rev], cwd=d, check=True)
    full = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=d, capture_output=True, text=True, check=True)
    return d, full.stdout.strip()


def in_clone(d):
    """The environment of every run in clone `d`: its own target dir (the
    default), whatever CARGO_TARGET_DIR the caller's shell sets."""
    return {"CARGO_TARGET_DIR": str(d / "target")}


def first_command(ctx, d, label):
    """The README's first command in a fresh clone, cold target dir, warm
    cargo registry (`cargo fetch` first, untimed)."""
    subprocess.run(["cargo", "fetch"], cwd=d, env={**child_env(), **in_clone(d)}, check=True, capture_output=True)
    log(f"{label}: the README's first command, cold")
    m, _ = timed(ctx, f"loop-{label}-first-command",
                 ["cargo", "run", "--release", "-p", "fmerge", "--", "build", *FIRST], env=in_clone(d), cwd=d)
    text = (ctx.out / "build-logs" / f"loop-{label}-first-command.log").read_text(errors="replace")
    # Cargo's first "Finished" line is fmerge's own build.
    own = re.search(r"Finished `release` profile.* in (?:(\d+)m )?([\d.]+)s", text)
    m["fmerge_build_s"] = (int(own.group(1) or 0) * 60 + float(own.group(2))) if own else None
    return m


def median_of(runs):
    """One figure per step: the median wall, the highest peak RSS, the
    stages of the median run, and the runs themselves."""
    median = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
    return {"wall_s": statistics.median(r["wall_s"] for r in runs),
            "peak_rss_mib": max(r["peak_rss_mib"] or 0 for r in runs),
            "stages_s": median["fmerge_stages_s"], "runs": runs}


def merge(ctx, d, fmerge, group, tag):
    """`fmerge build` of `group` in clone `d`, the merge cache defeated,
    after a `sync` (what the steps before wrote is on disk: see
    bench/README.md, step 8)."""
    os.sync()
    m, _ = timed(ctx, tag, [fmerge, "build", *GROUPS[group], "--force", "--message-format", "json"], env=in_clone(d),
                 cwd=d)
    return m


def merge_step(ctx, d, fmerge, label, group):
    """The merge step (cargo fresh), its object cache emptied before each run."""
    log(f"{label}: {group}'s merge step, cold object cache, {RUNS} runs after an untimed one")
    merge(ctx, d, fmerge, group, f"loop-{label}-{group}-merge-step-warm-up")
    runs = []
    for i in range(RUNS):
        shutil.rmtree(d / "target" / "fmerge" / "objects", ignore_errors=True)
        runs.append(merge(ctx, d, fmerge, group, f"loop-{label}-{group}-merge-step-{i}"))
    return median_of(runs)


def edited(text, i):
    """`text` (a function's main.rs) with a one-line edit after its handler's
    first line: a new line of code for each `i`, so that cargo and the merge
    see new bitcode, and nothing the handler answers changes. None when there
    is no `async fn handle` line."""
    lines = text.splitlines(keepends=True)
    at = next((n for n, l in enumerate(lines) if l.startswith("async fn handle") and l.rstrip().endswith("{")), None)
    if at is None:
        return None
    edit = f"    let _ = std::hint::black_box({i}_u32); // bench/run: a one-line edit\n"
    return "".join(lines[:at + 1] + [edit] + lines[at + 1:])


def edit_remerge(ctx, d, fmerge, label, group):
    """The re-merge after a one-line edit of a callee (`edited`); the file is
    put back after."""
    source = d / "functions" / EDITED[group] / "src" / "main.rs"
    original = source.read_text()
    if edited(original, 1) is None:
        die(f"{source}: no `async fn handle … {{` line to put the one-line edit after")
    log(f"{label}: {group}'s re-merge after a one-line edit of {EDITED[group]}, {RUNS} runs")
    runs = []
    try:
        for i in range(RUNS):
            source.write_text(edited(original, i + 1))
            runs.append(merge(ctx, d, fmerge, group, f"loop-{label}-{group}-edit-remerge-{i}"))
    finally:
        source.write_text(original)
    return median_of(runs)


def one_rev(ctx, rev, label):
    """Every step of the loop on a fresh clone of `rev`."""
    d, full = clone(ctx, rev, label)
    r = {"rev": full, "first_command": first_command(ctx, d, label)}
    fmerge = d / "target" / "release" / "fmerge"
    log(f"{label}: the chain's functions built (untimed)")
    merge(ctx, d, fmerge, "chain", f"loop-{label}-chain-prime")
    for group in ("pair", "chain"):
        r[f"{group}_merge_step"] = merge_step(ctx, d, fmerge, label, group)
        r[f"{group}_edit_remerge"] = edit_remerge(ctx, d, fmerge, label, group)
    return r, d, fmerge


def app_plan(ctx, d, fmerge, baseline):
    """The application's default plan built cold: `--plan` against one group
    after another (this source), and `--plan` by the baseline's fmerge."""
    work = ctx.out / "loop" / "app"
    shutil.rmtree(work, ignore_errors=True)
    log("application: fmerge graph and fmerge plan (untimed)")
    p = subprocess.run([str(fmerge), "graph", "-f", str(d / APP_STACK), "--out", str(work / "callgraph"),
                        "--picture", "none"], cwd=d, env={**child_env(), **in_clone(d)}, capture_output=True,
                       text=True)
    if p.returncode != 0:
        die(f"fmerge graph failed: {p.stderr[-2000:]}")
    plan_file, groups, _ = plan(ctx, fmerge, work / "callgraph" / "calls.json", work / "plan")
    src = ctx.src
    ctx.src = d  # cold_builds builds the stack of the clone
    try:
        r, _ = cold_builds(ctx, fmerge, plan_file, groups)
    finally:
        ctx.src = src
    if baseline:
        base_dir, base_fmerge = baseline
        target = ctx.out / "build" / "app-plan-baseline"
        shutil.rmtree(target, ignore_errors=True)
        log("application: the same plan, cold `fmerge build --plan` by the baseline")
        m, tail = timed(ctx, "loop-baseline-app-cold-plan",
                        [base_fmerge, "build", "--plan", plan_file, "--target-dir", target], cwd=base_dir, check=False)
        r["baseline_plan"] = m if m else {"refused": tail}
        shutil.rmtree(target, ignore_errors=True)
    return r


def only_loop(ctx, args):
    """--only loop: the baseline first, then this source (HEAD), each on a
    fresh clone; then the application's plan."""
    head = commit_of(ctx.root, "HEAD")
    baseline = baseline_commit(ctx.root, args.baseline, head)
    base, base_dir, base_fmerge = one_rev(ctx, baseline, "baseline")
    this, this_dir, this_fmerge = one_rev(ctx, head, "head")
    app = app_plan(ctx, this_dir, this_fmerge, (base_dir, base_fmerge) if not args.no_app_cold else None)
    return {"baseline": base, "head": this, "app": app, "edited": EDITED, "runs": RUNS}


def render_loop(L, R):
    """The loop's table: each step for the baseline and this source, the
    ratio, and the goal; then `--plan`'s time per stage."""
    lo = R.get("loop")
    if not lo:
        return
    b, h = lo["baseline"], lo["head"]
    L.append("### The loop a user lives in: fresh clone, merge step, re-merge after an edit")
    L.append("")
    which = ", main as of 2026-11-23, where issue 24's figures come from" if b["rev"].startswith(BASELINE) else ""
    L.append(f"Each step on a fresh clone of the baseline (git `{b['rev']}`{which}) and of this source (git `{h['rev']}`), "
             "one after the other on the same machine in this run. "
             f"Merge steps and re-merges: median of {lo['runs']} runs of `fmerge build <group> --force` (cargo fresh; the "
             "object cache emptied before each merge step); a re-merge follows a one-line edit of a callee's handler "
             f"({lo['edited']['pair']} in the pair, {lo['edited']['chain']} in compose-post's group), cargo's rebuild of it "
             "included. Peak RSS: the highest of the runs.")
    L.append("")
    L.append("| step | goal | baseline | this source | ratio | |")
    L.append("| --- | --- | ---: | ---: | ---: | --- |")
    T = R["targets"]

    def row(name, key, goal, unit="s", field="wall_s"):
        x, y = b[key][field], h[key][field]
        r = ratio(y, x)
        met = y is not None and (y <= goal if goal is not None else y <= x)
        g = f"≤ {goal:g} {unit}" if goal is not None else "not above the baseline"
        L.append(f"| {name} | {g} | {f(x)} {unit} | {f(y)} {unit} | {f(r, 2, '×')} | {'met' if met else '**missed**'} |")

    row("README's first command, fresh clone", "first_command", T["loop_first_command_s"])
    L.append(f"| … of which fmerge's own build | | {f(b['first_command'].get('fmerge_build_s'))} s | "
             f"{f(h['first_command'].get('fmerge_build_s'))} s | "
             f"{f(ratio(h['first_command'].get('fmerge_build_s'), b['first_command'].get('fmerge_build_s')), 2, '×')} | |")
    row("merge step, pair", "pair_merge_step", T["loop_pair_merge_step_s"])
    row("merge step, compose-post's group", "chain_merge_step", T["loop_chain_merge_step_s"])
    row("re-merge after a one-line edit, pair", "pair_edit_remerge", T["loop_pair_edit_remerge_s"])
    row("re-merge after a one-line edit, compose-post's group", "chain_edit_remerge", T["loop_chain_edit_remerge_s"])
    for g, name in (("pair", "pair"), ("chain", "compose-post's group")):
        row(f"merge step peak RSS, {name}", f"{g}_merge_step", None, "MiB", "peak_rss_mib")
    L.append("")
    app = lo.get("app")
    if app:
        p, o = app["plan"], app["one_by_one"]
        base = app.get("baseline_plan") or {}
        L.append(f"The application's default plan ({app['groups']} groups) built cold: one `fmerge build --plan` "
                 f"{f(p['wall_s'])} s; one `fmerge build --config` per group, one after another, {f(o['wall_s'])} s: "
                 f"{f(app['wall_ratio'], 2, '×')} (goal > {T['loop_plan_ratio']:g}×, "
                 f"{'met' if (app['wall_ratio'] or 0) > T['loop_plan_ratio'] else '**missed**'}). "
                 + (f"The baseline's `--plan` of the same plan: {f(base['wall_s'])} s (this source ÷ baseline "
                    f"{f(ratio(p['wall_s'], base['wall_s']), 2, '×')})." if base.get("wall_s") else
                    "The baseline's `--plan` refused this plan file: " + base["refused"].strip().splitlines()[-1]
                    if base.get("refused") else ""))
        L.append("")
        render_stages(L, p.get("timings"))
