//! Functions that serve HTTP themselves (issue 50: of-watchdog's `http`
//! mode, each its own server, calls through its own async client), the
//! `httpmode` fixture chain order-front (axum, a reqwest client in a static)
//! → inventory (axum, a reqwest client in its app state, Redis) → render
//! (hyper's own server, a streamed reply, a panic, a slow answer), and
//! order-front → price → tax (handler libraries of one template, both
//! packages named `handler`; price calls with hyper's client), as its
//! stack.yml deploys them: unmerged, each behind an of-watchdog in `http`
//! mode with nginx as the gateway and a Redis whose password is a secret
//! file, then merged by `fmerge build -f stack.yml` and run under the real
//! of-watchdog: the same replies and Redis state, and no call between
//! members through the gateway.
//!
//! Each test runs as root in a network and mount namespace of its own (it
//! re-runs an ignored test of this binary under `unshare --net --mount`).
//!
//! Run: `cargo test --release -p fmerge --test httpmode`

#[path = "support/httpmode.rs"]
mod chain;
#[path = "support/container.rs"]
mod container;
mod support;

use chain::{NAMES, Observed, PANIC_MESSAGE, REQUESTS, cluster, merge, run_chain, run_child};
use container::{Cleanup, docker};
use fmerge_ship::image::engine;
use std::time::{Duration, Instant};

/// fmerge says the form it found for each function and where each callee's
/// server runs, and builds one binary.
#[test]
fn the_chain_merges_as_written_and_the_build_says_each_form() {
    let (binary, stderr) = merge();
    assert!(binary.is_file());
    for name in NAMES {
        assert!(
            stderr.contains(&format!(
                "{name} is its own HTTP server (of-watchdog's `http` mode)"
            )),
            "{stderr}"
        );
    }
    for callee in &NAMES[1..] {
        assert!(
            stderr.contains(&format!(
                "{callee}'s server runs in the caller's process, started with it"
            )),
            "{stderr}"
        );
    }
    for site in [
        "order-front (`order`) → inventory: in the pod",
        "order-front (`order`) → price: in the pod",
        "inventory (`reserve`) → render: in the pod",
        "price (`handle`) → tax: in the pod",
    ] {
        assert!(stderr.contains(site), "{site}:\n{stderr}");
    }
}

/// Unmerged and merged, behind the real of-watchdog in `http` mode: the
/// same replies (status, Content-Type, the caller's own header, body),
/// the same Redis state, render's panic in the log; merged, no call
/// between members through the gateway.
#[test]
fn the_merged_chain_answers_as_unmerged_without_the_gateway() {
    let (binary, _) = merge();
    run_child("in_namespace_both", Some(binary));
}

#[test]
#[ignore = "run by the_merged_chain_answers_as_unmerged_without_the_gateway in its own namespace"]
fn in_namespace_both() {
    let (_cluster, redis) = cluster();
    let unmerged = run_chain(&redis, false);
    println!("unmerged: {unmerged:#?}");
    assert_unmerged_as_the_code_says(&unmerged);
    let merged = run_chain(&redis, true);
    println!("merged: {merged:#?}");
    for (i, (what, ..)) in REQUESTS.iter().enumerate() {
        assert_eq!(
            merged.replies[i], unmerged.replies[i],
            "request {what:?}: merged (left) and unmerged (right) differ"
        );
    }
    assert_eq!(merged.reserved, unmerged.reserved, "Redis, merged (left)");
    assert_eq!(
        calls(&merged),
        [REQUESTS.len(), 0, 0, 0, 0],
        "merged, only the caller is called through the gateway: {:?}",
        merged.calls
    );
    // Once, as unmerged: the call that panicked was not sent again.
    assert_eq!(
        merged.logs[NAMES[0]].matches(PANIC_MESSAGE).count(),
        1,
        "render's panic is in the merged pod's log, once:\n{}",
        merged.logs[NAMES[0]]
    );
}

fn calls(seen: &Observed) -> Vec<usize> {
    NAMES.iter().map(|n| seen.calls[*n]).collect()
}

