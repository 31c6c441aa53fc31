//! The `watchdog` fixture chain (functions in the watchdog-process form,
//! issue 49) deployed as OpenFaaS deploys it: each function behind an
//! of-watchdog in streaming mode, nginx as the gateway on 8080, a Redis with
//! a password on 6379 and the password as a secret file, inside the test's
//! own namespace ([`fmerge_testkit::watchdog`]); the same requests sent
//! unmerged and merged, and what each run came to.

use crate::support::{free_port, merged, shared_fixture};
use fmerge_testkit::dataplane::request;
use fmerge_testkit::watchdog::chain::{
    self, Deployed, GATEWAY_HOST, HOSTS, namespaced, pairs, passed, passed_path, pod_env,
};
use fmerge_testkit::watchdog::{ClusterRedis, OwnPod, Watchdog, enter_cluster, enter_cluster_at};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The chain's packages, the caller first; their OpenFaaS names are [`NAMES`].
pub const PACKAGES: [&str; 4] = [
    "WriteHomeTimeline",
    "SocialGraphGetFollowers",
    "UserFilter",
    "AuditLog",
];
/// The kebab-case of [`PACKAGES`], as the functions call each other.
pub const NAMES: [&str; 4] = [
    "write-home-timeline",
    "social-graph-get-followers",
    "user-filter",
    "audit-log",
];

// The gateway as the functions' pods see it is `chain::GATEWAY_URL`:
// `FaasRpc` has it written in.
const PASSWORD: &str = "fmerge-watchdog-redis-password";

/// The requests, each to write-home-timeline through the gateway: (what it
/// probes, body).
pub const REQUESTS: [(&str, &str); 4] = [
    ("normal", r#"{"post_id":100,"user_id":1,"timestamp":1000}"#),
    // social-graph-get-followers panics on user 0.
    (
        "callee panics",
        r#"{"post_id":101,"user_id":0,"timestamp":1001}"#,
    ),
    // User 7's followers include -1: user-filter exits with code 1.
    (
        "callee exits 1",
        r#"{"post_id":102,"user_id":7,"timestamp":1002}"#,
    ),
    ("malformed", r#"{"post_id":"#),
];

/// Lines the callees write to stderr on the failing requests.
pub const PANIC_MESSAGE: &str = "no such user: 0";
pub const EXIT_MESSAGE: &str = "user-filter: negative id";

/// The fixture workspace, one per test process.
pub fn workspace() -> &'static Path {
    shared_fixture("watchdog")
}

/// The unmerged binaries, built once per test process as fmerge builds
/// (same target dir, target and flags, so that fmerge reuses the build).
pub fn unmerged_binaries() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| fmerge_testkit::build_packages(workspace(), &PACKAGES))
}

/// `fmerge build FUNCTIONS` of the fixture, into `<ws>/<caller>-…`; the
/// merged binary and fmerge's stderr. Once per set of functions.
pub fn merge(functions: &[&str]) -> (PathBuf, String) {
    merge_with(functions, &[], "")
}

/// [`merge`] with more flags, into an output dir of its own (`tag`).
pub fn merge_with(functions: &[&str], flags: &[&str], tag: &str) -> (PathBuf, String) {
    let ws = workspace();
    let out = ws.join(format!("out-{}{tag}", functions.len()));
    let manifest = ws.join("Cargo.toml");
    let mut args = functions.to_vec();
    args.extend(flags);
    args.extend(["--manifest-path", manifest.to_str().unwrap()]);
    args.extend(["--out", out.to_str().unwrap()]);
    let built = merged(ws, &args);
    (built.binary, built.stderr)
}

