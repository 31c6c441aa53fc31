"""A whole application (socialNetwork under DeathStarBench's workloads, or
the generated one of genapp.py: `application`), on
the pinned testbed: the client, the ingress nginx and Redis on one half of
the CPUs; the function tier (every function process, of-watchdog when it is
there, and the internal nginx that carries calls between functions) on the
other.

Each deployment starts from the same Redis contents (seeded once through the
gateway, then restored before every run), answers the same requests with the
same replies, and is loaded at the same fixed total rates, split between the
entry points by the workload's shares (one latency-corrected oha per entry
point, all at once), until a rate is not sustained; the highest sustained rate
is then narrowed down. oha sends one body per process, so each entry point
reads one user, chosen so that every page is full (10 posts)."""

import json
import subprocess

from .config import APP_CALLER_KEY, APP_DEPLOYMENTS, APP_SEED, SOCIALNETWORK, child_env, die, log
from .genapp import NAME as GENAPP, requests as genapp_requests, seed_keys
from .apptier import RssSampler, scrape
from .appstats import interval, rounds, steady_rates, sustained_at, throughput
from .load import CpuWindow, oha_argv, parse_oha, quieter, ratio, sustained
from .processes import Redis, free_port, http, pinned, wait_health, wait_port
from .testbed import cpu_split, nginx_conf

# What runs on the outside CPUs; everything else a run measures is the function tier.
OUTSIDE = ("oha (client)", "redis", "nginx-ingress")


def deployment_processes(stack, groups):
    """What serves each route of a deployment's stack (appstack): {route:
    ("function", name) | ("merged", group)}, a merged pod's route (its
    caller's) going to its group's binary. A function with no entry (a
    merged caller, a callee the plan drops) is not started."""
    of_caller = {g["members"][0]: g for g in groups}
    return {e["name"]: ("merged", of_caller[e["name"]]) if "group" in e else ("function", e["name"]) for e in stack}


def merged_env(group, values):
    """The merged callees' own settings (the variables fmerge reported), with
    this testbed's values: REDIS_URL this Redis, any other its default."""
    env = {}
    for s in group["settings"]:
        if s["variable"] == s["key"]:
            continue  # the caller's own: set for every process already
        env[s["variable"]] = values.get(s["key"], s.get("default") or "")
    return env


def application(doc):
    """The description of the application a build or a load result is of
    (config.SOCIALNETWORK's fields); results from before --app are
    socialNetwork's."""
    return doc.get("application") or SOCIALNETWORK


def generated(doc):
    """Whether a build or a load result is of the generated application
    (its report and checks are item 8's, not socialNetwork's)."""
    return application(doc)["name"] == GENAPP


def split(workloads, workload, rate):
    """Each entry point's share of a total rate (at least 1 req/s)."""
    return {e: max(1, round(rate * w)) for e, w in workloads[workload].items()}


def next_rates(tried):
    """The next bisection step between the highest sustained rate and the
    lowest rate above it that was not, or None when they are adjacent."""
    ok = [r for r, s in tried.items() if s]
    if not ok:
        return None
    lo = max(ok)
    above = [r for r, s in tried.items() if not s and r > lo]
    if not above:
        return None
    hi = min(above)
    mid = int(round((lo + hi) / 2, -1)) if hi - lo > 40 else (lo + hi) // 2
    return mid if lo < mid < hi and mid not in tried else None