/// What the fixture's code says each request comes to, unmerged: each
/// hop through the gateway, of-watchdog's empty 500 for render's panic
/// and 504 at its `exec_timeout`.
fn assert_unmerged_as_the_code_says(seen: &Observed) {
    let bodies: Vec<(u16, &str)> = seen
        .replies
        .iter()
        .map(|r| (r.status, r.body.as_str()))
        .collect();
    assert_eq!(
        bodies,
        [
            (
                200,
                "inventory 200 stock 1: render 200 [<plain>book</plain>]; \
                 price 200: book costs 40 (tax 200 8)\n"
            ),
            (
                200,
                "inventory 200 stock 1: render 500 []; price 200: pen costs 30 (tax 200 6)\n"
            ),
            (
                200,
                "inventory 200 stock 2: render 504 []; price 200: book costs 40 (tax 200 8)\n"
            ),
            (400, "bad order\n"),
            (200, "order-front\n"),
        ]
    );
    assert_eq!(
        seen.replies[0].served_by.as_deref(),
        Some("order-front"),
        "{:?}",
        seen.replies[0]
    );
    assert_eq!(
        seen.reserved,
        [
            ("reserved:book".to_string(), "2".to_string()),
            ("reserved:pen".to_string(), "1".to_string()),
        ]
        .into_iter()
        .collect()
    );
    // Three requests reached inventory and price, and through them render
    // and tax.
    assert_eq!(
        calls(seen),
        [REQUESTS.len(), 3, 3, 3, 3],
        "{:?}",
        seen.calls
    );
    assert_eq!(
        seen.logs[NAMES[2]].matches(PANIC_MESSAGE).count(),
        1,
        "{:#?}",
        seen.logs
    );
}