/// Runs the ignored test `child` in a namespace of its own with the
/// unmerged binaries, both of-watchdogs and, if given, the merged binary;
/// panics with its output if it fails. Builds everything first, outside:
/// there is no network inside for cargo.
pub fn run_child(child: &str, merged: Option<&Path>, more: &[(&'static str, String)]) {
    chain::run_child(child, unmerged_binaries(), merged, more);
}

/// The merged binary the parent test built.
pub use chain::merged_binary;

/// A merged binary built without the flags under test, for comparison.
pub const PLAIN_VAR: &str = "FMERGE_WD_PLAIN";

/// The binary [`PLAIN_VAR`] names.
pub fn plain_binary() -> PathBuf {
    passed_path(PLAIN_VAR)
}

/// social-graph-get-followers' cluster, for the seed's case: its Redis at
/// 127.0.0.2 with a password of its own, named `redis.sgf.svc.cluster.local`
/// in the merged pod, which holds its password as the secret
/// `sgf-redis-password`; unmerged, its pod ([`OwnPod`]) sees that Redis
/// under the shared helper's name and its password as `redis-password`.
/// The cluster entered, its Redis, the callee's Redis and the callee's pod.
pub fn two_clusters() -> (
    fmerge_testkit::watchdog::Cluster,
    ClusterRedis,
    ClusterRedis,
    OwnPod,
) {
    const OWN_PASSWORD: &str = "fmerge-watchdog-sgf-password";
    let mut hosts: Vec<(&str, &str)> = HOSTS.iter().map(|h| (*h, "127.0.0.1")).collect();
    hosts.push(("redis.sgf.svc.cluster.local.", "127.0.0.2"));
    let cluster = enter_cluster_at(
        &hosts,
        &[
            ("redis-password", PASSWORD),
            ("sgf-redis-password", OWN_PASSWORD),
        ],
    );
    let pod = OwnPod::new(
        &passed().patched,
        &[(GATEWAY_HOST, "127.0.0.1"), (HOSTS[1], "127.0.0.2")],
        &[("redis-password", OWN_PASSWORD)],
    );
    (
        cluster,
        ClusterRedis::start(PASSWORD),
        ClusterRedis::start_on("127.0.0.2", OWN_PASSWORD),
        pod,
    )
}

/// One reply, with the headers of-watchdog sets that do not change from
/// run to run (Content-Type; not Date).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: String,
}

/// What one run came to.
#[derive(Debug)]
pub struct Observed {
    /// Per request of [`REQUESTS`], in order.
    pub replies: Vec<Reply>,
    /// Every `home-timeline:*` sorted set after the requests.
    pub timelines: BTreeMap<String, Vec<(String, String)>>,
    /// Requests the gateway served, per function name.
    pub calls: BTreeMap<String, usize>,
    /// Each watchdog's log (its function's stderr), by the name it serves.
    pub logs: BTreeMap<String, String>,
}

/// Enters the cluster (namespace already made by [`run_child`]) and starts
/// its Redis; once per child.
pub fn cluster() -> (fmerge_testkit::watchdog::Cluster, ClusterRedis) {
    let cluster = enter_cluster(&HOSTS, &[("redis-password", PASSWORD)]);
    (cluster, ClusterRedis::start(PASSWORD))
}

/// How [`run_chain`] deploys the chain.
#[derive(Default, Clone, Copy)]
pub struct Deploy<'a> {
    /// The merged binary and its members (packages, the caller first),
    /// served under the real of-watchdog at the caller's name; every other
    /// function unmerged.
    pub merged: Option<(&'a Path, &'a [&'a str])>,
    /// The watchdog social-graph-get-followers starts through unmerged
    /// (its pod of its own, [`two_clusters`]).
    pub own_pod: Option<&'a Path>,
    /// Settings of the functions' deployments: (function name, key, value),
    /// in its own watchdog's environment unmerged, and namespaced
    /// (`<FUNCTION>__KEY`) in the merged one's for a merged callee, as
    /// `stack.merged.yml` carries them.
    pub settings: &'a [(&'a str, &'a str, &'a str)],
}

