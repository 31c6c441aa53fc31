"""One testbed mode: redis (seeded), the gateway nginx (one, or ingress +
internal when pinned), every function as its own process, the merged and the
fused binaries, all on 127.0.0.1; and the checks that they answer alike."""

import json
import os
from pathlib import Path

from .config import GROUPS, HOP_FUNCTION, REQUESTS, die, hops, log
from .load import run_oha
from .processes import Redis, free_port, http, seed, wait_health, wait_port


# The http block's settings the tests' gateway (fmerge-testkit) shares.
PROXY = (Path(__file__).resolve().parents[2] / "functions/testkit/gateway-proxy.conf").read_text()


def nginx_conf(d, port, routes, workers, pass_through=False):
    """routes: (function name, upstream port); each /function/<name> goes to
    its upstream's root. pass_through: one upstream that gets every
    /function/… path unchanged (an ingress in front of a gateway)."""
    conf = f"""user root;
worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
worker_rlimit_nofile 65536;
events {{ worker_connections 8192; }}
http {{
{PROXY}    access_log off;
    keepalive_timeout 120s;
"""
    for i, (_, upstream) in enumerate(routes):
        conf += f"    upstream fn{i} {{ server 127.0.0.1:{upstream} max_fails=0; keepalive 128; keepalive_requests 1000000; }}\n"
    conf += f"    server {{\n        listen 127.0.0.1:{port} backlog=4096;\n"
    # Its request counter: how many calls went through this nginx.
    conf += "        location = /_/nginx_status { stub_status; }\n"
    if pass_through:
        conf += "        location /function/ { proxy_pass http://fn0; }\n"
        routes = []
    for i, (name, _) in enumerate(routes):
        for loc in (f"= /function/{name}", f"/function/{name}/"):
            conf += f"        location {loc} {{ proxy_pass http://fn{i}/; }}\n"
    conf += "    }\n}\n"
    return conf


