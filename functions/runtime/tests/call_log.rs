//! The call log (`FMERGE_CALL_LOG`): each `invoke`'s start and end, read
//! on the metrics port with `GET /calls`, which leaves the records, and
//! taken out with a `POST /calls` only a holder of the application's key
//! can sign.
//!
//! Run: `cargo test --release -p fmerge-runtime --test call_log`.

mod support;

use fmerge_testkit::dataplane::{self, Server, keyed_probe, request};
use fmerge_testkit::{CALLER_KEY, Gateway, free_port};
use std::process::Command;

#[test]
fn the_call_log_records_calls_at_once_then_one_after() {
    let callee_port = free_port();
    let gateway = Gateway::start(&[("callee", callee_port)]);
    let mut cmd = Command::new(dataplane::example_binary("fmerge-runtime", "probe"));
    cmd.env("port", callee_port.to_string())
        .env("metrics_port", "0")
        .env("listen_address", "127.0.0.1")
        .env(fmerge_contract::CALLER_KEY_VAR, CALLER_KEY);
    let callee = Server::start(cmd, callee_port);
    let metrics = free_port();
    let caller = keyed_probe(&[
        ("GATEWAY_URL", &gateway.url()),
        ("metrics_port", &metrics.to_string()),
        ("FMERGE_CALL_LOG", "100"),
    ]);
    let r = request(
        caller.server_port(),
        "GET",
        "/fanout?target=callee",
        &[],
        b"",
    );
    assert_eq!(r.unwrap().body, "done", "{}", caller.output());
    let log = request(metrics, "GET", "/calls", &[], b"").unwrap();
    assert_eq!(log.status, 200, "{log:?}");
    let lines: Vec<Vec<&str>> = log
        .body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(' ').collect())
        .collect();
    assert_eq!(lines.len(), 3, "{}", log.body);
    // One handler request made them all, as fmerge-runtime, of callee.
    assert!(
        lines.iter().all(|l| l.len() == 5 && l[0] == lines[0][0]),
        "{}",
        log.body
    );
    assert!(
        lines
            .iter()
            .all(|l| l[1] == "fmerge-runtime" && l[2] == "callee")
    );
    let mut spans: Vec<(u64, u64)> = lines
        .iter()
        .map(|l| (l[3].parse().unwrap(), l[4].parse().unwrap()))
        .collect();
    spans.sort();
    let [a, b, c] = spans[..] else { unreachable!() };
    assert!(
        b.0 < a.1 && a.0 < b.1,
        "the joined two overlap: {}",
        log.body
    );
    assert!(
        c.0 >= a.1.max(b.1),
        "the third starts after both: {}",
        log.body
    );
    let records =
        |r: &dataplane::RawResponse| r.body.lines().filter(|l| !l.starts_with('#')).count();
    // A read leaves them; taking them out needs the key.
    let again = request(metrics, "GET", "/calls", &[], b"").unwrap();
    assert_eq!(records(&again), 3, "{again:?}");
    let forged = [
        ("X-Fmerge-Caller", "/calls"),
        ("X-Fmerge-Caller-Sig", "t=1,s=00"),
    ];
    let refused = request(metrics, "POST", "/calls", &forged, b"").unwrap();
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(
        records(&request(metrics, "GET", "/calls", &[], b"").unwrap()),
        3
    );
    let sig = support::caller_sig("/calls", "/calls", "POST", "/calls", support::unix_now());
    let signed = [
        ("X-Fmerge-Caller", "/calls"),
        ("X-Fmerge-Caller-Sig", sig.as_str()),
    ];
    let taken = request(metrics, "POST", "/calls", &signed, b"").unwrap();
    assert_eq!(records(&taken), 3, "{taken:?}");
    assert_eq!(
        records(&request(metrics, "GET", "/calls", &[], b"").unwrap()),
        0
    );
    drop(callee);
}
