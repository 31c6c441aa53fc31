//! The data plane of a merged binary: what an operator sees of it.
//!
//! - Per-function Prometheus counts are the same before and after a merge:
//!   the unmerged pair (two processes behind the gateway) and the merged pair
//!   (one process) serve the same requests, and `http_requests_total` by
//!   function and caller matches.
//! - They stay the same when things go wrong: a merged callee keeps its own
//!   `exec_timeout` and `max_inflight` (504, 429), and a request whose
//!   client goes away is counted by caller and callee alike, merged or not.
//! - The real image drains on `docker stop` under a fixed-rate load: every
//!   request sent before the signal succeeds, and the container (the runtime
//!   is PID 1 there) exits 0 long before Docker's kill timeout.
//!
//! Run: `cargo test --release -p fmerge --test dataplane`. The image test
//! prints SKIPPED and returns where no Docker Engine exists, except under
//! `.ci/run`, where it fails.

#[path = "support/registry.rs"]
mod registry;
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::dataplane::request;
use support::{
    FUNCTIONS, Function, Gateway, HttpReply, PAIR_REQUESTS, Ran, Redis, built_binary, fixture,
    fmerge_out, free_port, function_binary, post, redis_env, seed_social_network, workspace_root,
};

const CALLER: &str = "write-home-timeline";
const CALLEE: &str = "social-graph-get-followers";

/// The merged pair (built once per test process).
fn merged_pair() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = workspace_root().join("target/fmerge-tests/dataplane-pair");
            let Ran { ok, stdout, stderr } = support::fmerge(
                &workspace_root(),
                &[
                    CALLER,
                    CALLEE,
                    "--name",
                    "pair",
                    "--out",
                    out.to_str().unwrap(),
                ],
                &[],
            );
            assert!(ok, "fmerge build failed:\n{stderr}");
            PathBuf::from(stdout.lines().last().expect("the binary path"))
        })
        .clone()
}

/// `http_requests_total` samples: (function, caller, code) → count.
fn counts(metrics_port: u16) -> BTreeMap<(String, String, String), u64> {
    let reply = request(metrics_port, "GET", "/metrics", &[], b"").expect("GET /metrics");
    assert_eq!(reply.status, 200, "{reply:?}");
    let mut out = BTreeMap::new();
    for line in reply.body.lines() {
        let Some(rest) = line.strip_prefix("http_requests_total{") else {
            continue;
        };
        let (labels, value) = rest.split_once("} ").expect("a sample");
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_default()
        };
        let key = (label("function"), label("caller"), label("code"));
        *out.entry(key).or_default() += value.trim().parse::<u64>().expect("a count");
    }
    out
}

fn sum(
    a: BTreeMap<(String, String, String), u64>,
    b: BTreeMap<(String, String, String), u64>,
) -> BTreeMap<(String, String, String), u64> {
    let mut out = a;
    for (k, v) in b {
        *out.entry(k).or_default() += v;
    }
    out
}

#[test]
fn per_function_counts_are_the_same_before_and_after_the_merge() {
    // Unmerged: each function its own process and metrics port, one gateway.
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let (caller_port, callee_port) = (free_port(), free_port());
    let gateway = Gateway::start(&[(CALLER, caller_port), (CALLEE, callee_port)]);
    let mut env = redis_env(&redis.url(), FUNCTIONS);
    env.push(("GATEWAY_URL".into(), gateway.url()));
    let (caller_metrics, callee_metrics) = (free_port(), free_port());
    let with = |port: u16| {
        let mut e = env.clone();
        e.push(("metrics_port".into(), port.to_string()));
        e
    };
    let caller = Function::start(
        function_binary(CALLER),
        CALLER,
        caller_port,
        with(caller_metrics),
    );
    let callee = Function::start(
        function_binary(CALLEE),
        CALLEE,
        callee_port,
        with(callee_metrics),
    );
    let unmerged_replies: Vec<_> = PAIR_REQUESTS
        .iter()
        .map(|r| post(&gateway.function_url(CALLER), r))
        .collect();
    let before = sum(counts(caller_metrics), counts(callee_metrics));
    drop((caller, callee, gateway, redis));

    // Merged: one process.
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let port = free_port();
    let gateway = Gateway::start(&[(CALLER, port)]);
    let mut env = redis_env(&redis.url(), FUNCTIONS);
    env.push(("GATEWAY_URL".into(), gateway.url()));
    let metrics = free_port();
    env.push(("metrics_port".into(), metrics.to_string()));
    let merged = Function::start(merged_pair(), CALLER, port, env);
    let merged_replies: Vec<_> = PAIR_REQUESTS
        .iter()
        .map(|r| post(&gateway.function_url(CALLER), r))
        .collect();
    let after = counts(metrics);

    assert_eq!(merged_replies, unmerged_replies, "{}", merged.output());
    eprintln!("unmerged: {before:?}\nmerged:   {after:?}");
    assert_eq!(after, before, "{}", merged.output());
    // The callee is there, counted as called by the caller.
    assert!(
        after.keys().any(|(f, c, _)| f == CALLEE && c == CALLER),
        "{after:?}"
    );
    assert_eq!(gateway.requests_for(CALLEE), 0);
}

