"""Our runtime against of-watchdog in front of it, as OpenFaaS deploys a
function: the same function (HOP_FUNCTION) served by the runtime directly, and
through the real of-watchdog 0.11.6 in HTTP mode, which forks the function
(fprocess) and proxies every request to it. Same client, same rates; what
differs is one proxy hop. Reports per-request CPU and latency of each and
their ratio.

of-watchdog binds its own port and its metrics port (8081, fixed) on every
interface; the bench only ever connects to 127.0.0.1."""

import json
import subprocess
from pathlib import Path

from .config import AUTHOR, HOP_FUNCTION, WATCHDOG_METRICS_PORT, die, log
from .load import describe, ratio, sustained
from .processes import children_of, free_port, port_in_use, wait_health

BUILD_SCRIPT = Path("shared") / "tools" / "of-watchdog" / "build.sh"
# The process names the CPU table reports.
WATCHDOG = "of-watchdog"
BEHIND = f"{HOP_FUNCTION} (behind of-watchdog)"


def find_watchdog(root, given=None):
    """The of-watchdog binary: --of-watchdog PATH, else what
    shared/tools/of-watchdog/build.sh (looked for above the repository)
    builds (offline, once, ~25 s) and prints."""
    if given:
        if not Path(given).is_file():
            die(f"--of-watchdog {given}: no such file")
        return Path(given)
    for d in [Path(root).resolve(), *Path(root).resolve().parents]:
        script = d / BUILD_SCRIPT
        if script.is_file():
            log(f"of-watchdog: {script}")
            p = subprocess.run([str(script)], capture_output=True, text=True)
            if p.returncode != 0 or not p.stdout.strip():
                die(f"{script} failed ({p.returncode}): {p.stderr[-2000:]}")
            return Path(p.stdout.strip().splitlines()[-1])
    die(f"no {BUILD_SCRIPT} above {root} to build of-watchdog with: pass --of-watchdog PATH (a built of-watchdog 0.11.6)")


def watchdog_env(wd_port, fn_port, binary, tmp, fn_metrics_port):
    """of-watchdog's settings in HTTP mode (the names of its README); the
    forked function gets its own port (and its runtime's own metrics port:
    of-watchdog holds 8081) through `env`, since it inherits of-watchdog's
    environment, `port` included."""
    return {
        "mode": "http",
        "port": str(wd_port),
        "upstream_url": f"http://127.0.0.1:{fn_port}",
        "fprocess": f"env port={fn_port} metrics_port={fn_metrics_port} {binary}",
        "exec_timeout": "10s",
        "read_timeout": "10s",
        "write_timeout": "10s",
        "healthcheck_interval": "1s",
        # Its lock file (/_/health) lives in TMPDIR: ours, not the shared /tmp.
        "TMPDIR": str(tmp),
    }


def start_watchdog(sysm, binary):
    """of-watchdog forking a second instance of HOP_FUNCTION, on the function
    tier's CPUs; returns its port."""
    ctx = sysm.ctx
    if port_in_use(WATCHDOG_METRICS_PORT):
        die(f"127.0.0.1:{WATCHDOG_METRICS_PORT} is taken, and of-watchdog serves its metrics there (fixed): "
            "stop what listens on it (another of-watchdog?) and run again")
    wd_port, fn_port = free_port(), free_port()
    tmp = ctx.run_dir / sysm.mode / "of-watchdog-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**sysm.common_env, **watchdog_env(wd_port, fn_port, ctx.out / "bin" / "unmerged" / HOP_FUNCTION, tmp, free_port())}
    p = ctx.procs.start(WATCHDOG, [binary], env, log_dir=ctx.run_dir / sysm.mode / "logs", cpus=sysm.tier)
    wait_health(WATCHDOG, wd_port, p, ctx.run_dir)
    # of-watchdog's /_/health says nothing of the function: wait for it too.
    wait_health(BEHIND, fn_port, p, ctx.run_dir)
    kids = children_of(p.pid)
    if len(kids) != 1:
        die(f"of-watchdog should have forked one function process, it has {kids}")
    ctx.procs.extra_names[kids[0]] = BEHIND
    return wd_port


def compare_watchdog(sysm, oha, args):
    """HOP_FUNCTION on its own port vs through of-watchdog: fixed rate
    (--hop-rate), then closed loop, each run alternately."""
    binary = find_watchdog(sysm.ctx.root, args.of_watchdog)
    wd_port = start_watchdog(sysm, binary)
    body = json.dumps({"user_id": AUTHOR})
    urls = {"direct": f"http://127.0.0.1:{sysm.ports[HOP_FUNCTION]}/", "watchdog": f"http://127.0.0.1:{wd_port}/"}
    for how, url in urls.items():
        sysm.oha(oha, url, body, 2, rate=200, connections=16, tag=f"watchdog-{how}-warmup")
    out = {"function": HOP_FUNCTION, "rate": args.hop_rate, "watchdog_binary": str(binary), "fixed_rate": {}, "closed_loop": {}}
    for how, url in urls.items():
        sysm.fresh()
        r = sysm.oha(oha, url, body, args.duration, rate=args.hop_rate, connections=args.connections, tag=f"watchdog-{how}")
        r["sustained"] = sustained(r)
        out["fixed_rate"][how] = r
        log(f"{HOP_FUNCTION} {'through of-watchdog' if how == 'watchdog' else 'served directly'} @ {args.hop_rate}/s: {describe(r)}")
    for how, url in urls.items():
        sysm.fresh()
        r = sysm.oha(oha, url, body, args.closed_duration, connections=args.closed_connections, tag=f"watchdog-{how}-closed")
        out["closed_loop"][how] = r
        log(f"{HOP_FUNCTION} {'through of-watchdog' if how == 'watchdog' else 'served directly'}: closed loop "
            f"{r['ok_rps']:.0f} req/s ok, p50 {r['p50_ms']:.2f} ms")
    out.update(watchdog_verdict(out["fixed_rate"], out["closed_loop"]))
    return out


def watchdog_verdict(fixed, closed):
    """CPU per request of what serves the function (the runtime alone; of-watchdog
    plus the function behind it) and latency, with their ratios
    (of-watchdog ÷ direct: above 1 when the runtime alone is cheaper)."""
    d = fixed["direct"]["cpu_us_per_request"] or {}
    w = fixed["watchdog"]["cpu_us_per_request"] or {}
    direct_cpu = d.get(HOP_FUNCTION)
    behind = w.get(BEHIND)
    proxy = w.get(WATCHDOG)
    wd_cpu = None if behind is None or proxy is None else behind + proxy
    return {
        "cpu_us": {"direct": direct_cpu, "watchdog_total": wd_cpu, "of_watchdog": proxy, "function_behind": behind},
        "cpu_ratio": ratio(wd_cpu, direct_cpu),
        "p50_ratio": ratio(fixed["watchdog"]["p50_ms"], fixed["direct"]["p50_ms"]),
        "p99_ratio": ratio(fixed["watchdog"]["p99_ms"], fixed["direct"]["p99_ms"]),
        "closed_loop_ratio": ratio(closed["watchdog"]["ok_rps"], closed["direct"]["ok_rps"]),
    }
