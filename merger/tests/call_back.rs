//! A merged callee's call back to its caller (cy-front → cy-back →
//! cy-front) stays in the process: the caller's handler is in the binary.
//! It behaves as the call through the gateway did, which reached this same
//! binary: counted under cy-front with caller cy-back, within cy-front's
//! own server guards. The `cycle` fixture, merged, behind nginx on 127.0.0.1.
//!
//! Run: `cargo test --release -p fmerge --test call_back`

mod support;

use support::dataplane::request;
use support::merge_in as merge;
use support::{BuiltBinary, Function, Gateway, HttpReply, fixture, free_port, post};

/// The merged binary serving cy-front with `env`, on a port the gateway
/// routes both functions to (as a deployment of it would be routed), and
/// its metrics port.
fn behind_gateway(env: &[(&str, &str)]) -> (Gateway, Function, u16) {
    let ws = fixture("cycle", &[]);
    let BuiltBinary { binary, .. } = merge(ws.path(), &["cy-front", "cy-back"], &[]);
    let (port, metrics_port) = (free_port(), free_port());
    let gateway = Gateway::start(&[("cy-front", port), ("cy-back", port)]);
    let (url, metrics) = (gateway.url(), metrics_port.to_string());
    let own = [("GATEWAY_URL", url.as_str()), ("metrics_port", &metrics)];
    let merged = Function::start(&binary, "cy-front", port, own.iter().chain(env).copied());
    (gateway, merged, metrics_port)
}

/// The samples of `metric` whose labels hold every one of `labels`.
fn samples(metrics_port: u16, metric: &str, labels: &[&str]) -> Vec<String> {
    let reply = request(metrics_port, "GET", "/metrics", &[], b"").expect("GET /metrics");
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
        .body
        .lines()
        .filter(|line| line.starts_with(&format!("{metric}{{")))
        .filter(|line| labels.iter().all(|l| line.contains(l)))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_merged_callees_call_back_to_its_caller_makes_no_gateway_hop() {
    let (gateway, merged, metrics_port) = behind_gateway(&[]);
    assert_eq!(
        post(&merged.url(), "hello"),
        HttpReply::new(200, "front got back got pong"),
        "{}",
        merged.output()
    );
    assert_eq!(
        gateway.requests_for("cy-front"),
        0,
        "the call back went through the gateway:\n{}",
        gateway.access_log()
    );
    assert_eq!(gateway.requests_for("cy-back"), 0);
    // Counted as cy-front's server counted it: under cy-front, by cy-back.
    let counted = samples(
        metrics_port,
        "http_requests_total",
        &[
            r#"function="cy-front""#,
            r#"caller="cy-back""#,
            r#"code="200""#,
        ],
    );
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert!(counted[0].ends_with(" 1"), "{counted:?}");
    let invoked = samples(
        metrics_port,
        "fmerge_invoke_duration_seconds_count",
        &[
            r#"caller="cy-back""#,
            r#"callee="cy-front""#,
            r#"transport="in-process""#,
        ],
    );
    assert_eq!(invoked.len(), 1, "{invoked:?}");
}

#[test]
fn a_call_back_counts_against_the_callers_own_max_inflight_as_over_the_gateway() {
    // Through the gateway the call back was a second request in flight at
    // cy-front's server: with max_inflight 1 it got the 429, and so it does
    // in-process, and the 429 (a 4xx) reaches the client.
    let (gateway, merged, _) = behind_gateway(&[("max_inflight", "1")]);
    let HttpReply { status, body } = post(&merged.url(), "hello");
    assert_eq!(status, 429, "{body}\n{}", merged.output());
    assert!(
        body.contains("Concurrent request limit exceeded. Max concurrent requests: 1"),
        "{body}"
    );
    assert_eq!(gateway.requests_for("cy-front"), 0);
    assert_eq!(post(&merged.url(), "ping"), HttpReply::new(200, "pong"));
}
