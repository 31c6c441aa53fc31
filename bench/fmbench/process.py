"""`--only process`: the pair write-home-timeline -> social-graph-get-followers
in the watchdog-process form (bench/process-pair), unmerged (each behind
of-watchdog) against fmerge's merged binary (behind the real of-watchdog),
in a network and mount namespace of the bench's own where the functions'
written-in gateway and Redis addresses are this namespace's loopback.

Here, outside: fmerge, the merge (which builds the functions' own binaries
too), the two of-watchdogs; then this same bench/run again as the worker
(`--process-worker`, processbed.py) under `unshare --net --mount`, which
writes its figures for the results."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .appbuild import patched_watchdog
from .config import TRIPLE, child_env, die, log
from .processbed import HOSTS, namespaces, partial_out, worker
from .processes import become_subreaper, kill_adopted
from .processreport import verdict

FIXTURE = Path("bench") / "process-pair"
PACKAGES = ["WriteHomeTimeline", "SocialGraphGetFollowers"]


def parse_fmerge_stdout(text):
    """The merged binary's path: the last non-empty line fmerge prints."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        die("fmerge build printed no binary path")
    return Path(lines[-1])


def function_binary(target, package):
    """A function's own binary, as cargo built it for the merge: fmerge's
    build dir first, then a plain `cargo build --target` one."""
    for d in (target / "fmerge" / "build" / TRIPLE / "release", target / TRIPLE / "release"):
        if (d / package).is_file():
            return d / package
    die(f"no binary {package} under {target}: fmerge build should have built it")


def fixture_in(ctx, fixture, marker):
    """The fixture's workspace in the measured source (its file `marker`
    there); said before fmerge's build."""
    ws = ctx.src / fixture
    if not (ws / marker).is_file():
        die(f"{ws} is missing: with --src head the fixture must be committed (or run with --src worktree)")
    return ws


def check_fixture(ctx):
    """The pair's workspace."""
    return fixture_in(ctx, FIXTURE, "Cargo.toml")


def build(ctx, fmerge):
    """fmerge build of the pair (the functions' binaries with it), and once
    more with --force, cargo fresh: the merge step, one run. Copies the
    three binaries to out/process/bin."""
    ws = check_fixture(ctx)
    target = (ctx.out / "process" / "target").resolve()  # fmerge wants it absolute
    argv = [str(fmerge), "build", *PACKAGES, "--manifest-path", str(ws / "Cargo.toml"), "--target-dir", str(target)]
    log(" ".join(argv[1:]))
    p = subprocess.run(argv, capture_output=True, text=True, env=child_env())
    if p.returncode != 0:
        die(f"fmerge build failed ({p.returncode}):\n{p.stderr[-3000:]}")
    t0 = time.monotonic()
    again = subprocess.run(argv + ["--force"], capture_output=True, text=True, env=child_env())
    step = time.monotonic() - t0
    if again.returncode != 0:
        die(f"fmerge build --force failed ({again.returncode}):\n{again.stderr[-3000:]}")
    merged = parse_fmerge_stdout(again.stdout)
    bins = ctx.out / "process" / "bin"
    bins.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, src in [("merged", merged)] + [(pkg, function_binary(target, pkg)) for pkg in PACKAGES]:
        dst = bins / ("write-home-timeline-merged" if name == "merged" else name)
        shutil.copy2(src, dst)
        out[name] = str(dst.resolve())
    # The warm-start launcher fmerge builds beside the merged binary: the
    # merged image's fprocess runs the binary through it, and so does the bed.
    launcher = Path(merged).with_name("fmerge-warm")
    if not launcher.is_file():
        die(f"fmerge built no warm-start launcher beside {merged}")
    shutil.copy2(launcher, bins / "fmerge-warm")
    out["launcher"] = str((bins / "fmerge-warm").resolve())
    sizes = {k: os.path.getsize(v) for k, v in out.items()}
    libs = shared_libraries(out["merged"])
    out["empty"] = str(empty_program(ctx, bins))
    forms = [line for line in p.stderr.splitlines() if "forms:" in line or "answered in the pod" in line]
    return out, {"merge_step_s": round(step, 2), "sizes_bytes": sizes, "fmerge_said": forms, "shared_libraries": libs}


def count_ldd(text):
    """The shared objects `ldd` lists (the vDSO and the loader left out)."""
    return sum(1 for line in text.splitlines() if "=>" in line and "linux-vdso" not in line)


def shared_libraries(binary):
    p = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    return count_ldd(p.stdout) if p.returncode == 0 else None


def empty_program(ctx, bins):
    """`fn main() {}` built with rustc -O: what starting a Rust program
    costs with nothing but libc to load."""
    src = ctx.out / "process" / "empty.rs"
    src.write_text("fn main() {}\n")
    exe = bins / "empty"
    subprocess.run(["rustc", "-O", "-o", str(exe), str(src)], check=True, env=child_env())
    return exe.resolve()


PERCALL = re.compile(r"round (\d+): (inner|echo|served|served-kept|handled-kept) ([0-9.]+) µs per call \((\d+) calls\); load ([0-9.?]+)")


