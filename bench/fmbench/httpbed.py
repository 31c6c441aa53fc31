"""`--only httpmode`'s worker (run by processbed.worker in the namespace
process.py makes, the same cluster: nginx on 8080, Redis with a password on
6379, the cluster's names on this loopback): the chain of
merger/tests/fixtures/httpmode, functions that serve HTTP themselves,
deployed as merger/tests/support/httpmode.rs deploys it:
- unmerged: each of the five behind an of-watchdog in `http` mode
  (started once, every request proxied to its `upstream_url`), the metrics
  port set, so that five fit one namespace; every server on its own port
  (`PORT`), as each would have its pod's `:3000`;
- merged: fmerge's binary behind the real of-watchdog 0.11.6 in `http`
  mode, every callee's settings namespaced, at
  `/function/order-front-merged`.
Then: the check that both answer alike and only unmerged calls through the
gateway, the hop (gateway and of-watchdog's proxy, timed against the same
server called directly), and processbed's load runs: of the whole chain,
then of the three-function chain order-front → price → tax (`/quote`)."""

import time
from pathlib import Path

from .config import die, log
from .load import fixed_run, in_turn, median_run, ratio
from .processbed import GATEWAY_PORT, HOSTS, Bed
from .processcalls import summary
from .processreport import verdict_row
from .processes import http

CALLER = "order-front"
MERGED = f"{CALLER}-merged"
# Each function's port and settings (merger/tests/support/httpmode.rs's).
DEPLOYMENTS = [
    ("order-front", 3001, {"PORT": "3001"}),
    ("inventory", 3002, {"PORT": "3002"}),
    ("render", 3000, {"exec_timeout": "1s"}),
    ("price", 3003, {"PORT": "3003"}),
    ("tax", 3004, {"PORT": "3004"}),
]
GROUP = "httpmode"
# The three-function chain: order-front's /quote, which asks price (→ tax) alone.
QUOTE = "httpmode-quote"
# A request order-front answers without calling anyone: a POST to its GET
# route `/ping`, which actix-web answers 404 at once. Through the
# gateway, it is what each chain costs besides its calls (the ingress, the
# watchdog, the caller's own server), alike in both deployments.
NOCALL = "httpmode-nocall"
NOCALL_STATUS = "404"
MERGED_PORT = 3101


def split(row, nocall):
    """A chain's p50 at `row`'s rate in two, for each deployment: the part
    without calls (`nocall[d]`'s p50) and the calls' part (the rest, a
    difference of medians, as the hop's); the calls' ratio, and the ratio the
    chain would have were the merged calls free: no merge that keeps the
    caller behind its watchdog goes below it."""
    out = {"rate": row["rate"]}
    for d, run in nocall.items():
        out[d] = {"fixed_ms": run["p50_ms"], "calls_ms": row[d]["p50_ms"] - run["p50_ms"], "p50_ms": row[d]["p50_ms"],
                  "run": run}
    out["calls_ratio"] = ratio(out["merged"]["calls_ms"], out["unmerged"]["calls_ms"])
    out["best_ratio"] = ratio(out["merged"]["fixed_ms"], out["unmerged"]["p50_ms"])
    return out


def namespaced(function, key):
    """`<FUNCTION>__KEY`, fmerge_contract::namespaced's rule."""
    return function.upper().replace("-", "_") + "__" + key


class HttpBed(Bed):
    group = GROUP
    tier = {"unmerged": [f"{n} (of-watchdog)" for n, _, _ in DEPLOYMENTS], "merged": [f"{MERGED} (of-watchdog)"]}
    mode = "httpmode"

    def __init__(self, ctx, plan):
        self.ctx = ctx
        self.start_redis()
        bins = {k: Path(v) for k, v in plan["binaries"].items()}
        gateway = f"http://{HOSTS[0]}:{GATEWAY_PORT}"
        common = {"RUST_BACKTRACE": "0", "GATEWAY_URL": gateway, "OPENFAAS_URL": gateway, "mode": "http"}
        served, self.upstreams = [], {}
        for i, (name, upstream, settings) in enumerate(DEPLOYMENTS):
            env = {**common, **settings, "upstream_url": f"http://127.0.0.1:{upstream}", "metrics_port": str(20000 + i)}
            served.append((name, plan["patched_watchdog"], bins[name], f"{name} (of-watchdog)", env))
            self.upstreams[name] = upstream
        # Beside the unmerged caller, in one namespace: a port of its own
        # (its callees' servers are moved to free ones by the shim).
        env = {**common, **DEPLOYMENTS[0][2], "PORT": str(MERGED_PORT), "upstream_url": f"http://127.0.0.1:{MERGED_PORT}"}
        for name, _, settings in DEPLOYMENTS[1:]:
            env.update({namespaced(name, k): v for k, v in settings.items()})
        served.append((MERGED, plan["watchdog"], bins["merged"], f"{MERGED} (of-watchdog)", env))
        self.serve(served, plan, CALLER, MERGED)
        for d, fn in (("unmerged", CALLER), ("merged", MERGED)):
            self.urls[(QUOTE, d)] = f"http://127.0.0.1:{GATEWAY_PORT}/function/{fn}/quote"
            self.urls[(NOCALL, d)] = f"http://127.0.0.1:{GATEWAY_PORT}/function/{fn}/ping"

    def reset(self):
        """No data to start from: Redis emptied."""
        self.redis.cmd("FLUSHALL")

    def state(self):
        """Nothing beyond the reply: the chain's Redis count is in it."""
        return {}

    def fixed_part(self, oha, args, chain):
        """A chain's p50 (its `load` results) split at the rate of its p50
        verdict (split): NOCALL for each deployment at that rate,
        args.repeat rounds in turn, the median run."""
        row = verdict_row(chain)
        if row is None:
            return None
        tries = {"unmerged": [], "merged": []}
        for k in range(args.repeat):
            for d in in_turn(list(tries), k):
                r = fixed_run(self, oha, NOCALL, d, row["rate"], args, f"{d}-nocall-{row['rate']}-{k}")
                if set(r["status_codes"]) != {NOCALL_STATUS}:
                    die(f"{d}: POST /ping answered {r['status_codes']}, not only {NOCALL_STATUS}: it is not a request "
                        "answered without a call")
                tries[d].append(r)
                log(f"{d} without a call @ {row['rate']}/s: achieved {r['achieved_rps']:.0f}/s, every reply "
                    f"{NOCALL_STATUS}, p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms")
        return split(row, {d: median_run(runs) for d, runs in tries.items()})

    def hop(self, n):
        """The unmerged hop, one call at a time: tax through the gateway
        (nginx, then tax's of-watchdog proxying to its server) and tax's
        server called directly, n each, alternating; the hop is the
        difference of the medians."""
        body = b"40"
        urls = {"through_gateway": f"http://127.0.0.1:{GATEWAY_PORT}/function/tax",
                "direct": f"http://127.0.0.1:{self.upstreams['tax']}/"}
        times = {k: [] for k in urls}
        for _ in range(n):
            for k, url in urls.items():
                t0 = time.perf_counter()
                status, reply = http(url, body)
                times[k].append(time.perf_counter() - t0)
                if status != 200 or reply != b"8":
                    die(f"tax {k} answered {status}: {reply[:200]!r}")
        out = {k: summary(v) for k, v in times.items()}
        out["hop_ms"] = out["through_gateway"]["median_ms"] - out["direct"]["median_ms"]
        log(f"hop (gateway + of-watchdog proxy): {out['hop_ms']:.2f} ms at the median over {n} calls")
        return out
