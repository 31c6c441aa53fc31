"""`--only httpmode`: the chain of merger/tests/fixtures/httpmode (issue 50:
functions that serve HTTP themselves, two of them handler libraries of one
template), unmerged (each behind an of-watchdog in `http` mode) against
fmerge's merged binary (behind the real of-watchdog in `http` mode), in the
namespace and cluster of `--only process` (process.py, processbed.py; the
deployments are httpbed.py's).

Here, outside: fmerge, the merge (`-f stack.yml`, as a team builds), the
functions' own binaries (the handler libraries as `faas-cli build` builds
them: the template with the handler as `function/`), the shim's per-call
timing (the `served` paths) and the worker."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .config import TARGETS, child_env, die, log
from .httpbed import NOCALL_STATUS
from .load import f1
from .process import fixture_in, in_namespace, parse_fmerge_stdout
from .processreport import load_verdicts
from .targets import status

FIXTURE = Path("merger") / "tests" / "fixtures" / "httpmode"
NAMES = ["order-front", "inventory", "render", "price", "tax"]
PACKAGES = ["order-front", "inventory", "render"]
TEMPLATE = Path("template") / "rust-http1"


def check_fixture(ctx):
    return fixture_in(ctx, FIXTURE, "stack.yml")


def build(ctx, fmerge):
    """The merge (and once more with --force: the merge step), the unmerged
    binaries; all copied to out/httpmode/bin."""
    src = check_fixture(ctx)
    # Outside this repository: cargo looks for a handler library's
    # workspace up the folders, and the repository's would claim it.
    ws = Path(tempfile.mkdtemp(prefix="fmerge-bench-httpmode-")) / "ws"
    shutil.copytree(src, ws)
    target = (ctx.out / "httpmode" / "target").resolve()
    argv = [str(fmerge), "build", "-f", "stack.yml", *NAMES, "--target-dir", str(target)]
    log(" ".join(argv[1:]))
    p = subprocess.run(argv, cwd=ws, capture_output=True, text=True, env=child_env())
    if p.returncode != 0:
        die(f"fmerge build failed ({p.returncode}):\n{p.stderr[-3000:]}")
    t0 = time.monotonic()
    again = subprocess.run(argv + ["--force"], cwd=ws, capture_output=True, text=True, env=child_env())
    step = time.monotonic() - t0
    if again.returncode != 0:
        die(f"fmerge build --force failed ({again.returncode}):\n{again.stderr[-3000:]}")
    bins = ctx.out / "httpmode" / "bin"
    bins.mkdir(parents=True, exist_ok=True)
    out = {"merged": bins / "order-front-merged"}
    shutil.copy2(parse_fmerge_stdout(again.stdout), out["merged"])
    env = {**child_env(), "CARGO_TARGET_DIR": str(target / "unmerged")}
    cargo = ["cargo", "build", "--release", "--quiet"]
    subprocess.run(cargo + [a for p_ in PACKAGES for a in ("-p", p_)], cwd=ws, check=True, env=env)
    for name in PACKAGES:
        out[name] = bins / name
        shutil.copy2(target / "unmerged" / "release" / name, out[name])
    for name in NAMES:
        if name in PACKAGES:
            continue
        b = ws / "build" / name
        shutil.copytree(ws / TEMPLATE, b)
        shutil.rmtree(b / "function")
        shutil.copytree(ws / name, b / "function")
        shutil.copy2(ws / "Cargo.lock", b / "main" / "Cargo.lock")
        subprocess.run(cargo, cwd=b / "main", check=True, env=env)
        out[name] = bins / name
        shutil.copy2(target / "unmerged" / "release" / "main", out[name])
    forms = [line for line in p.stderr.splitlines() if "forms:" in line or "server runs" in line]
    sizes = {k: os.path.getsize(v) for k, v in out.items()}
    return {k: str(v.resolve()) for k, v in out.items()}, {"merge_step_s": round(step, 2), "sizes_bytes": sizes,
                                                          "fmerge_said": forms}


def verdict(res):
    # A pooled client's call (one kept connection), the member's own little
    # work included: the whole call is held to the target.
    direct = res["per_call"]["direct"]
    calls = {}
    for key, figure, goal in (("served_call_ms", "served_kept_us", "served_call_over_work_ms"),
                              ("handle_call_ms", "handled_kept_us", "handle_call_over_work_ms")):
        if figure in direct:
            call, goal_call = direct[figure] / 1e3, TARGETS[goal]
            calls[key] = {"goal": goal_call, "value": call, "ok": call <= goal_call}
    goals = TARGETS["httpmode_p50_ratio"], TARGETS["httpmode_throughput_ratio"]
    # The chain is three functions (`/quote`: order-front → price →
    # tax); the whole five-function chain is judged the same way.
    quote = {}
    if "load_quote" in res:
        quote = {f"quote_{k}": v for k, v in load_verdicts(res["load_quote"], *goals).items()}
    return {"verdicts": {**load_verdicts(res["load"], *goals), **quote, **calls}}


def only_httpmode(ctx, args, R, oha, fmerge, real_watchdog):
    res = in_namespace(ctx, args, "httpmode", fmerge, real_watchdog, build)
    res["per_call"]["hop"] = res.pop("hop")
    res.update(verdict(res))
    R["httpmode"] = res


def render_httpmode(L, R):
    H = R.get("httpmode")
    if not H:
        return
    V, direct, hop = H["verdicts"], H["per_call"]["direct"], H["per_call"]["hop"]
    L.append("### Functions that serve HTTP themselves, merged")
    L.append("")
    L.append("The chain of `merger/tests/fixtures/httpmode` (order-front → inventory → render, order-front → price → "
             "tax; price and tax handler libraries of one template), one request down all of it, then the three-function "
             "chain the issue names alone (order-front's `/quote`: order-front → price → tax), in the namespace of "
             "`--only process`: **unmerged**, each function behind an of-watchdog 0.11.6 in `http` mode (its metrics "
             "port set); **merged**, `fmerge build -f stack.yml` of all five behind the real of-watchdog in `http` "
             "mode. Per call: the shim's `percall` (a member serving HTTP in the program's process, called through "
             "the gateway's address: `served` a new connection each call, `served-kept` one kept connection as a "
             "pooled client calls); the hop: tax through nginx and its of-watchdog against tax's server called "
             "directly, one call at a time, the difference of the medians.")
    L.append("")
    L.append("| figure | value | target | verdict |")
    L.append("|---|---|---|---|")
    L.append(f"| call to a served member, kept connection (µs) | {f1(direct['served_kept_us'])} | "
             f"≤ {V['served_call_ms']['goal'] * 1e3:.0f} | {status(V['served_call_ms']['ok'])} |")
    L.append(f"| call to a served member, new connection each (µs) | {f1(direct['served_us'])} | | |")
    if "handle_call_ms" in V:
        L.append(f"| call to a handler library's `handle`, kept connection (µs; started on the client's thread, "
                 f"the test's entry replying at once) | {f1(direct['handled_kept_us'])} | "
                 f"≤ {V['handle_call_ms']['goal'] * 1e3:.0f} | {status(V['handle_call_ms']['ok'])} |")
    L.append(f"| unmerged hop, gateway + of-watchdog (ms) | {f1(hop['hop_ms'], nd=2)} | | |")
    for prefix, chain in (("quote_", "three-function chain (`/quote`)"), ("", "whole chain (five functions)")):
        if f"{prefix}p50_ratio" not in V:
            continue
        p50, tp = V[f"{prefix}p50_ratio"], V[f"{prefix}throughput_ratio"]
        L.append(f"| {chain}: p50 merged ÷ unmerged, worst rate both sustained | {f1(p50['value'], nd=2)} | "
                 f"≤ {p50['goal']} | {status(p50['ok'])} |")
        L.append(f"| {chain}: highest sustained rate merged ÷ unmerged | {f1(tp['value'], nd=2)} | "
                 f"≥ {tp['goal']} | {status(tp['ok'])} |")
    for key, chain in (("fixed_part", "`/quote`"), ("fixed_part_whole", "the whole chain")):
        fp = H.get(key)
        if not fp:
            continue
        u, m = fp["unmerged"], fp["merged"]
        L.append(f"| {chain} at {fp['rate']} req/s without its calls: p50 of `POST /ping` through the gateway "
                 f"(order-front answers {NOCALL_STATUS} at once), unmerged / merged (ms) | {f1(u['fixed_ms'], nd=2)} / "
                 f"{f1(m['fixed_ms'], nd=2)} | | |")
        L.append(f"| {chain}'s calls at {fp['rate']} req/s: its p50 less the above, unmerged / merged (ms); merged ÷ "
                 f"unmerged | {f1(u['calls_ms'], nd=2)} / {f1(m['calls_ms'], nd=2)}; {f1(fp['calls_ratio'], nd=2)} | | |")
        L.append(f"| {chain}'s p50 ratio at {fp['rate']} req/s were its merged calls free (merged without calls ÷ "
                 f"unmerged) | {f1(fp['best_ratio'], nd=2)} | | |")
    L.append(f"| merge step, 5 functions (s) | {H['build']['merge_step_s']} | | |")
    L.append("")
    for key, chain in (("load", "The whole chain"), ("load_quote", "The three-function chain (`/quote`)")):
        if key not in H:
            continue
        lo = H[key]
        L.append(f"{chain}:")
        L.append("")
        L.append("| rate (req/s) | unmerged p50 (ms) | merged p50 (ms) | ratio | unmerged sustained | merged sustained |")
        L.append("|---|---|---|---|---|---|")
        for row in lo["fixed_rate"]:
            u, m = row["unmerged"], row["merged"]
            L.append(f"| {row['rate']} | {f1(u['p50_ms'], nd=2)} | {f1(m['p50_ms'], nd=2)} | {f1(row['p50_ratio'], nd=2)} | "
                     f"{u['sustained']} | {m['sustained']} |")
        L.append("")
        rates = lo["max_sustained_rate"]
        L.append(f"Highest sustained rate: unmerged {rates.get('unmerged')}, merged {rates.get('merged')} req/s.")
        L.append("")
