"""`--only process`'s worker, run by process.py under `unshare --net
--mount` (so as root): the cluster of the watchdog-process tests
(merger/tests/support/watchdog.rs) on this namespace's loopback, and the
runs. A private /etc/hosts maps the cluster's names to 127.0.0.1, a
private dir holds the Redis password over /var/openfaas/secrets, Redis
(with that password) listens on 6379 and nginx, the gateway, on 8080: the
addresses the functions have written in. Deployed behind that nginx:
- unmerged: write-home-timeline and social-graph-get-followers, each behind
  an of-watchdog in streaming mode (its default) that starts its binary per
  request; the metrics port set, so that two fit one namespace;
- merged: fmerge's binary, through the warm-start launcher fmerge builds
  beside it (as its image runs it), as `fprocess` of the real of-watchdog 0.11.6, at
  `/function/write-home-timeline-merged`.
Then: the check that both answer alike and only unmerged calls through the
gateway, the per-call runs (processcalls.py), and the load runs."""

import atexit
import json
import os
import subprocess
import time
from pathlib import Path

from .config import REQUESTS, die, log, write_atomic
from .load import describe, fixed_run, in_turn, ladder, median_run, ratio, refine, run_oha
from .processcalls import per_call
from .processes import Processes, Redis, become_subreaper, children_of, http, kill_adopted, seed, wait_port
from .testbed import nginx_conf

# The cluster's names and ports, as the fixture's helper crates have them.
HOSTS = ["gateway.openfaas.svc.cluster.local.", "redis.openfaas-fn.svc.cluster.local."]
GATEWAY_PORT = 8080
REDIS_PORT = 6379
SECRETS_DIR = Path("/var/openfaas/secrets")
PASSWORD = "fmerge-bench-redis-password"
CALLER, CALLEE = "write-home-timeline", "social-graph-get-followers"
MERGED = f"{CALLER}-merged"
# The name each deployment's processes are reported under: its watchdogs,
# with every process they started (reaped children included).
TIER = {"unmerged": [f"{CALLER} (of-watchdog)", f"{CALLEE} (of-watchdog)"], "merged": [f"{MERGED} (of-watchdog)"]}
GROUP = "pair"  # REQUESTS["pair"] is the caller's request


def hosts_text(hosts):
    """The private /etc/hosts: each name, with and without its trailing
    dot, at 127.0.0.1."""
    text = "127.0.0.1 localhost\n::1 localhost\n"
    for h in hosts:
        h = h.rstrip(".")
        text += f"127.0.0.1 {h} {h}.\n"
    return text


def reaped_ticks(stat):
    """cutime + cstime of a /proc/<pid>/stat line: the CPU of the children
    it has waited for (and of theirs)."""
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[13]) + int(fields[14])


class ProcessTree(Processes):
    """Processes whose CPU includes what their reaped children spent: an
    of-watchdog starts a process per request, gone before anyone can read
    its /proc entry, and its CPU lands in the watchdog's cutime. The merged
    binary's warm server (fmerge-warm's: it forks the requests' processes,
    detached from the watchdog that started its first) is adopted by this
    worker, a child subreaper, and counted under the tier of the binary it
    runs (`adopt`)."""

    def __init__(self, log_dir):
        super().__init__(log_dir)
        self.adopted = {}  # binary path -> the tier name its warm servers count under
        become_subreaper("the process worker")

    def stop_all(self):
        """As every process set stops, then kills what is left below this
        worker (their subreaper): a function's process that its watchdog
        left running when it ended (a merged binary that had hung, once)
        would outlive the run."""
        super().stop_all()
        kill_adopted()

    def adopt(self, binary, name):
        self.adopted[str(binary)] = name

    def own_ticks(self):
        me = os.getpid()
        started = {p.pid for _, p, _ in self.running}
        for pid in children_of(me):
            if pid in started or pid in self.extra_names:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv0 = f.read().split(b"\0")[0].decode(errors="replace")
            except OSError:
                continue
            if argv0 in self.adopted:
                self.extra_names[pid] = self.adopted[argv0]
        out = super().own_ticks()
        reaping = [(name, p.pid) for name, p, _ in self.running] + [(n, pid) for pid, n in self.extra_names.items()]
        for name, pid in reaping:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    out[name] = out.get(name, 0) + reaped_ticks(f.read())
            except OSError:
                pass
        return out


