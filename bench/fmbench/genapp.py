"""A second application for the planner's out-of-sample check (issue 51,
item 8): generated, unlike socialNetwork, written as teams write functions on
fmerge's runtime, and run for real by the application bench
(`bench/run --only app --app genapp`).

Its 43 functions are written out by `generate` into a cargo workspace of
their own (path dependencies on this repository's runtime and sn-store, its
Cargo.lock copied from here, so that they build with the same crates in the
same target dir). What sets it apart from socialNetwork, each on purpose:

- fan-outs of CPU-bound callees (`ga-feed`'s three renders): merged into one
  pod they run on the caller's task, one after another;
- a path-dependent call (`ga-catalog` calls `ga-cat-facets` only on
  `ga-search`'s path, not on `ga-shop`'s) and a call in a loop;
- a cycle with calls back (`ga-cyc-a` ↔ `ga-cyc-b`, depth-limited);
- a deep chain of I/O-bound callees (`ga-account`'s Redis reads);
- callers outside the planned part (`gx-*`: the bench plans `ga-*` alone)
  that call into it, and an entry point seldom called (`ga-cron`).

Every function replies `{"v": u64}`, a hash of its name, its own work and
its callees' replies, so that merged and unmerged deployments can be told
apart by any difference in what ran. Its Redis reads are of keys the bench
seeds (`seed_keys`); nothing writes, so every run starts from the same data."""

import json
import re
import shutil
from pathlib import Path

NAME = "genapp"
# What the bench plans: the planned part (`fmerge plan --filter`); the gx-*
# functions stay outside it, deployed unmerged, calling in.
PLANNED = "ga-*"

# Each function: its own CPU work (µs, roughly: iterations of a xorshift, one
# per ns), its Redis reads (one round trip each) and its calls, in order:
#   ("seq", [callees])        one after another
#   ("par", [callees])        all at once (tokio::try_join!)
#   ("loop", callee, n)       n times, one after another
#   ("if_path", p, callee)    only when the request's path is p
#   ("back", callee, depth)   only while the request's depth is under depth
SPEC = {
    # Entry points (declared: com.openfaas.fmerge.entry).
    "ga-shop": {"cpu": 40, "io": 1, "calls": [("par", ["ga-catalog", "ga-pricing", "ga-stock", "ga-reviews"]),
                                               ("seq", ["ga-cart"])]},
    "ga-search": {"cpu": 60, "io": 0, "calls": [("seq", ["ga-query"]), ("loop", "ga-rank", 2),
                                                 ("seq", ["ga-catalog"])]},
    "ga-feed": {"cpu": 30, "io": 1, "calls": [("par", ["ga-render-1", "ga-render-2", "ga-render-3"]),
                                               ("seq", ["ga-recs"])]},
    "ga-account": {"cpu": 20, "io": 1, "calls": [("seq", ["ga-auth", "ga-cart"]), ("seq", ["ga-notify"])]},
    "ga-cron": {"cpu": 50, "io": 2, "calls": [("seq", ["ga-report"])]},
    # Callers outside the planned part.
    "gx-partner": {"cpu": 30, "io": 1, "calls": [("par", ["ga-stock", "ga-pricing"])]},
    "gx-audit": {"cpu": 20, "io": 1, "calls": [("seq", ["ga-session", "ga-audit-log"])]},
    # The shop's and the search's callees.
    "ga-catalog": {"cpu": 30, "io": 1, "calls": [("seq", ["ga-cat-db", "ga-cat-img"]), ("if_path", 1, "ga-cat-facets")]},
    "ga-cat-db": {"cpu": 10, "io": 3, "calls": []},
    "ga-cat-img": {"cpu": 80, "io": 0, "calls": []},
    "ga-cat-facets": {"cpu": 150, "io": 1, "calls": []},
    "ga-pricing": {"cpu": 25, "io": 0, "calls": [("seq", ["ga-tax", "ga-fx"])]},
    "ga-tax": {"cpu": 30, "io": 0, "calls": []},
    "ga-fx": {"cpu": 10, "io": 1, "calls": [("seq", ["ga-geo"])]},
    "ga-geo": {"cpu": 20, "io": 0, "calls": []},
    "ga-stock": {"cpu": 15, "io": 0, "calls": [("loop", "ga-stock-db", 2)]},
    "ga-stock-db": {"cpu": 5, "io": 1, "calls": []},
    "ga-reviews": {"cpu": 20, "io": 0, "calls": [("par", ["ga-rev-db", "ga-rev-score"])]},
    "ga-rev-db": {"cpu": 10, "io": 2, "calls": []},
    "ga-rev-score": {"cpu": 200, "io": 0, "calls": []},
    "ga-cart": {"cpu": 20, "io": 2, "calls": [("seq", ["ga-cart-db", "ga-pricing"]), ("if_path", 2, "ga-coupon")]},
    "ga-cart-db": {"cpu": 10, "io": 2, "calls": []},
    "ga-coupon": {"cpu": 40, "io": 1, "calls": []},
    "ga-query": {"cpu": 20, "io": 0, "calls": [("seq", ["ga-q-parse", "ga-q-index"])]},
    "ga-q-parse": {"cpu": 50, "io": 0, "calls": []},
    "ga-q-index": {"cpu": 10, "io": 3, "calls": []},
    "ga-rank": {"cpu": 120, "io": 0, "calls": [("seq", ["ga-rank-model"])]},
    "ga-rank-model": {"cpu": 250, "io": 0, "calls": []},
    # The feed's CPU-bound fan-out.
    "ga-render-1": {"cpu": 400, "io": 0, "calls": [("seq", ["ga-tmpl"])]},
    "ga-render-2": {"cpu": 400, "io": 0, "calls": [("seq", ["ga-tmpl"])]},
    "ga-render-3": {"cpu": 400, "io": 0, "calls": [("seq", ["ga-tmpl"])]},
    "ga-tmpl": {"cpu": 10, "io": 1, "calls": []},
    "ga-recs": {"cpu": 40, "io": 2, "calls": [("seq", ["ga-rank"])]},
    # The account's deep chain of I/O-bound callees.
    "ga-auth": {"cpu": 30, "io": 1, "calls": [("seq", ["ga-session"])]},
    "ga-session": {"cpu": 10, "io": 2, "calls": [("seq", ["ga-profile"])]},
    "ga-profile": {"cpu": 10, "io": 1, "calls": [("par", ["ga-prefs", "ga-avatar"])]},
    "ga-prefs": {"cpu": 5, "io": 2, "calls": []},
    "ga-avatar": {"cpu": 60, "io": 0, "calls": []},
    "ga-notify": {"cpu": 15, "io": 1, "calls": []},
    "ga-audit-log": {"cpu": 10, "io": 1, "calls": []},
    # The cron's report and the cycle.
    "ga-report": {"cpu": 100, "io": 1, "calls": [("seq", ["ga-cyc-a"])]},
    "ga-cyc-a": {"cpu": 20, "io": 1, "calls": [("seq", ["ga-cyc-b"])]},
    "ga-cyc-b": {"cpu": 50, "io": 0, "calls": [("back", "ga-cyc-a", 6)]},
}

