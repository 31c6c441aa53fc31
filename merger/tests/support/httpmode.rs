//! The `httpmode` fixture chain (functions that serve HTTP themselves,
//! issue 50) deployed as OpenFaaS deploys it: each function behind an
//! of-watchdog in `http` mode (started once, every request proxied to
//! `upstream_url`), nginx as the gateway on 8080, a Redis with a password on
//! 6379 and the password as a secret file, inside the test's own namespace
//! ([`fmerge_testkit::watchdog`]); the same requests sent unmerged and
//! merged, and what each run came to. price and tax are handler libraries
//! (both packages named `handler`), built unmerged as `faas-cli build`
//! builds them: the template's folder with the handler copied in as
//! `function/`.

use crate::support::{free_port, merged, shared_fixture};
use fmerge_testkit::dataplane::request;
use fmerge_testkit::watchdog::chain::{
    self, Deployed, HOSTS, merged_binary, namespaced, pairs, passed, pod_env,
};
use fmerge_testkit::watchdog::{ClusterRedis, Watchdog, enter_cluster};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The chain, the caller first: the functions' names (the stack's keys).
pub const NAMES: [&str; 5] = ["order-front", "inventory", "render", "price", "tax"];

/// The functions that are their own packages (the others are handler
/// libraries, served by the template's `main`).
const PACKAGES: [&str; 3] = ["order-front", "inventory", "render"];

/// A function's deployment: its name, the port its server listens on and
/// its settings.
type Deployment = (&'static str, u16, &'static [(&'static str, &'static str)]);

/// Each function's deployment, as the fixture's stack.yml says it, but
/// for the ports: in a cluster each server has a pod of its own; here all
/// share one namespace, so all but render (whose `:3000` is written in)
/// listen where `PORT` says. Merged, every callee's server is moved to a
/// free loopback port whatever it asks for (the unmerged callees, still
/// deployed, keep theirs). render's `exec_timeout` is shorter than its slow
/// answer.
pub const DEPLOYMENTS: [Deployment; 5] = [
    ("order-front", 3001, &[("PORT", "3001")]),
    ("inventory", 3002, &[("PORT", "3002")]),
    ("render", 3000, &[("exec_timeout", "1s")]),
    ("price", 3003, &[("PORT", "3003")]),
    ("tax", 3004, &[("PORT", "3004")]),
];

const PASSWORD: &str = "fmerge-httpmode-redis-password";

/// The requests, each through the gateway: (what it probes, method, path,
/// body).
pub const REQUESTS: [(&str, &str, &str, &str); 7] = [
    (
        "normal",
        "POST",
        "/function/order-front",
        r#"{"item":"book","look":"plain"}"#,
    ),
    (
        "render panics",
        "POST",
        "/function/order-front",
        r#"{"item":"pen","look":"panic"}"#,
    ),
    (
        "render past its exec_timeout",
        "POST",
        "/function/order-front",
        r#"{"item":"book","look":"slow"}"#,
    ),
    ("malformed", "POST", "/function/order-front", r#"{"item":"#),
    ("another route", "GET", "/function/order-front/ping", ""),
    (
        "the quote alone",
        "POST",
        "/function/order-front/quote",
        r#"{"item":"book","look":"plain"}"#,
    ),
    (
        "price panics once it has the tax",
        "POST",
        "/function/order-front/quote",
        r#"{"item":"bomb","look":"plain"}"#,
    ),
];

/// What the template's server logs as it starts (its `main.rs`).
pub const TEMPLATE_STARTED: &str = "rust-http1: serving handler::handle on port";

/// The functions in the handler-library template, whose `handle` the
/// merged binary calls directly.
pub const HANDLER_LIBRARIES: [&str; 2] = ["price", "tax"];

/// The line render's panic writes to stderr.
pub const PANIC_MESSAGE: &str = "render: no look for pen";

/// The line price's panic writes to stderr (after its first wait: merged,
/// on its `handle`'s runtime).
pub const PRICE_PANIC_MESSAGE: &str = "price: no price for a bomb";

/// The fixture workspace, one per test process.
pub fn workspace() -> &'static Path {
    shared_fixture("httpmode")
}

/// The folder of the unmerged binaries, each under its function's name,
/// built once per test process as fmerge builds (same target dir, target
/// and flags); the handler libraries as `faas-cli build` builds them.
pub fn unmerged_binaries() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let ws = workspace();
        let release = fmerge_testkit::build_packages(ws, &PACKAGES);
        let bin = ws.join("unmerged");
        std::fs::create_dir_all(&bin).unwrap();
        for name in PACKAGES {
            std::fs::copy(release.join(name), bin.join(name)).unwrap();
        }
        for name in NAMES.iter().filter(|n| !PACKAGES.contains(n)) {
            // faas-cli's build folder: the template, the handler as
            // `function/`.
            let build = ws.join("build").join(name);
            copy_dir(&ws.join("template/rust-http1"), &build);
            std::fs::remove_dir_all(build.join("function")).unwrap();
            copy_dir(&ws.join(name), &build.join("function"));
            std::fs::copy(ws.join("Cargo.lock"), build.join("main/Cargo.lock")).unwrap();
            let release = fmerge_testkit::build_packages(&build.join("main"), &["main"]);
            std::fs::copy(release.join("main"), bin.join(name)).unwrap();
        }
        bin
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        match path.is_dir() {
            true => copy_dir(&path, &to.join(entry.file_name())),
            false => {
                std::fs::copy(&path, to.join(entry.file_name())).unwrap();
            }
        }
    }
}