class App:
    """One deployment of the application on the pinned testbed."""

    def __init__(self, ctx, args, builds, kind, watchdog=None, rnd=0):
        self.ctx, self.args, self.kind = ctx, args, kind
        self.spec = application(builds)
        self.taken = set()
        self.outside, self.tier = cpu_split()
        run = ctx.run_dir / "app" / f"{kind}-round{rnd}"
        run.mkdir(parents=True)
        self.logs = run / "logs"
        # The function tier's processes ({name: pid}, for their RSS) and each
        # runtime's metrics port (scraped around every run: unmerged's are
        # the traffic and hop costs `fmerge plan --metrics` projects with,
        # the others' what each member took where it was merged).
        self.tier_pids, self.metrics = {}, {}
        procs = ctx.procs
        self.redis_port = self.port()
        rp = procs.start("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "",
                                   "--appendonly", "no", "--dir", str(run), "--protected-mode", "yes"],
                         log_dir=self.logs, cpus=self.outside)
        wait_port("redis", self.redis_port, rp, run)
        self.redis = Redis(self.redis_port)
        redis_url = f"redis://127.0.0.1:{self.redis_port}"
        groups = builds.get(kind, []) if kind in ("planner", "bounded", "whole") else []
        self.routes = deployment_processes(builds["stacks"][kind], groups)
        self.ports = {r: self.port() for r in self.routes}
        internal_port, ingress_port = self.port(), self.port()
        self.gateway = f"http://127.0.0.1:{internal_port}"
        self.ingress = f"http://127.0.0.1:{ingress_port}"
        # The ingress passes /function/<name> on unchanged; the internal one routes it.
        for role, port, routes, cpus in (("internal", internal_port, sorted(self.ports.items()), self.tier),
                                         ("ingress", ingress_port, [("gateway", internal_port)], self.outside)):
            d = run / f"nginx-{role}"
            d.mkdir()
            (d / "nginx.conf").write_text(nginx_conf(d, port, routes, len(cpus), pass_through=role == "ingress"))
            p = procs.start(f"nginx-{role}", ["nginx", "-p", d, "-e", d / "error.log", "-c", d / "nginx.conf"], log_dir=self.logs,
                            cpus=cpus)
            wait_port(f"nginx-{role}", port, p, run)
        # healthcheck_interval: how long a stopped process keeps draining (the
        # next deployment waits for it).
        common = {"GATEWAY_URL": self.gateway, "REDIS_URL": redis_url, "MACHINE_ID": "1", "healthcheck_interval": "1s",
                  "listen_address": "127.0.0.1", "FMERGE_CALLER_KEY": APP_CALLER_KEY}
        for route, (what, x) in self.routes.items():
            port = self.ports[route]
            if what == "merged":
                self.metrics[x["name"]] = self.port()
                env = {**common, **merged_env(x, {"REDIS_URL": redis_url, "MACHINE_ID": "1"}),
                       "port": str(port), "metrics_port": str(self.metrics[x["name"]])}
                p = procs.start(x["name"], [x["binary"]], env, log_dir=self.logs, cpus=self.tier)
                self.tier_pids[x["name"]] = p.pid
                wait_health(x["name"], port, p, run)
            elif kind == "watchdog":
                fn_port = self.port()
                tmp = run / "of-watchdog-tmp" / x
                tmp.mkdir(parents=True)
                self.metrics[x] = self.port()
                env = {**common, "mode": "http", "port": str(port), "upstream_url": f"http://127.0.0.1:{fn_port}",
                       "fprocess": f"env port={fn_port} metrics_port={self.metrics[x]} {ctx.out / 'bin' / 'unmerged' / x}",
                       "metrics_port": str(self.port()), "exec_timeout": "10s", "read_timeout": "10s",
                       "write_timeout": "10s", "healthcheck_interval": "1s", "TMPDIR": str(tmp)}
                p = procs.start(f"of-watchdog {x}", [watchdog], env, log_dir=self.logs, cpus=self.tier)
                self.tier_pids[f"of-watchdog {x}"] = p.pid
                wait_health(f"of-watchdog {x}", port, p, run)
                wait_health(f"{x} behind of-watchdog", fn_port, p, run)
            else:
                self.metrics[x] = self.port()
                env = {**common, "port": str(port), "metrics_port": str(self.metrics[x])}
                p = procs.start(x, [ctx.out / "bin" / "unmerged" / x], env, log_dir=self.logs, cpus=self.tier)
                self.tier_pids[x] = p.pid
                wait_health(x, port, p, run)
        log(f"app {kind}: {len(self.routes)} routes, "
            f"{sum(1 for w, _ in self.routes.values() if w == 'merged')} merged binaries; redis :{self.redis_port}, "
            f"ingress :{ingress_port} on CPUs {self.outside}, internal gateway :{internal_port} and the functions on CPUs {self.tier}")

    def port(self):
        """A free loopback port none of this deployment's processes was given
        yet (a port is only bound once its process starts)."""
        while True:
            p = free_port()
            if p not in self.taken:
                self.taken.add(p)
                return p

    def url(self, entry):
        return f"{self.ingress}/function/{entry}"

    def gateway_requests(self):
        _, text = http(f"{self.gateway}/_/nginx_status")
        return int(text.decode().splitlines()[2].split()[2])

    def snapshot(self):
        keys = self.redis.cmd("KEYS", "*")
        return {k: self.redis.cmd("DUMP", k) for k in keys}

    def restore(self, snap):
        # Queued calls of an overloaded run would write after the restore.
        self.ctx.procs.settle()
        self.redis.cmd("FLUSHALL")
        for k, v in snap.items():
            self.redis.cmd("RESTORE", k, 0, v, "REPLACE")

    def calls_per_request(self, entry, body, n=5):
        """Calls through the internal gateway per request to `entry` (beyond
        the request itself, which the ingress passes through it too)."""
        before = self.gateway_requests()
        for _ in range(n):
            status, reply = http(self.url(entry), body)
            if status != 200:
                die(f"app {self.kind}: {entry} answered {status}: {reply[:300]!r}")
        return (self.gateway_requests() - before - 1 - n) / n

    def mix(self, oha, workload, rate, requests, duration, connections, tag):
        """One fixed-rate run of a workload: an oha per entry point at its
        share of `rate`, all at once. Returns per-entry figures and the CPU
        each process spent per successful request."""
        rates = split(self.spec["workloads"], workload, rate)
        scrapes = self.ctx.run_dir / "metrics" / tag
        before = scrape(self.metrics, scrapes.with_suffix(".before.prom"))
        window, rss = CpuWindow(self.ctx), RssSampler(self.tier_pids)
        running = {e: subprocess.Popen(pinned(oha_argv(oha, self.url(e), requests[e], duration, r, connections), self.outside),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
                   for e, r in rates.items()}
        outs = {e: p.communicate(timeout=duration + 60) for e, p in running.items()}
        out = {"workload": workload, "rate": rate, "entries": {}, **rss.figures()}
        out["metrics"] = [before, scrape(self.metrics, scrapes.with_suffix(".after.prom"))]
        (self.ctx.run_dir / "oha").mkdir(parents=True, exist_ok=True)
        ok = 0
        for e, (stdout, stderr) in outs.items():
            if running[e].returncode != 0:
                die(f"oha failed on {e} ({running[e].returncode}): {stderr.decode(errors='replace')[-2000:]}")
            (self.ctx.run_dir / "oha" / f"app-{tag}-{e}.json").write_bytes(stdout)
            r = parse_oha(stdout, duration, rates[e], connections)
            r["sustained"] = sustained(r, self.spec["slo_p99_ms"])
            out["entries"][e] = r
            ok += r["ok"]
        out.update(window.figures(ok))
        c = out["cpu_us_per_request"] or {}
        out["function_tier_cpu_us"] = sum(v for k, v in c.items() if k not in OUTSIDE) if c else None
        out["total_cpu_us"] = sum(c.values()) if c else None
        out["ok_rps"] = ok / duration
        out["sustained"] = all(r["sustained"] for r in out["entries"].values())
        return out


def seed_once(app, seeder):
    """Fills the first deployment with the application's data (socialNetwork's
    through its gateway with the seeder, then picks the users the reads ask
    for; the generated one's keys straight into Redis); returns the Redis
    snapshot every run starts from and the requests."""
    if app.spec["seed"] == "keys":
        keys = seed_keys()
        for k, v in keys.items():
            app.redis.cmd("SET", k, v)
        log(f"app: seeded {len(keys)} keys")
        return app.snapshot(), genapp_requests()
    argv = [str(seeder), "--gateway", app.ingress, "--users", str(APP_SEED["users"]), "--degree", str(APP_SEED["degree"]),
            "--posts", str(APP_SEED["posts"]), "--concurrency", "4"]
    log(f"app: seeding: {' '.join(argv[1:])}")
    p = subprocess.run(argv, capture_output=True, text=True, env=child_env())
    if p.returncode != 0:
        die(f"the seeder failed: {p.stderr[-2000:]}")
    log(f"app: {p.stdout.strip()}")
    home = max(range(1, APP_SEED["users"] + 1), key=lambda u: app.redis.cmd("ZCARD", f"home-timeline:{u}"))
    own = max(range(1, APP_SEED["users"] + 1), key=lambda u: app.redis.cmd("ZCARD", f"user-timeline:{u}"))
    author = 1
    requests = {
        "read-home-timeline": json.dumps({"user_id": home, "start": 0, "stop": 10}),
        "read-user-timeline": json.dumps({"user_id": own, "start": 0, "stop": 10}),
        "compose-post": json.dumps({"username": f"user{author}", "user_id": author,
                                    "text": "hello @user2 and @user3, see https://example.com/a?x=1 and http://example.org/b",
                                    "media_ids": [11], "media_types": ["png"], "timestamp": 1700000000000}),
    }
    return app.snapshot(), requests


def check(app, snap, requests, expected):
    """The replies to each entry point's request from the seeded state, and
    the gateway calls each makes; the replies must match the unmerged ones."""
    replies, calls = {}, {}
    for e in app.spec["entries"]:
        app.restore(snap)
        status, reply = http(app.url(e), requests[e].encode())
        if status != 200:
            die(f"app {app.kind}: {e} answered {status}: {reply[:300]!r}")
        replies[e] = reply
        app.restore(snap)
        calls[e] = app.calls_per_request(e, requests[e].encode())
    for e, r in replies.items():
        if expected is not None and r != expected[e]:
            die(f"app {app.kind}: {e} replied {r[:200]!r}, unmerged replied {expected[e][:200]!r}")
    pages = {e: len(json.loads(replies[e]).get("posts", [])) for e in replies if e.startswith("read-")}
    log(f"app {app.kind}: same replies as unmerged; " + (f"posts per page {pages}; " if pages else "") + "gateway calls per request "
        + ", ".join(f"{e} {c:g}" for e, c in calls.items()))
    return replies, calls


def run_quietly(app, oha, workload, rate, snap, requests, args, tag):
    """A fixed-rate run from the seeded state; once more if others took the
    machine, keeping the quieter one."""
    def once(attempt):
        app.restore(snap)  # which waits for the testbed to go idle first
        return app.mix(oha, workload, rate, requests, args.duration, args.connections, tag if attempt == 0 else f"{tag}-again")

    return quieter(once, f"{app.kind} {workload} @ {rate}/s")


def summary(r):
    tier = r["function_tier_cpu_us"]
    return "; ".join(f"{e} {x['achieved_rps']:.0f}/s ok {100 * x['success_rate']:.1f}% p50 {x['p50_ms'] or 0:.2f} "
                     f"p99 {x['p99_ms'] or 0:.2f} ms" for e, x in r["entries"].items()) + \
        (f"; function tier {tier:.0f} µs/request" if tier else "") + f"; others' CPU {r['cpu_others_pct']:.0f}%"


def workload_runs(app, oha, workload, snap, requests, args, rnd=0):
    """One round: the ladder until a rate is not sustained, then args.refine
    bisection steps. Returns the runs in order and the highest sustained rate."""
    runs, tried = [], {}
    for rate in args.app_rates.get(workload, app.spec["ladder"]):
        r = run_quietly(app, oha, workload, rate, snap, requests, args, f"{app.kind}-r{rnd}-{workload}-{rate}")
        runs.append(r)
        tried[rate] = r["sustained"]
        log(f"app {app.kind} round {rnd + 1} {workload} @ {rate}/s: {'sustained' if r['sustained'] else 'NOT sustained'}: "
            f"{summary(r)}")
        if not r["sustained"]:
            break
    for _ in range(args.refine):
        mid = next_rates(tried)
        if mid is None:
            break
        r = run_quietly(app, oha, workload, mid, snap, requests, args, f"{app.kind}-r{rnd}-{workload}-{mid}-refine")
        r["refine"] = True
        runs.append(r)
        tried[mid] = r["sustained"]
        log(f"app {app.kind} round {rnd + 1} {workload} @ {mid}/s (refining): "
            f"{'sustained' if r['sustained'] else 'NOT sustained'}")
    best = max([x for x, s in tried.items() if s], default=None)
    return {"runs": runs, "max_sustained": best, "lower_bound": best is not None and best == max(tried)}


def measured_kinds(args, builds):
    """The deployments started, in order, and {deployment: the one measured
    for it} for those with the planner's very groups (measured once)."""
    kinds, same = [], {}
    for kind in args.app_deployments:
        if kind != "planner" and "planner" in args.app_deployments and same_groups(builds, kind, "planner"):
            log(f"app {kind}: the same groups as the planner's for {', '.join(application(builds)['entries'])}: "
                "measured once, as planner")
            same[kind] = "planner"
        else:
            kinds.append(kind)
    return kinds, same


def app_load(ctx, args, builds, oha, watchdog, seeded=None):
    """args.app_rounds rounds, each starting every deployment in turn (a
    fresh start) and running every workload's ladder on it, from the data
    `seeded` ({"snap", "requests"}: appprofile's) or else seeded into the
    first. Returns the results: per deployment and workload, one entry per
    round."""
    spec = application(builds)
    res = {"deployments": {}, "application": spec, "seed": APP_SEED if spec["seed"] == "seeder" else None,
           "duration_s": args.duration, "connections_per_entry": args.connections, "rounds": args.app_rounds}
    snap, requests = (seeded["snap"], seeded["requests"]) if seeded else (None, None)
    if seeded:
        res["requests"], res["redis_keys"] = requests, len(snap)
    expected = None
    kinds, same = measured_kinds(args, builds)
    for rnd in range(args.app_rounds):
        for kind in kinds:
            app = App(ctx, args, builds, kind, watchdog, rnd)
            if snap is None:
                snap, requests = seed_once(app, ctx.out / "bin" / "seed")
                res["requests"] = requests
                res["redis_keys"] = len(snap)
            else:
                app.restore(snap)
            replies, calls = check(app, snap, requests, expected)
            if expected is None:
                expected = replies
                res["replies"] = {e: r.decode() for e, r in replies.items()}
            d = res["deployments"].setdefault(kind, {
                "gateway_calls_per_request": calls, "processes": len(app.routes) * (2 if kind == "watchdog" else 1),
                **{w: {"rounds": []} for w in args.app_workloads}})
            # Warm every connection pool and Redis client first.
            app.restore(snap)
            app.mix(oha, "mixed", spec["ladder"][0], requests, 2, 16, f"{kind}-r{rnd}-warmup")
            for workload in args.app_workloads:
                d[workload]["rounds"].append(workload_runs(app, oha, workload, snap, requests, args, rnd))
            ctx.procs.stop_all()
    for kind, as_ in same.items():
        res["deployments"][as_]["same_as"] = res["deployments"][as_].get("same_as", []) + [kind]
    res["verdicts"] = verdicts(res)
    return res


def same_groups(builds, a, b):
    """Whether deployments a and b serve the entry points with the same
    merged members (then their binaries are the same merge)."""
    def of(kind):
        entries = application(builds)["entries"]
        return {g["members"][0]: sorted(g["members"]) for g in builds.get(kind) or [] if g["members"][0] in entries}
    return bool(of(a)) and of(a) == of(b)


def common_rows(res, workload, a, b, rnd=0, only=None):
    """(rate, run of a, run of b) for every rate both sustained in round
    rnd (of those in `only`, if given)."""
    ra, rb = rounds(res, a, workload), rounds(res, b, workload)
    if rnd >= len(ra) or rnd >= len(rb):
        return []
    sa, sb = sustained_at(ra[rnd]), sustained_at(rb[rnd])
    both = set(sa) & set(sb) & (set(only) if only is not None else set(sa))
    return [(rate, sa[rate], sb[rate]) for rate in sorted(both)]


def verdicts(res):
    """Each deployment against unmerged, per workload, over the rounds: the
    highest sustained rate's ratio (paired round by round), and per round
    the worst p50 and p99 ratios per entry point and the median
    function-tier CPU ratio at the rates both sustained in every round; each
    as its mean and interval over rounds (appstats.interval)."""
    out = {}
    for workload in application(res)["workloads"]:
        for kind in APP_DEPLOYMENTS:
            if kind == "unmerged" or not rounds(res, kind, workload):
                continue
            steady = steady_rates(res, workload, [kind, "unmerged"])
            p50, p99, cpu = [], [], []
            for rnd in range(len(rounds(res, kind, workload))):
                rows = common_rows(res, workload, kind, "unmerged", rnd, steady)
                p50.append(worst(ratio(r[1]["entries"][e]["p50_ms"], r[2]["entries"][e]["p50_ms"])
                                 for r in rows for e in r[1]["entries"]))
                p99.append(worst(ratio(r[1]["entries"][e]["p99_ms"], r[2]["entries"][e]["p99_ms"])
                                 for r in rows for e in r[1]["entries"]))
                c = sorted(ratio(r[2]["function_tier_cpu_us"], r[1]["function_tier_cpu_us"]) for r in rows
                           if r[1]["function_tier_cpu_us"] and r[2]["function_tier_cpu_us"])
                cpu.append(c[len(c) // 2] if c else None)
            t = throughput(res, kind, workload)
            out[f"{workload}/{kind}"] = {
                "throughput_ratio": t["ratio"],
                "p50_ratio_worst": interval(p50),
                "p99_ratio_worst": interval(p99),
                "rates_compared": steady,
                "tier_cpu_unmerged_over_this": interval(cpu),
            }
    return out


def worst(ratios):
    """The highest of the ratios that are not None (None without one)."""
    return max([x for x in ratios if x is not None], default=None)