/// The merged image keeps the caller's contract: of-watchdog in `http` mode,
/// proxying to the caller's `upstream_url`, the merged binary its
/// `fprocess`; the container answers health and the caller's own route;
/// `stack.merged.yml` carries every member's settings.
#[test]
fn the_image_runs_the_caller_under_of_watchdog_in_http_mode() {
    if let Some(reason) = engine::missing_reason() {
        assert!(
            !fmerge_testkit::dataplane::tools_required(),
            "{reason}; CI requires a Docker Engine"
        );
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let watchdog = fmerge_testkit::dataplane::of_watchdog()
        .unwrap_or_else(|e| panic!("the real of-watchdog is needed: {e}"));
    merge();
    let ws = chain::workspace();
    let tag = format!("fmerge-hm/order-front:t{}", std::process::id());
    let mut cleanup = Cleanup(vec![vec!["rmi".into(), "-f".into(), tag.clone()]]);
    // An out folder of its own: the other tests run the merged binary.
    let out = ws.join("out-image");
    let mut args = vec!["-f", "stack.yml"];
    args.extend(NAMES);
    args.extend(["--out", out.to_str().unwrap(), "--image", "--tag", &tag]);
    args.extend(["--watchdog", watchdog.to_str().unwrap()]);
    let support::Ran { ok, stderr, .. } = support::fmerge_in(ws, &args);
    assert!(ok, "fmerge build --image failed:\n{stderr}");
    support::assert_says(&stderr, &[" in http mode, as it ran order-front"]);
    let config = engine::block_on(async {
        let docker = engine::connect().await.unwrap();
        docker.inspect_image(&tag).await.unwrap().config.unwrap()
    })
    .unwrap();
    let env = config.env.unwrap();
    for wanted in [
        "fprocess=/usr/local/bin/order-front-merged",
        "mode=http",
        "upstream_url=http://127.0.0.1:3001",
    ] {
        assert!(env.iter().any(|e| e == wanted), "{wanted} not in {env:?}");
    }
    let port = support::free_port();
    let id = docker(&[
        "run",
        "-d",
        "-e",
        "PORT=3001",
        "-p",
        &format!("127.0.0.1:{port}:8080"),
        &tag,
    ]);
    cleanup.0.push(vec!["rm".into(), "-f".into(), id.clone()]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ping = fmerge_testkit::wait_http(port, "/ping", Duration::from_secs(10));
        if ping.as_ref().is_ok_and(|r| r.status == 200) {
            assert_eq!(ping.unwrap().body, "order-front\n");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "/ping: {ping:?}\n{}",
            docker(&["logs", &id])
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let merged = std::fs::read_to_string(ws.join("stack.merged.yml")).unwrap();
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&merged).unwrap();
    let env = &doc["functions"]["order-front"]["environment"];
    assert_eq!(env["mode"], "http", "{merged}");
    assert_eq!(env["upstream_url"], "http://127.0.0.1:3001", "{merged}");
    assert_eq!(env["PORT"], "3001", "{merged}");
    assert_eq!(env["RENDER__exec_timeout"], "1s", "{merged}");
    assert_eq!(env["INVENTORY__PORT"], "3002", "{merged}");
    assert_eq!(
        doc["functions"]["order-front"]["image"],
        tag.as_str(),
        "{merged}"
    );
}

/// `fmerge graph -f stack.yml` reads each call through the function's own
/// client, the handler libraries' included (read from the library, not
/// the template's `main`); weighed by the gateway's access log, `fmerge
/// plan` groups the chain and `build --plan` builds it.
#[test]
fn graph_plan_and_build_plan_take_the_chain() {
    // A copy of its own: `build --plan` writes stack.merged.yml beside the
    // stack, which the image test reads.
    let copy = support::fixture("httpmode", &[]);
    let ws = copy.path();
    let graph = support::fmerge_command(ws, &["graph", "-f", "stack.yml"]);
    assert!(graph.ok, "fmerge graph failed:\n{}", graph.stderr);
    let read = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(ws.join("callgraph/calls.json")).unwrap())
            .unwrap()
    };
    let calls = read();
    let mut edges: Vec<(String, String)> = calls["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap().to_string(),
                e["to"]
                    .as_str()
                    .expect("every name is a literal")
                    .to_string(),
            )
        })
        .collect();
    edges.sort();
    let edge = |from: &str, to: &str| (from.to_string(), to.to_string());
    assert_eq!(
        edges,
        [
            edge("inventory", "render"),
            edge("order-front", "inventory"),
            edge("order-front", "price"),
            edge("price", "tax"),
        ]
    );
    for f in calls["functions"].as_array().unwrap() {
        assert!(f["left_out"].is_null(), "nothing refuses a member: {f}");
        // of-watchdog serves each one's metrics port: its usage is the
        // watchdog's, and sizes nothing.
        assert_eq!(f["watchdog"], true, "{f}");
    }
    // 4 requests from outside, each down the whole chain.
    let log = ws.join("access.log");
    let text: String = NAMES
        .iter()
        .flat_map(|f| {
            std::iter::repeat_n(
                format!(
                    "127.0.0.1 - - [29/Nov/2026:09:00:00 +0000] \"POST /function/{f} HTTP/1.1\" 200 12 \"-\" \"curl\"\n"
                ),
                4,
            )
        })
        .collect();
    std::fs::write(&log, text).unwrap();
    let weighed = support::fmerge_command(
        ws,
        &[
            "graph",
            "-f",
            "stack.yml",
            "--access-log",
            log.to_str().unwrap(),
            "--picture",
            "none",
        ],
    );
    assert!(
        weighed.ok,
        "fmerge graph --access-log failed:\n{}",
        weighed.stderr
    );
    let plan = support::fmerge_command(ws, &["plan"]);
    assert!(plan.ok, "fmerge plan failed:\n{}", plan.stderr);
    let toml = std::fs::read_to_string(ws.join("plan/plan.toml")).unwrap();
    for name in NAMES {
        assert!(
            toml.contains(&format!("\"{name}\"")),
            "{name} not in the plan:\n{toml}"
        );
    }
    let built = support::fmerge_in(ws, &["--plan", "plan/plan.toml"]);
    assert!(built.ok, "fmerge build --plan failed:\n{}", built.stderr);
    let binary = built
        .stdout
        .lines()
        .find(|l| l.ends_with("-merged"))
        .unwrap_or_default();
    assert!(std::path::Path::new(binary).is_file(), "{}", built.stdout);
}