# The entry points the stack declares, and each one's request: the path the
# requests take (ga-search's reaches ga-cat-facets, ga-shop's ga-coupon).
ENTRIES = {"ga-shop": {"path": 2}, "ga-search": {"path": 1}, "ga-feed": {"path": 0},
           "ga-account": {"path": 0}, "ga-cron": {"path": 0}, "gx-partner": {"path": 0}, "gx-audit": {"path": 0}}
# Its one workload, mixed: each entry point's share of the total rate.
WORKLOADS = {"mixed": {"ga-shop": 0.3, "ga-search": 0.25, "ga-feed": 0.15, "ga-account": 0.15, "ga-cron": 0.03,
                       "gx-partner": 0.08, "gx-audit": 0.04}}
# The deployments --only app --app genapp loads unless --app-deployments
# says otherwise: the planner's against unmerged.
DEPLOYMENTS = ["unmerged", "planner"]

# The total rates the load climbs (then bisects), and the profile run's (the
# planner plans from its scrapes): one the unmerged deployment sustains with
# room on a 2-core testbed, where its function tier has one core and each
# mixed request costs it about 13 calls.
LADDER = [30, 45, 70, 100, 150, 220, 330, 500, 750, 1100, 1600]
PROFILE_RATE = 45
# The p99 under which a run counts as sustained. socialNetwork's 50 ms
# (config.SLO_P99_MS) is missed by the unmerged deployment at any rate: its
# ga-shop makes 20 calls a request, most of them one after another, and the
# p50s alone were 13–19 ms on the 2-core testbed at 30 requests a second. Past a rate its function
# tier cannot carry, queues grow without bound and p99 passes any bound.
SLO_P99_MS = 150.0

CARGO_TOML = """\
# Generated by bench/fmbench/genapp.py; rewritten by every run.
[workspace]
resolver = "3"
members = [{members}]

[workspace.package]
edition = "2024"
version = "0.1.0"
license = "MIT OR Apache-2.0"

[workspace.dependencies]
fmerge-runtime = {{ path = "{root}/functions/runtime" }}
sn-store = {{ path = "{root}/functions/sn-store" }}
ga-work = {{ path = "ga-work" }}
{shared}

{profile}"""