/// `fmerge build -f stack.yml` of the whole chain, once per test process:
/// the merged binary and fmerge's stderr.
pub fn merge() -> &'static (PathBuf, String) {
    static MERGED: OnceLock<(PathBuf, String)> = OnceLock::new();
    MERGED.get_or_init(|| {
        let ws = workspace();
        let out = ws.join("out");
        let mut args = vec!["-f", "stack.yml"];
        args.extend(NAMES);
        args.extend(["--out", out.to_str().unwrap()]);
        let built = merged(ws, &args);
        (built.binary, built.stderr)
    })
}

/// Runs the ignored test `child` in a namespace of its own with the
/// unmerged binaries, both of-watchdogs and the merged binary ([`merge`]).
pub fn run_child(child: &str) {
    chain::run_child(child, unmerged_binaries(), Some(&merge().0), &[]);
}

/// One reply, with the headers that do not change from run to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub content_type: Option<String>,
    pub served_by: Option<String>,
    pub body: String,
}

/// What one run came to.
#[derive(Debug)]
pub struct Observed {
    /// Per request of [`REQUESTS`], in order.
    pub replies: Vec<Reply>,
    /// Every `reserved:*` key of Redis after the requests, with its value.
    pub reserved: BTreeMap<String, String>,
    /// Requests the gateway served, per function name.
    pub calls: BTreeMap<String, usize>,
    /// Each watchdog's log (its function's stdout and stderr), by name.
    pub logs: BTreeMap<String, String>,
}

/// Enters the cluster and starts its Redis; once per child.
pub fn cluster() -> (fmerge_testkit::watchdog::Cluster, ClusterRedis) {
    let cluster = enter_cluster(&HOSTS, &[("redis-password", PASSWORD)]);
    (cluster, ClusterRedis::start(PASSWORD))
}

/// Deploys the chain, unmerged or (`merged`) as the merged binary under
/// the caller's name with every member's settings namespaced, as
/// `stack.merged.yml` carries them, and the callees still deployed (a call
/// that reached one would show in the gateway's log); sends [`REQUESTS`]
/// on fresh data and reads back what happened.
pub fn run_chain(redis: &ClusterRedis, merged: bool) -> Observed {
    redis.run(&[&["FLUSHALL"]]);
    let deployed = deploy(merged);
    let replies = REQUESTS
        .iter()
        .map(|(what, method, path, body)| {
            let reply = request(8080, method, path, &[], body.as_bytes())
                .unwrap_or_else(|e| panic!("request {what:?}: {e}"));
            Reply {
                status: reply.status,
                content_type: reply.headers.get("content-type").cloned(),
                served_by: reply.headers.get("x-served-by").cloned(),
                body: reply.body,
            }
        })
        .collect();
    let calls = deployed.calls(&NAMES);
    let logs = deployed.logs();
    let mut con = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("reserved:*")
        .query(&mut con)
        .expect("KEYS");
    let reserved = keys
        .into_iter()
        .map(|k| {
            let v: String = redis::cmd("GET").arg(&k).query(&mut con).expect("GET");
            (k, v)
        })
        .collect();
    Observed {
        replies,
        reserved,
        calls,
        logs,
    }
}

/// The chain deployed, unmerged or (`merged`) as the merged binary under
/// the caller's name with every member's settings namespaced, the callees
/// still deployed: each function's watchdog (the caller's first) and the
/// gateway on 8080 routing to them.
pub fn deploy(merged: bool) -> Deployed {
    let binaries = passed();
    let mut watchdogs: Vec<(&'static str, Watchdog)> = Vec::new();
    for (name, upstream, settings) in DEPLOYMENTS {
        let mut env = pod_env(settings.iter().copied());
        env.push(("mode".into(), "http".into()));
        env.push((
            "upstream_url".into(),
            format!("http://127.0.0.1:{upstream}"),
        ));
        let caller = name == NAMES[0];
        let binary = match merged && caller {
            true => {
                for (callee, _, settings) in &DEPLOYMENTS[1..] {
                    let own = settings.iter().map(|(k, v)| (k.to_string(), v.to_string()));
                    env.extend(namespaced(callee, own));
                }
                merged_binary()
            }
            false => binaries.unmerged.join(name),
        };
        let pairs = pairs(&env);
        // The caller's watchdog is the real of-watchdog (metrics on 8081),
        // merged as unmerged; the others have metrics ports of their own.
        let watchdog = match caller {
            true => Watchdog::start(&binaries.real, &binary, free_port(), None, &pairs),
            false => {
                let metrics = Some(free_port());
                Watchdog::start(&binaries.patched, &binary, free_port(), metrics, &pairs)
            }
        };
        watchdogs.push((name, watchdog));
    }
    Deployed::start(watchdogs)
}
