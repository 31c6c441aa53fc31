//! Functions that serve HTTP themselves (issue 50: of-watchdog's `http`
//! mode, each its own server, calls through its own async client), the
//! `httpmode` fixture chain order-front (actix-web, a reqwest client in a static)
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

use chain::{
    HANDLER_LIBRARIES, NAMES, Observed, PANIC_MESSAGE, PRICE_PANIC_MESSAGE, REQUESTS,
    TEMPLATE_STARTED, cluster, merge, run_chain, run_child,
};
use container::{docker, engine_and_watchdog, image_config, image_flags, test_image, wait_ready};
use fmerge_testkit::dataplane::request;
use std::time::Duration;

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
        let said = match HANDLER_LIBRARIES.contains(callee) {
            true => format!(
                "calls to {callee} call its handler library's `handle` in the caller's process, without its template's server or a socket"
            ),
            false => format!("{callee}'s server runs in the caller's process, started with it"),
        };
        assert!(stderr.contains(&said), "{said}:\n{stderr}");
    }
    // Neither handle reaches what works only on its runtime's threads: both
    // are started on the caller's thread.
    for callee in HANDLER_LIBRARIES {
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("calls to {callee} call its handler library's")))
            .unwrap_or_default();
        assert!(
            line.ends_with("an async `handle` is started on the caller's own thread"),
            "{callee}: {line}"
        );
    }
    support::assert_says(
        stderr,
        &[
            "order-front (`order`) → inventory: in the pod",
            "order-front (`price_of`) → price: in the pod",
            "inventory (`reserve`) → render: in the pod",
            "price (`handle`) → tax: in the pod",
        ],
    );
}

/// Unmerged and merged, behind the real of-watchdog in `http` mode: the
/// same replies (status, Content-Type, the caller's own header, body),
/// the same Redis state, render's panic in the log; merged, no call
/// between members through the gateway.
#[test]
fn the_merged_chain_answers_as_unmerged_without_the_gateway() {
    run_child("in_namespace_both");
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
    // The handler libraries' `handle`s answered without their template's
    // server, which started unmerged.
    for name in HANDLER_LIBRARIES {
        assert!(
            unmerged.logs[name].contains(TEMPLATE_STARTED),
            "{}",
            unmerged.logs[name]
        );
    }
    assert!(
        !merged.logs[NAMES[0]].contains(TEMPLATE_STARTED),
        "a template's server started in the merged pod:\n{}",
        merged.logs[NAMES[0]]
    );
    // Once each, as unmerged: the calls that panicked were not sent again.
    for message in [PANIC_MESSAGE, PRICE_PANIC_MESSAGE] {
        assert_eq!(
            merged.logs[NAMES[0]].matches(message).count(),
            1,
            "{message:?} is in the merged pod's log, once:\n{}",
            merged.logs[NAMES[0]]
        );
    }
}

/// Health and SIGTERM as unmerged: the caller's watchdog answers health
/// while a call between members is in flight; a SIGTERM then ends the pod
/// as it ended the unmerged caller's (of-watchdog passes it on to its
/// process, whose actix-web server stops gracefully: the request in flight
/// finishes, then the process exits and the watchdog with it): the request
/// answers as it did, the watchdog exits with the same code, and health
/// stops answering. A merged process where the signal missed the caller's
/// handler (a member's thread taking it, the shim's own handling) would
/// end the request or hold on, and differ.
#[test]
fn health_and_sigterm_end_the_merged_pod_as_the_unmerged_callers() {
    run_child("in_namespace_shutdown");
}

#[test]
#[ignore = "run by health_and_sigterm_end_the_merged_pod_as_the_unmerged_callers in its own namespace"]
fn in_namespace_shutdown() {
    let (_cluster, _redis) = cluster();
    let unmerged = shutdown(false);
    println!("unmerged: {unmerged:?}");
    assert_eq!(unmerged.health_in_flight, Some(200));
    assert_eq!(
        unmerged.in_flight,
        Some(200),
        "the unmerged caller finished its request"
    );
    assert_eq!(
        unmerged.health_after, None,
        "the unmerged caller's watchdog ended"
    );
    let merged = shutdown(true);
    println!("merged: {merged:?}");
    assert_eq!(merged, unmerged, "merged (left) and unmerged (right)");
}