def namespaces():
    """This process's mount and network namespaces, as /proc names them."""
    return {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("mnt", "net")}


def enter_cluster(work, outside):
    """lo up, the private hosts file and secrets dir mounted (the mounts end
    with the namespace; the empty mount point is the only trace outside).
    `outside`: the namespaces of the bench that started this worker, which
    this one's must differ from in both."""
    mine = namespaces()
    if any(mine[ns] == outside.get(ns) for ns in mine):
        die("the process worker only runs in a namespace of its own (bench/run --only process makes it)")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    work.mkdir(parents=True, exist_ok=True)
    (work / "hosts").write_text(hosts_text(HOSTS))
    secrets = work / "secrets"
    secrets.mkdir(exist_ok=True)
    (secrets / "redis-password").write_text(PASSWORD)
    SECRETS_DIR.mkdir(parents=True, exist_ok=True)
    for src, dst in ((work / "hosts", "/etc/hosts"), (secrets, str(SECRETS_DIR))):
        subprocess.run(["mount", "--bind", str(src), dst], check=True)


class Bed:
    """The cluster and both deployments, with what load.fixed_run and
    load.refine need of a testbed (urls, fresh, oha), and what load() needs:
    the request's group and each deployment's processes (tier). A kind of
    testbed (httpbed.HttpBed) says what it serves, how its data is made
    fresh (reset) and what of it both deployments must leave alike (state)."""
    group, tier, mode = GROUP, TIER, "process"

    def __init__(self, ctx, plan):
        self.ctx = ctx
        self.start_redis()
        self.reset()
        bins = {k: Path(v) for k, v in plan["binaries"].items()}
        tmp = ctx.run_dir / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env = {"TMPDIR": str(tmp), "RUST_BACKTRACE": "0", "GATEWAY_URL": f"http://{HOSTS[0]}:{GATEWAY_PORT}"}
        # The real of-watchdog holds 8081: the others get a metrics port each.
        self.serve([(CALLER, plan["patched_watchdog"], bins["WriteHomeTimeline"], TIER["unmerged"][0],
                     {**env, "metrics_port": "20000"}),
                    (CALLEE, plan["patched_watchdog"], bins["SocialGraphGetFollowers"], TIER["unmerged"][1],
                     {**env, "metrics_port": "20001"}),
                    (MERGED, plan["watchdog"], f"{bins['launcher']} {bins['merged']}", TIER["merged"][0], env)],
                   plan, CALLER, MERGED)
        ctx.procs.adopt(bins["merged"], TIER["merged"][0])

    def start_redis(self):
        """Redis with the cluster's password, on the cluster's port."""
        run = self.ctx.run_dir
        rp = self.ctx.procs.start("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(REDIS_PORT),
                                            "--requirepass", PASSWORD, "--save", "", "--appendonly", "no",
                                            "--dir", str(run)], log_dir=run / "logs")
        wait_port("redis", REDIS_PORT, rp, run)
        self.redis = Redis(REDIS_PORT)
        self.redis.cmd("AUTH", PASSWORD)

    def serve(self, served, plan, caller, merged):
        """Each of `served` (name, watchdog, fprocess, label, env) behind an
        of-watchdog on a port of its own, nginx as the gateway to them on
        GATEWAY_PORT, and the urls of `caller` unmerged and `merged`."""
        run = self.ctx.run_dir
        logs = run / "logs"
        self.ports, self.pids = {}, {}
        for i, (name, watchdog, binary, label, env) in enumerate(served):
            port = 18080 + i
            env = {"exec_timeout": "10s", "read_timeout": "10s", "write_timeout": "10s", **env,
                   "fprocess": str(binary), "port": str(port)}
            p = self.ctx.procs.start(label, [watchdog], env, log_dir=logs)
            wait_port(label, port, p, run)
            self.ports[name] = port
            self.pids[label] = p.pid
        ng = run / "nginx"
        ng.mkdir(exist_ok=True)
        (ng / "nginx.conf").write_text(nginx_conf(ng, GATEWAY_PORT, sorted(self.ports.items()), plan["nginx_workers"]))
        p = self.ctx.procs.start("nginx", ["nginx", "-p", ng, "-e", ng / "error.log", "-c", ng / "nginx.conf"],
                                 log_dir=logs)
        wait_port("nginx", GATEWAY_PORT, p, run)
        self.urls = {(self.group, "unmerged"): f"http://127.0.0.1:{GATEWAY_PORT}/function/{caller}",
                     (self.group, "merged"): f"http://127.0.0.1:{GATEWAY_PORT}/function/{merged}"}
        log(f"cluster up in its namespace: redis :{REDIS_PORT}, nginx :{GATEWAY_PORT}, of-watchdogs {self.ports}")

    def reset(self):
        """The data every run starts from: the seed."""
        seed(self.redis)

    def state(self):
        """What both deployments must leave alike: the timelines written."""
        return {"timelines": len(self.redis.cmd("KEYS", "home-timeline:*"))}

    def fresh(self):
        waited = self.ctx.procs.settle()
        if waited >= 5:
            log(f"  the testbed took {waited:.0f} s to go idle after the last run")
        self.reset()

    def oha(self, oha, url, body, duration, rate=None, connections=64, tag="run"):
        return run_oha(self.ctx, oha, url, body, duration, rate=rate, connections=connections, tag=f"process-{tag}")

    def gateway_requests(self):
        _, text = http(f"http://127.0.0.1:{GATEWAY_PORT}/_/nginx_status")
        return int(text.decode().splitlines()[2].split()[2])

    def check(self, n=10):
        """Both answer alike (200, same body, same state); the calls each
        made through the gateway per request (its counter less the request
        itself and the status read)."""
        body = json.dumps(REQUESTS[self.group]).encode()
        out = {}
        for d in ("unmerged", "merged"):
            self.reset()
            before = self.gateway_requests()
            for _ in range(n):
                status, reply = http(self.urls[(self.group, d)], body)
                if status != 200:
                    die(f"{d} answered {status}: {reply[:300]!r}")
            calls = (self.gateway_requests() - before - 1 - n) / n
            out[d] = {"reply": reply.decode(), "gateway_calls_per_request": calls, **self.state()}
        alike = [{k: v for k, v in out[d].items() if k != "gateway_calls_per_request"} for d in out]
        if alike[0] != alike[1]:
            die(f"merged and unmerged answer differently: {out}")
        if out["merged"]["gateway_calls_per_request"] > 0:
            die(f"the merged binary made {out['merged']['gateway_calls_per_request']:.1f} calls per request through the gateway")
        log("check: both answer " + out["unmerged"]["reply"].strip() + "; gateway calls per request: "
            + ", ".join(f"{d} {o['gateway_calls_per_request']:g}" for d, o in out.items()))
        return out