/// Deploys the chain as `deploy` says; sends [`REQUESTS`] on freshly seeded
/// data and reads back what happened. The follower sets are in `followers`
/// (`redis`, or social-graph-get-followers' own cluster's Redis).
pub fn run_chain(redis: &ClusterRedis, followers: &ClusterRedis, deploy: &Deploy) -> Observed {
    let Deploy {
        merged,
        own_pod,
        settings,
    } = *deploy;
    followers.run(&[
        &["FLUSHALL"],
        &[
            "ZADD",
            "social-graph:followers:1",
            "1",
            "2",
            "2",
            "3",
            "3",
            "4",
        ],
        &["ZADD", "social-graph:followers:7", "1", "5", "2", "-1"],
    ]);
    if !std::ptr::eq(redis, followers) {
        redis.run(&[&["FLUSHALL"]]);
    }
    redis.run(&[&["SADD", "blocked", "3"]]);
    let binaries = passed();
    let mut watchdogs: Vec<(&str, Watchdog)> = Vec::new();
    let of = |function: &str| -> Vec<(String, String)> {
        settings
            .iter()
            .filter(|(f, _, _)| *f == function)
            .map(|(_, k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    for (package, name) in PACKAGES.iter().zip(NAMES) {
        let port = free_port();
        let mut own = pod_env([]);
        own.extend(of(name));
        let watchdog = match merged {
            // The merged binary keeps the caller's contract: the real
            // of-watchdog, its metrics on 8081.
            Some((binary, members)) if members[0] == *package => {
                for member in &members[1..] {
                    let callee = fmerge_contract::function_name(member);
                    own.extend(namespaced(&callee, of(&callee)));
                }
                // Through the warm-start launcher beside it, as its image
                // runs it (`fprocess` given last wins).
                let launcher = binary.with_file_name("fmerge-warm");
                assert!(launcher.is_file(), "fmerge builds {}", launcher.display());
                own.push((
                    "fprocess".into(),
                    format!("{} {}", launcher.display(), binary.display()),
                ));
                Watchdog::start(&binaries.real, binary, port, None, &pairs(&own))
            }
            // A merged callee stays deployed, as in a cluster: a call that
            // still reached it would show in the gateway's log.
            _ => Watchdog::start(
                match own_pod {
                    Some(pod) if name == NAMES[1] => pod,
                    _ => &binaries.patched,
                },
                &binaries.unmerged.join(package),
                port,
                Some(free_port()),
                &pairs(&own),
            ),
        };
        watchdogs.push((name, watchdog));
    }
    let deployed = Deployed::start(watchdogs);
    let replies = REQUESTS
        .iter()
        .map(|(what, body)| {
            let path = format!("/function/{}", NAMES[0]);
            let reply = request(8080, "POST", &path, &[], body.as_bytes())
                .unwrap_or_else(|e| panic!("request {what:?}: {e}"));
            Reply {
                status: reply.status,
                content_type: reply.headers.get("content-type").cloned(),
                body: reply.body,
            }
        })
        .collect();
    Observed {
        replies,
        timelines: redis.sorted_sets("home-timeline:*"),
        calls: deployed.calls(&NAMES),
        logs: deployed.logs(),
    }
}

/// The chain run unmerged as `deploy` says, then with the merged binary
/// [`run_child`] passed serving `members` (packages, the caller first) and
/// `deploy`'s settings; prints both.
pub fn unmerged_and_merged(
    redis: &ClusterRedis,
    followers: &ClusterRedis,
    deploy: &Deploy,
    members: &[&str],
) -> (Observed, Observed) {
    let unmerged = run_chain(redis, followers, deploy);
    let binary = merged_binary();
    let merged = Deploy {
        merged: Some((&binary, members)),
        settings: deploy.settings,
        ..Deploy::default()
    };
    let merged = run_chain(redis, followers, &merged);
    println!("unmerged: {unmerged:#?}\nmerged: {merged:#?}");
    (unmerged, merged)
}

/// Asserts that `merged` answered as `unmerged` did: status, Content-Type
/// and body of each request, and the Redis state after.
pub fn assert_same_answers(unmerged: &Observed, merged: &Observed) {
    for (i, (what, _)) in REQUESTS.iter().enumerate() {
        assert_eq!(
            merged.replies[i], unmerged.replies[i],
            "request {what:?}: merged (left) and unmerged (right) replies differ;\nmerged logs: {:#?}",
            merged.logs
        );
    }
    assert_eq!(
        merged.timelines, unmerged.timelines,
        "Redis after the merged run (left) and the unmerged (right)"
    );
}

/// What the functions wrote to stderr, as the watchdogs' logs show it
/// (`stderr: <line>`), thread ids left out (`thread 'main' (123)`), sorted:
/// processes that run at once interleave their lines.
pub fn stderr_lines<'a>(logs: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut lines: Vec<String> = logs
        .into_iter()
        .flat_map(|log| log.lines())
        // `<date> <time> stderr: <text>`; the watchdog's own lines, such as
        // `<date> <time> Error reading stderr: …`, are not the function's.
        .filter_map(|line| line.splitn(3, ' ').nth(2)?.strip_prefix("stderr: "))
        .map(|text| match text.split_once("' (") {
            Some((thread, rest)) if thread.starts_with("thread '") => {
                format!("{thread}'{}", &rest[rest.find(')').map_or(0, |i| i + 1)..])
            }
            _ => text.to_string(),
        })
        .collect();
    lines.sort();
    lines
}

/// The status of each request a watchdog's log records (`POST / - 500 - …`),
/// in order: what of-watchdog makes of the process's exit.
pub fn logged_statuses(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|line| line.split_once(" POST / - "))
        .filter_map(|(_, rest)| rest.split(" - ").next())
        .map(str::to_string)
        .collect()
}

/// Asserts that the merged function `merged` (the caller's name) logged
/// what the unmerged `members` did together: the same stderr lines, and the
/// same status per request as the caller's watchdog.
pub fn assert_same_logs(unmerged: &Observed, merged: &Observed, members: &[&str]) {
    let caller = members[0];
    let before = stderr_lines(members.iter().map(|m| &unmerged.logs[*m]));
    let after = stderr_lines([&merged.logs[caller]]);
    assert_eq!(
        after, before,
        "the merged function's stderr (left) and its members' unmerged (right)"
    );
    assert_eq!(
        logged_statuses(&merged.logs[caller]),
        logged_statuses(&unmerged.logs[caller]),
        "the statuses the caller's watchdog logged, merged (left) and unmerged (right)"
    );
}