/// What a SIGTERM during a request came to.
#[derive(Debug, PartialEq)]
struct Shutdown {
    /// The caller's watchdog's health while the request was in flight.
    health_in_flight: Option<u16>,
    /// The request's status through the gateway (`None`: no reply).
    in_flight: Option<u16>,
    /// The watchdog's exit code.
    exit_code: Option<i32>,
    /// Its health after it exited (`None`: nothing answers).
    health_after: Option<u16>,
}

fn shutdown(merged: bool) -> Shutdown {
    let mut deployed = chain::deploy(merged);
    // render is slow (past its 1 s `exec_timeout`) for this request, so
    // the call chain is still in flight when the signal comes.
    let body = r#"{"item":"book","look":"slow"}"#;
    let in_flight = std::thread::spawn(move || {
        request(8080, "POST", "/function/order-front", &[], body.as_bytes())
            .ok()
            .map(|r| r.status)
    });
    std::thread::sleep(Duration::from_millis(300));
    let caller = deployed.watchdog(NAMES[0]).port();
    let health = || {
        request(caller, "GET", "/_/health", &[], b"")
            .ok()
            .map(|r| r.status)
    };
    let health_in_flight = health();
    let process = deployed.watchdog(NAMES[0]).process();
    process.signal("TERM");
    let exited = process
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the caller's watchdog did not exit after SIGTERM"));
    Shutdown {
        health_in_flight,
        in_flight: in_flight.join().unwrap(),
        exit_code: exited.code,
        health_after: health(),
    }
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
            (200, "price 200: book costs 40 (tax 200 8)\n"),
            (200, "price 500: \n"),
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
    // Three requests reached inventory and render; five price and tax (the
    // quotes ask price alone).
    assert_eq!(
        calls(seen),
        [REQUESTS.len(), 3, 3, 5, 5],
        "{:?}",
        seen.calls
    );
    assert_eq!(
        seen.logs[NAMES[2]].matches(PANIC_MESSAGE).count(),
        1,
        "{:#?}",
        seen.logs
    );
    assert_eq!(
        seen.logs[NAMES[3]].matches(PRICE_PANIC_MESSAGE).count(),
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
    let Some(watchdog) = engine_and_watchdog() else {
        return;
    };
    merge();
    let ws = chain::workspace();
    let (tag, mut cleanup) = test_image("fmerge-hm/order-front");
    // An out folder of its own: the other tests run the merged binary.
    let out = ws.join("out-image");
    let mut args = vec!["-f", "stack.yml"];
    args.extend(NAMES);
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(image_flags(&tag, &watchdog));
    let support::Ran { ok, stderr, .. } = support::fmerge_in(ws, &args);
    assert!(ok, "fmerge build --image failed:\n{stderr}");
    support::assert_says(&stderr, &[" in http mode, as it ran order-front"]);
    image_config(
        &tag,
        &[
            "fprocess=/usr/local/bin/order-front-merged",
            "mode=http",
            "upstream_url=http://127.0.0.1:3001",
        ],
    );
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
    assert_eq!(wait_ready(&id, port, "/ping").body, "order-front\n");
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
    let calls = support::graph_of_stack(ws, &[]);
    let edges: Vec<(String, String)> = support::edges_of(&calls)
        .into_iter()
        .map(|(from, to, _)| (from, to))
        .collect();
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
    let requests: Vec<(&str, usize)> = NAMES.iter().map(|f| (*f, 4)).collect();
    support::weighed_graph(ws, &requests);
    support::plan_and_build(ws, &NAMES);
}