def tier_cpu(bed, r, d):
    """CPU µs per successful request of deployment d's watchdogs and all they started."""
    c = r.get("cpu_us_per_request") or {}
    return sum(c.get(k, 0.0) for k in bed.tier[d]) if c else None


def load(bed, oha, args):
    """Warm-up, a closed loop each, the same fixed rates for both, args.repeat
    rounds of each (in turn, the order turning each round and rate; the run
    with the median p50 kept, every round's p50 with it), then each one's
    highest sustained rate."""
    deps = ["unmerged", "merged"]
    body = json.dumps(REQUESTS[bed.group])
    for d in deps:
        bed.oha(oha, bed.urls[(bed.group, d)], body, 2, rate=20, connections=8, tag=f"{d}-warmup")
    closed = {}
    for d in deps:
        bed.fresh()
        closed[d] = bed.oha(oha, bed.urls[(bed.group, d)], body, args.closed_duration, connections=args.closed_connections,
                            tag=f"{d}-closed")
        closed[d]["tier_cpu_us"] = tier_cpu(bed, closed[d], d)
        log(f"{d}: closed loop ({args.closed_connections} conns) {closed[d]['ok_rps']:.0f} req/s ok, "
            f"p50 {closed[d]['p50_ms']:.1f} ms")
    rates = ladder({d: closed[d]["ok_rps"] for d in deps}, args.rates)
    log(f"fixed rates {rates}")
    rows = []
    for i, rate in enumerate(rates):
        row = {"rate": rate}
        tries = {d: [] for d in deps}
        for k in range(args.repeat):
            for d in in_turn(deps, i + k):
                r = fixed_run(bed, oha, bed.group, d, rate, args, f"{d}-{rate}" + (f"-{k}" if k else ""))
                r["tier_cpu_us"] = tier_cpu(bed, r, d)
                tries[d].append(r)
                log(f"{d} @ {rate}/s{f' ({k + 1} of {args.repeat})' if args.repeat > 1 else ''}: {describe(r)}")
        for d in deps:
            row[d] = median_run(tries[d])
            row[d]["sustained_runs"] = [r["sustained"] for r in tries[d]]
        row["p50_ratio"] = ratio(row["merged"]["p50_ms"], row["unmerged"]["p50_ms"])
        row["p99_ratio"] = ratio(row["merged"]["p99_ms"], row["unmerged"]["p99_ms"])
        rows.append(row)
    out = {"closed_loop": closed, "fixed_rate": rows, "refine": {}, "max_sustained_rate": {}, "max_sustained_lower_bound": {}}
    for d in deps:
        out["refine"][d], out["max_sustained_rate"][d], out["max_sustained_lower_bound"][d] = refine(bed, oha, bed.group, d, rows, args)
        for r in out["refine"][d]:
            r["tier_cpu_us"] = tier_cpu(bed, r, d)
    return out