def cpu_split():
    """Pinned mode's two CPU sets: the first half of the CPUs this script may
    use (rounded down) for the outside world, the rest for the function tier."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        die(f"--mode pinned needs at least 2 CPUs, this script may use {cpus}; use --mode shared")
    half = len(cpus) // 2
    return cpus[:half], cpus[half:]


class System:
    """redis, the gateway nginx (one, or ingress + internal when pinned), every
    function, the merged and the fused binaries, for one testbed mode."""

    def __init__(self, ctx, args, bins, fused, mode, groups=None):
        """groups: those to deploy (default args.groups); HOP_FUNCTION is
        always deployed, for the one-hop and the of-watchdog runs."""
        self.ctx = ctx
        self.mode = mode
        groups = args.groups if groups is None else groups
        run = ctx.run_dir / mode
        run.mkdir(parents=True)
        logs = run / "logs"
        if mode == "pinned":
            self.outside, self.tier = cpu_split()
            workers = {"ingress": len(self.outside), "internal": len(self.tier)}
        else:
            self.outside = self.tier = None
            workers = {"ingress": args.nginx_workers}
        self.redis_port = free_port()
        redis_url = f"redis://127.0.0.1:{self.redis_port}"
        rp = ctx.procs.start("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "",
                             "--appendonly", "no", "--dir", str(run), "--protected-mode", "yes"], log_dir=logs, cpus=self.outside)
        wait_port("redis", self.redis_port, rp, ctx.run_dir)
        self.redis = Redis(self.redis_port)
        seed(self.redis)

        functions = sorted({f for g in groups for f in GROUPS[g]} | {HOP_FUNCTION})
        self.ports = {f: free_port() for f in functions}
        extra = {f"{GROUPS[g][0]}-{d}": (g, d, free_port()) for g in groups for d in args.deployments if d != "unmerged"}
        self.ports.update({n: p for n, (_, _, p) in extra.items()})
        routes = sorted(self.ports.items())
        # Shared: one nginx is both the client's way in and the gateway between
        # functions. Pinned: the ingress nginx on the outside CPUs, and an
        # internal one, beside the functions, that carries their calls.
        self.nginx = {}  # role -> (process name, port)
        for role, cpus in (("ingress", self.outside), ("internal", self.tier)) if mode == "pinned" else (("ingress", None),):
            name = "nginx" if mode == "shared" else f"nginx-{role}"
            port = free_port()
            ng = run / name
            ng.mkdir()
            (ng / "nginx.conf").write_text(nginx_conf(ng, port, routes, workers[role]))
            proc = ctx.procs.start(name, ["nginx", "-p", ng, "-e", ng / "error.log", "-c", ng / "nginx.conf"], log_dir=logs, cpus=cpus)
            wait_port(name, port, proc, ctx.run_dir)
            self.nginx[role] = (name, port)
        self.nginx.setdefault("internal", self.nginx["ingress"])
        ingress = f"http://127.0.0.1:{self.nginx['ingress'][1]}"
        self.gateway = f"http://127.0.0.1:{self.nginx['internal'][1]}"
        common = {"GATEWAY_URL": self.gateway, "REDIS_URL": redis_url}
        for f in functions:
            p = ctx.procs.start(f, [ctx.out / "bin" / "unmerged" / f], {**common, "port": str(self.ports[f]), "metrics_port": str(free_port())}, log_dir=logs, cpus=self.tier)
            wait_health(f, self.ports[f], p, ctx.run_dir)
        for name, (g, d, port) in extra.items():
            # The merged callees read their settings under namespaced names
            # (from fmerge's output); the fused program gets the same env.
            # The runtime serves /metrics on 8081 by default: one port each.
            env = {**common, "port": str(port), "metrics_port": str(free_port())}
            for s in ctx.settings.get(g, []):
                if s["key"] == "REDIS_URL" and s["function"] != GROUPS[g][0]:
                    env[s["variable"]] = redis_url
            p = ctx.procs.start(name, [bins[g] if d == "merged" else fused[g]], env, log_dir=logs, cpus=self.tier)
            wait_health(name, port, p, ctx.run_dir)
        self.urls = {}
        self.common_env = common
        for g in groups:
            caller = GROUPS[g][0]
            for d in args.deployments:
                name = caller if d == "unmerged" else f"{caller}-{d}"
                self.urls[(g, d)] = f"{ingress}/function/{name}"
                # The caller's own port: no ingress hop (calls between unmerged
                # functions still go through the gateway).
                self.urls[(g, d + "-direct")] = f"http://127.0.0.1:{self.ports[name]}/"
        pins = f"; outside world on CPUs {self.outside}, function tier on CPUs {self.tier}" if mode == "pinned" else ""
        log(f"{mode} mode up: redis :{self.redis_port}, " + ", ".join(f"{n} :{p}" for n, p in dict(self.nginx.values()).items())
            + f", {len(functions)} function{'s' if len(functions) > 1 else ''}{''.join(', ' + n for n in extra)}{pins}")

    def fresh(self):
        """Before a run: the system under test idle again (see
        `Processes.settle`), and Redis seeded afresh."""
        waited = self.ctx.procs.settle()
        if waited >= 5:
            log(f"  the testbed took {waited:.0f} s to go idle after the last run")
        seed(self.redis)

    def oha(self, oha, url, body, duration, rate=None, connections=64, tag="run"):
        """oha from the outside world's CPUs, tagged with the mode."""
        return run_oha(self.ctx, oha, url, body, duration, rate=rate, connections=connections, tag=f"{self.mode}-{tag}", cpus=self.outside)

    def gateway_requests(self):
        """Requests the internal gateway has served so far (its stub_status)."""
        _, text = http(f"{self.gateway}/_/nginx_status")
        return int(text.decode().splitlines()[2].split()[2])

    def check(self, group, deployments, n=10):
        """Every deployment gives the same reply (a success), and makes the calls
        through the gateway it should: the call tree's hops unmerged, none
        merged or fused. Returns the reply and the calls per request seen."""
        body = json.dumps(REQUESTS[group]).encode()
        replies, calls = {}, {}
        ingress_too = self.nginx["internal"] == self.nginx["ingress"]
        for d in deployments:
            seed(self.redis)
            before = self.gateway_requests()
            for _ in range(n):
                status, reply = http(self.urls[(group, d)], body)
                if status != 200:
                    die(f"{group} {d} answered {status}: {reply[:300]!r}")
            # Minus the status request that reads the counter, and the client's
            # own requests when the ingress is the same nginx.
            seen = self.gateway_requests() - before - 1 - (n if ingress_too else 0)
            calls[d] = seen / n
            replies[d] = reply
        for d in deployments:
            if replies[d] != replies["unmerged"]:
                die(f"{group}: {d} and unmerged replies differ: {replies}")
        for d in deployments:
            if d != "unmerged" and calls[d] > 0:
                die(f"{group} {d} made {calls[d]:.1f} calls per request through the gateway; it should make none")
        if abs(calls["unmerged"] - hops(group)) > 0.01:
            log(f"warning: {group} unmerged made {calls['unmerged']:.2f} gateway calls per request, the call tree (CALLS) says {hops(group)}")
        log(f"{group}: {', '.join(deployments)} answer {replies['unmerged'].decode()}; gateway calls per request: "
            + ", ".join(f"{d} {c:g}" for d, c in calls.items()))
        return replies["unmerged"].decode(), calls