WORK_LIB = """\
//! What every generated function shares: its request and reply, its own
//! CPU work and the hash its reply carries.
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Default, Clone, Copy)]
pub struct Req {
    #[serde(default)]
    pub path: u32,
    #[serde(default)]
    pub depth: u32,
}

impl Req {
    /// The body of a call made while serving this request.
    pub fn onward(self) -> Vec<u8> {
        serde_json::to_vec(&Req { path: self.path, depth: self.depth + 1 }).expect("a Req serializes")
    }
}

#[derive(Deserialize, Serialize)]
pub struct Reply {
    pub v: u64,
}

pub fn mix(v: u64, x: u64) -> u64 {
    (v.rotate_left(7) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// `iterations` steps of xorshift64: CPU work that no optimizer removes.
pub fn spin(seed: u64, iterations: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..std::hint::black_box(iterations) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// A callee's reply's hash.
pub fn val(reply: &[u8]) -> Result<u64, fmerge_runtime::Error> {
    Ok(serde_json::from_slice::<Reply>(reply)?.v)
}

/// A function name's own hash (FNV-1a), its reply's start.
pub const fn seed(name: &str) -> u64 {
    let b = name.as_bytes();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < b.len() {
        h = (h ^ b[i] as u64).wrapping_mul(0x100_0000_01b3);
        i += 1;
    }
    h
}
"""


def release_profile(root):
    """The main workspace's release profile, so that the generated functions
    build as socialNetwork's do (and share its compiled dependencies)."""
    text = (Path(root) / "Cargo.toml").read_text()
    start = text.index("[profile.release]")
    return text[start:]


def shared_dependencies(root, names=("serde", "serde_json", "tokio")):
    """The main workspace's lines for the registry crates the generated
    functions use, so that they take the same versions and features (and
    share its compiled dependencies)."""
    text = (Path(root) / "Cargo.toml").read_text()
    deps = text[text.index("[workspace.dependencies]"):]
    return "\n".join(re.search(rf"^{n} = .*$", deps, re.M).group(0) for n in names)


def callees(spec=SPEC):
    """{caller: [callees]} in call order, each once."""
    out = {}
    for name, f in spec.items():
        seen = []
        for step in f["calls"]:
            names = step[1] if step[0] in ("seq", "par") else [step_callee(step)]
            seen += [n for n in names if n not in seen]
        out[name] = seen
    return out


def step_callee(step):
    """The one callee of a loop, if_path or back step."""
    return step[2] if step[0] == "if_path" else step[1]


def rust_call(callee, indent):
    return f'{indent}v = ga_work::mix(v, ga_work::val(&rt::invoke("{callee}", req.onward()).await?)?);\n'


def rust_main(name, f):
    """The function's src/main.rs."""
    body = ""
    for step in f["calls"]:
        kind = step[0]
        if kind == "seq":
            body += "".join(rust_call(c, "    ") for c in step[1])
        elif kind == "par":
            outs = ", ".join(f"r{i}" for i in range(len(step[1])))
            calls = "".join(f'        rt::invoke("{c}", req.onward()),\n' for c in step[1])
            body += f"    let ({outs}) = tokio::try_join!(\n{calls}    )?;\n"
            body += "".join(f"    v = ga_work::mix(v, ga_work::val(&r{i})?);\n" for i in range(len(step[1])))
        elif kind in ("loop", "if_path", "back"):
            head = {"loop": f"for _ in 0..{step[2]}", "if_path": f"if req.path == {step[1]}",
                    "back": f"if req.depth < {step[2]}"}[kind]
            body += f"    {head} {{\n{rust_call(step_callee(step), '        ')}    }}\n"
        else:
            raise ValueError(f"{name}: unknown step {kind}")
    io = ""
    if f["io"]:
        io = (f"    let mut conn = redis().await?;\n"
              f"    for i in 0..{f['io']} {{\n"
              f"        let key = format!(\"ga:{name}:{{i}}\");\n"
              f"        let x: Option<u64> = conn.query(sn_store::redis::cmd(\"GET\").arg(key)).await?;\n"
              f"        v = ga_work::mix(v, x.unwrap_or(0));\n"
              f"    }}\n")
    store = "sn_store::store!();\n\n" if f["io"] else ""
    mutable = "let mut v" if f["io"] or f["calls"] else "let v"
    return (f"//! `{name}`, generated by bench/fmbench/genapp.py: {f['cpu']} µs of its own CPU work, "
            f"{f['io']} Redis reads, {len(callees({name: f})[name])} callees.\n\n"
            "use fmerge_runtime::{self as rt, Error};\n"
            "use ga_work::{Reply, Req};\n\n"
            f"{store}"
            "async fn handle(req: Req) -> Result<Reply, Error> {\n"
            f"    {mutable} = ga_work::mix(ga_work::seed(\"{name}\"), ga_work::spin(req.depth as u64 + 1, {f['cpu'] * 1000}));\n"
            f"{io}{body}"
            "    Ok(Reply { v })\n"
            "}\n\n"
            "rt::function!(json handle);\n")