def partial_out(plan):
    """What the worker has measured so far, while it runs or after it died."""
    return Path(plan["out"] + ".partial")


def worker(ctx, plan_path, oha):
    """Runs everything in this namespace and writes plan['out']."""
    plan = json.loads(Path(plan_path).read_text())
    args = type("Args", (), plan["args"])()
    ctx.procs = ProcessTree(ctx.run_dir / "logs")
    atexit.register(ctx.procs.stop_all)
    res = {}

    def measured(key, value):
        # Each part as it is measured, so that a run that dies later keeps
        # it (partial_out); plan['out'] only once all is there.
        res[key] = value
        write_atomic(partial_out(plan), json.dumps(res, indent=1) + "\n")

    try:
        enter_cluster(ctx.run_dir / "cluster", plan["namespaces"])
        if plan.get("kind") == "httpmode":
            from .httpbed import QUOTE, HttpBed
            bed = HttpBed(ctx, plan)
            measured("check", bed.check())
            measured("hop", bed.hop(args.calls))
        else:
            bed = Bed(ctx, plan)
            measured("check", bed.check())
            measured("per_call", per_call(bed, plan, args))
        measured("load", load(bed, oha, args))
        if plan.get("kind") == "httpmode":
            # Then the three-function chain order-front → price → tax alone.
            bed.group = QUOTE
            measured("check_quote", bed.check())
            measured("load_quote", load(bed, oha, args))
            # Each chain's p50 in two at its verdict's rate (the request
            # without calls is the same order-front's for both).
            measured("fixed_part", bed.fixed_part(oha, args, res["load_quote"]))
            measured("fixed_part_whole", bed.fixed_part(oha, args, res["load"]))
        write_atomic(plan["out"], json.dumps(res, indent=1) + "\n")
        partial_out(plan).unlink()
    finally:
        ctx.procs.stop_all()
        time.sleep(0.2)