/// The `blocking` fixture's callee, with its own limits: an `exec_timeout`
/// and one request at a time.
const SLOW_LIMITS: [(&str, &str); 2] = [("exec_timeout", "2s"), ("max_inflight", "1")];

/// Sends the failure cases through the gateway to bl-front, calling bl-slow:
/// a request past bl-slow's exec_timeout, one refused 429 while another
/// holds bl-slow's only slot, one whose client goes away, and one whose
/// `X-Timeout` ends bl-front before bl-slow's own limit would (bl-front's
/// 504; bl-slow dropped with it, counted as a client gone). Returns the
/// replies that came.
fn failure_cases(
    gateway: &Gateway,
    counted: impl Fn() -> BTreeMap<(String, String, String), u64>,
) -> Vec<HttpReply> {
    use std::io::Write;
    let url = gateway.function_url("bl-front");
    let mut replies = vec![post(&url, "sleep:3000")];
    let latch = tempfile::tempdir().unwrap();
    let held = {
        let (url, body) = (url.clone(), format!("latch:{}", latch.path().display()));
        std::thread::spawn(move || post(&url, &body))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(latch.path()).unwrap().count() == 0 {
        assert!(
            Instant::now() < deadline,
            "bl-slow never started the latched request"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    replies.push(post(&url, "sleep:0"));
    std::fs::write(latch.path().join("go"), b"").unwrap();
    replies.push(held.join().unwrap());
    // A client that goes away half a second into a 1.5 s call.
    let mut client = std::net::TcpStream::connect(("127.0.0.1", gateway.port())).unwrap();
    let body = "sleep:1500";
    write!(
        client,
        "POST /function/bl-front HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    drop(client);
    // Both functions count it once they notice.
    let closed = |c: &BTreeMap<(String, String, String), u64>| {
        c.iter()
            .filter(|((_, _, code), _)| code == "499")
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    // Until `n` are counted, for 10 s at most.
    let wait_closed = |n: u64| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while closed(&counted()) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_closed(2);
    // bl-front given 1 s, bl-slow its own 2 s: merged, bl-slow runs under
    // no timer of its own (its caller's comes first) and must still end
    // with it. Last: bl-slow's thread stays blocked for 3 s.
    let reply = request(
        gateway.port(),
        "POST",
        "/function/bl-front",
        &[("X-Timeout", "1s")],
        b"sleep:3000",
    )
    .expect("POST with X-Timeout");
    replies.push(HttpReply {
        status: reply.status,
        body: reply.body,
    });
    wait_closed(3);
    replies
}

#[test]
fn per_function_counts_stay_the_same_after_the_merge_on_timeouts_429s_and_clients_that_go_away() {
    let ws = fixture("blocking", &[]);
    let Ran { ok, stdout, stderr } = fmerge_out(ws.path(), &["bl-front", "bl-slow"]);
    assert!(ok, "fmerge build failed:\n{stderr}");
    let merged = PathBuf::from(stdout.lines().last().expect("the binary path"));

    // Unmerged: two processes behind the gateway, bl-slow with its limits.
    let (front_port, slow_port) = (free_port(), free_port());
    let gateway = Gateway::start(&[("bl-front", front_port), ("bl-slow", slow_port)]);
    let (front_metrics, slow_metrics) = (free_port(), free_port());
    let front_env = vec![
        ("GATEWAY_URL".to_string(), gateway.url()),
        ("metrics_port".to_string(), front_metrics.to_string()),
    ];
    let mut slow_env = vec![("metrics_port".to_string(), slow_metrics.to_string())];
    slow_env.extend(SLOW_LIMITS.map(|(k, v)| (k.to_string(), v.to_string())));
    let front = Function::start(built_binary("bl-front"), "bl-front", front_port, front_env);
    let slow = Function::start(built_binary("bl-slow"), "bl-slow", slow_port, slow_env);
    let unmerged = || sum(counts(front_metrics), counts(slow_metrics));
    let unmerged_replies = failure_cases(&gateway, unmerged);
    let before = unmerged();
    let unmerged_log = format!("{}\n{}", front.output(), slow.output());
    drop((front, slow, gateway));

    // Merged: bl-slow's limits as its namespaced settings; isolated, since it blocks.
    let port = free_port();
    let gateway = Gateway::start(&[("bl-front", port)]);
    let metrics = free_port();
    let mut env = vec![
        ("GATEWAY_URL".to_string(), "http://127.0.0.1:9".to_string()),
        ("metrics_port".to_string(), metrics.to_string()),
        ("FMERGE_ISOLATE".to_string(), "bl-slow".to_string()),
    ];
    env.extend(SLOW_LIMITS.map(|(k, v)| (format!("BL_SLOW__{k}"), v.to_string())));
    let merged = Function::start(&merged, "bl-front", port, env);
    let merged_replies = failure_cases(&gateway, || counts(metrics));
    let after = counts(metrics);

    assert_eq!(merged_replies, unmerged_replies, "{}", merged.output());
    let HttpReply { status, body } = merged_replies.last().expect("the X-Timeout case");
    assert!(
        *status == 504 && body.contains("function bl-front did not finish"),
        "{status} {body}"
    );
    eprintln!("unmerged: {before:?}\nmerged:   {after:?}");
    assert_eq!(
        after,
        before,
        "merged:\n{}\nunmerged:\n{unmerged_log}",
        merged.output()
    );
    for (function, code) in [
        ("bl-slow", "504"),
        ("bl-slow", "429"),
        ("bl-slow", "499"),
        ("bl-front", "499"),
    ] {
        assert!(
            after.keys().any(|(f, _, c)| f == function && c == code),
            "{function} {code} not counted: {after:?}"
        );
    }
    assert_eq!(gateway.requests_for("bl-slow"), 0);
}

#[test]
fn docker_stop_drains_the_merged_image_under_a_fixed_rate_load() {
    if !registry::engine_present() {
        return;
    }
    let reference = format!("fmerge-dataplane/pair:{}", registry::unique("t"));
    let spec = fmerge_ship::image::ImageSpec {
        tag: Some(reference.clone()),
        ..fmerge_ship::image::ImageSpec::new(
            merged_pair(),
            "pair",
            vec![CALLER.into(), CALLEE.into()],
            fmerge::assets::DOCKERFILE,
        )
    };
    fmerge_ship::image::build(&spec).expect("image build");
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let port = free_port();
    let mut args: Vec<String> = ["run", "-d", "--network", "host"]
        .map(String::from)
        .to_vec();
    let mut env = redis_env(&redis.url(), FUNCTIONS);
    env.extend([
        ("port".into(), port.to_string()),
        ("metrics_port".into(), "0".into()),
        ("listen_address".into(), "127.0.0.1".into()),
        ("healthcheck_interval".into(), "1s".into()),
        ("write_timeout".into(), "10s".into()),
    ]);
    for (k, v) in &env {
        args.push("-e".into());
        args.push(format!("{k}={v}"));
    }
    args.push(reference.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let id = registry::docker_ok(None, &args).trim().to_string();
    struct Remove(String, String);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = registry::docker(None, &["rm", "-f", &self.0]);
            let _ = registry::docker(None, &["rmi", "-f", &self.1]);
        }
    }
    let _remove = Remove(id.clone(), reference.clone());
    registry::wait_http(port, "/_/health", Duration::from_secs(30)).unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            String::from_utf8_lossy(&registry::docker(None, &["logs", &id]).stderr)
        )
    });

    // 50 requests per second for 3 s, each on its own connection and
    // thread; `docker stop` (30 s kill timeout) after 1 s.
    let start = Instant::now();
    let stop_at = Duration::from_secs(1);
    let load: Vec<_> = (0..150u64)
        .map(|i| {
            let at = Duration::from_millis(20 * i);
            std::thread::spawn(move || {
                std::thread::sleep(at.saturating_sub(start.elapsed()));
                let sent = start.elapsed();
                let reply = request(
                    port,
                    "POST",
                    "/",
                    &[("Content-Type", "application/json")],
                    PAIR_REQUESTS[0].as_bytes(),
                );
                (sent, reply)
            })
        })
        .collect();
    std::thread::sleep(stop_at.saturating_sub(start.elapsed()));
    let signalled = start.elapsed();
    let stopping = Instant::now();
    registry::docker_ok(None, &["stop", "-t", "30", &id]);
    let stop_took = stopping.elapsed();
    let results: Vec<_> = load.into_iter().map(|t| t.join().unwrap()).collect();
    let logs = registry::docker(None, &["logs", &id]);
    let logs = String::from_utf8_lossy(&logs.stderr).into_owned();
    let exit = registry::docker_ok(None, &["inspect", "-f", "{{.State.ExitCode}}", &id]);

    let before: Vec<_> = results
        .iter()
        .filter(|(sent, _)| *sent < signalled)
        .collect();
    let failed: Vec<_> = before
        .iter()
        .filter(|(_, r)| !matches!(r, Ok(r) if r.status == 200))
        .collect();
    let after_ok = results
        .iter()
        .filter(|(sent, r)| *sent >= signalled && matches!(r, Ok(r) if r.status == 200))
        .count();
    eprintln!(
        "docker stop took {stop_took:?}; {} requests sent before the signal, {} failed; {after_ok} served after it; exit {}",
        before.len(),
        failed.len(),
        exit.trim()
    );
    assert!(
        before.len() >= 40,
        "only {} requests before the signal",
        before.len()
    );
    assert!(failed.is_empty(), "{failed:?}\n{logs}");
    assert_eq!(exit.trim(), "0", "{logs}");
    assert!(
        stop_took < Duration::from_secs(15),
        "docker stop took {stop_took:?}\n{logs}"
    );
    assert!(logs.contains("SIGTERM"), "{logs}");
}