def direct_per_call(ctx):
    """The two merged paths timed call by call, by the shim's own
    measurement (functions/shim/tests/percall.rs, 3 rounds): a program with
    the shim linked in, as a merged binary has it, calls a member that does
    almost nothing through the gateway's address, a new connection each,
    from its main thread: `inner` runs in the program's process (on that
    thread), `echo` in a process forked by the zygote. Each figure is the
    whole call as the client sees it, the member's own little work
    included. Outside the worker's namespace (it needs only loopback), run
    before it."""
    argv = ["cargo", "test", "--release", "-p", "fmerge-shim", "--test", "percall", "--", "--ignored", "--nocapture"]
    log("per call, timed by the shim's percall: " + " ".join(argv))
    p = subprocess.run(argv, cwd=ctx.src, capture_output=True, text=True, env=child_env())
    if p.returncode != 0:
        die(f"percall failed ({p.returncode}):\n{p.stderr[-3000:]}")
    runs = {"inner": [], "echo": [], "served": [], "served-kept": [], "handled-kept": []}
    for m in PERCALL.finditer(p.stdout):
        runs[m.group(2)].append({"us": float(m.group(3)), "calls": int(m.group(4)), "load": m.group(5)})
    if not all(runs.values()):
        die(f"percall printed no figures for some path:\n{p.stdout[-2000:]}")
    med = lambda xs: sorted(xs)[len(xs) // 2]
    return {"in_process_us": med([r["us"] for r in runs["inner"]]), "forked_us": med([r["us"] for r in runs["echo"]]),
            "served_us": med([r["us"] for r in runs["served"]]),
            "served_kept_us": med([r["us"] for r in runs["served-kept"]]),
            "handled_kept_us": med([r["us"] for r in runs["handled-kept"]]), "runs": runs}


def in_namespace(ctx, args, kind, fmerge, real_watchdog, build):
    """Builds (`build(ctx, fmerge)`: the binaries and what the build said),
    times the shim's direct calls, then runs the worker on the testbed
    `kind` (processbed.worker) in a network and mount namespace of its own;
    its result, with the build, the direct calls and the worker's args."""
    if os.geteuid() != 0:
        die(f"--only {kind} makes a network and mount namespace of its own (unshare --net --mount): run it as root")
    for tool in ("unshare", "ip", "mount"):
        if not shutil.which(tool):
            die(f"--only {kind} needs {tool} (Debian: apt-get install -y util-linux iproute2 mount)")
    binaries, built = build(ctx, fmerge)
    direct = direct_per_call(ctx)
    patched = patched_watchdog(ctx, real_watchdog)
    run = ctx.run_dir
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    plan = {"kind": kind, "binaries": binaries, "watchdog": str(real_watchdog), "patched_watchdog": str(patched),
            "gateway_host": HOSTS[0].rstrip("."), "gateway_port": 8080, "nginx_workers": args.nginx_workers,
            "out": str((run / f"{kind}-worker.json").resolve()), "namespaces": namespaces(),
            "args": {"duration": args.duration, "closed_duration": args.closed_duration, "connections": args.connections,
                     "closed_connections": args.closed_connections, "refine": args.refine, "calls": args.calls, "repeat": args.repeat,
                     "rates": args.rates.get("pair")}}
    plan_path = run / f"{kind}-plan.json"
    plan_path.write_text(json.dumps(plan, indent=1))
    argv = ["unshare", "--net", "--mount", "--", sys.executable, str(ctx.bench / "run"), "--process-worker", str(plan_path),
            "--nice", str(args.nice)]
    log("the worker, in a namespace of its own: " + " ".join(argv))
    # A worker killed outright (SIGKILL, the OOM killer) cannot stop its
    # cluster: its processes come to this one, which ends them. Only for
    # the worker's time: other modes' orphans are not this run's to reap.
    become_subreaper("bench/run")
    try:
        p = subprocess.run(argv, env=child_env())
    finally:
        kill_adopted(keep={q.pid for _, q, _ in ctx.procs.running})
        become_subreaper("bench/run", on=False)
    if p.returncode != 0 or not Path(plan["out"]).is_file():
        die(worker_failed(kind, p.returncode, plan, run))
    res = json.loads(Path(plan["out"]).read_text())
    res["build"] = built
    res.setdefault("per_call", {})["direct"] = direct
    res["args"] = plan["args"]
    res["watchdogs"] = {"merged": str(real_watchdog), "unmerged": str(patched)}
    return res


def worker_failed(kind, returncode, plan, run):
    """What to say of a worker that ended without its results: where its
    logs are, and what it had measured, which it keeps (partial_out)."""
    partial = partial_out(plan)
    kept = ""
    if partial.is_file():
        parts = ", ".join(json.loads(partial.read_text()))
        kept = f"; what it measured before it failed ({parts}) is in {partial}"
    return f"the {kind} worker failed ({returncode}){kept}; its logs are under {run}"


def only_process(ctx, args, R, oha, fmerge, real_watchdog):
    """Builds, then the worker in its namespace; R['process'] gets both."""
    res = in_namespace(ctx, args, "process", fmerge, real_watchdog, build)
    res.update(verdict(res))
    R["process"] = res


def run_worker(ctx, args, oha):
    """bench/run --process-worker PLAN: inside the namespace only."""
    if not oha.is_file():
        die(f"{oha} is missing")
    worker(ctx, args.process_worker, oha)