def crate_toml(name, f):
    deps = ["fmerge-runtime.workspace = true", "ga-work.workspace = true", "tokio.workspace = true"]
    if f["io"]:
        deps.append("sn-store.workspace = true")
    return (f'[package]\nname = "{name}"\nedition.workspace = true\nversion.workspace = true\nlicense.workspace = true\n\n'
            f'[[bin]]\nname = "{name}"\npath = "src/main.rs"\ntest = false\n\n[dependencies]\n' + "\n".join(deps) + "\n")


def stack_yml():
    lines = ["# Generated by bench/fmbench/genapp.py (the planner's second application).",
             "version: 1.0", "provider:", "  name: openfaas", "  gateway: ${OPENFAAS_URL:-http://127.0.0.1:8080}",
             "functions:"]
    for name, f in SPEC.items():
        lines += [f"  {name}:", "    lang: rust-fmerge", f"    handler: ./{name}",
                  f"    image: ${{REGISTRY:-127.0.0.1:5000}}/{name}:latest", "    environment:",
                  "      GATEWAY_URL: http://gateway.openfaas:8080"]
        if f["io"]:
            lines.append("      REDIS_URL: redis://redis.openfaas-fn.svc.cluster.local:6379")
        lines += ["    labels:", f"      app: {NAME}"]
        if name in ENTRIES:
            lines.append('      com.openfaas.fmerge.entry: "true"')
        lines += ["    limits:", "      memory: 64Mi", "      cpu: 500m", "    requests:", "      memory: 16Mi",
                  "      cpu: 50m"]
    return "\n".join(lines) + "\n"


def generate(dest, root):
    """Writes the application's workspace into dest and returns its stack
    file's path. A file whose text is already there is left alone (cargo
    then rebuilds only what changed), and a folder no function of SPEC
    names is removed."""
    dest, root = Path(dest), Path(root).resolve()
    files = {
        "Cargo.toml": CARGO_TOML.format(members=", ".join(f'"{n}"' for n in ["ga-work", *SPEC]), root=root,
                                        shared=shared_dependencies(root),
                                        profile=release_profile(root)),
        "Cargo.lock": (root / "Cargo.lock").read_text(),
        "ga-work/Cargo.toml": '[package]\nname = "ga-work"\nedition.workspace = true\nversion.workspace = true\n'
                              'license.workspace = true\n\n[dependencies]\nfmerge-runtime.workspace = true\n'
                              "serde.workspace = true\nserde_json.workspace = true\n",
        "ga-work/src/lib.rs": WORK_LIB,
        "stack.yml": stack_yml(),
    }
    for name, f in SPEC.items():
        files[f"{name}/Cargo.toml"] = crate_toml(name, f)
        files[f"{name}/src/main.rs"] = rust_main(name, f)
    if dest.exists():
        for d in dest.iterdir():
            if d.is_dir() and d.name not in SPEC and d.name not in ("ga-work", "target"):
                shutil.rmtree(d)
    for rel, text in files.items():
        path = dest / rel
        # Cargo.lock: cargo prunes the copy to what this workspace uses; a
        # copy already there is kept while the source's is unchanged.
        if rel == "Cargo.lock" and path.exists() and path.stat().st_mtime >= (root / "Cargo.lock").stat().st_mtime:
            continue
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return dest / "stack.yml"


def seed_keys():
    """The Redis keys the functions read, each with its value."""
    return {f"ga:{name}:{i}": str(1000 + 7 * j + i) for j, (name, f) in enumerate(SPEC.items()) for i in range(f["io"])}


def requests():
    """Each entry point's request body."""
    return {e: json.dumps(body) for e, body in ENTRIES.items()}


def application(ctx):
    """The application bench's description of this application
    (config.SOCIALNETWORK's fields), written out under ctx.out first."""
    stack = generate(ctx.out / NAME, ctx.src)
    return {"name": NAME, "workspace": str(stack.parent), "stack": str(stack), "entries": list(ENTRIES),
            "workloads": WORKLOADS, "profile_rate": PROFILE_RATE, "ladder": LADDER, "slo_p99_ms": SLO_P99_MS,
            "plan_args": ["--filter", PLANNED], "seed": "keys"}
