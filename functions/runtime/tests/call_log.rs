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
    // One handler request made them all, as fmerge-runtime, of callee;
    // a request from outside has no parent.
    assert!(
        lines
            .iter()
            .all(|l| l.len() == 6 && l[0] == lines[0][0] && l[5] == "-"),
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

/// Each record names the request whose call started the one that made it:
/// a call over the gateway carries the calling request's id (the one the
/// caller's own record names) as `X-Fmerge-Request`, and the callee's
/// records take it as their parent when a function of the application
/// (its key) sent it; an outside client cannot claim one.
#[test]
fn the_call_log_names_the_calling_request_over_the_gateway() {
    let (leaf_port, middle_port) = (free_port(), free_port());
    let gateway = Gateway::start(&[("leaf", leaf_port), ("middle", middle_port)]);
    let probe = |port: u16, extra: &[(&str, String)]| {
        let mut cmd = Command::new(dataplane::example_binary("fmerge-runtime", "probe"));
        cmd.env("port", port.to_string())
            .env("metrics_port", "0")
            .env("listen_address", "127.0.0.1")
            .env("GATEWAY_URL", gateway.url())
            .env(fmerge_contract::CALLER_KEY_VAR, CALLER_KEY)
            .envs(extra.iter().map(|(k, v)| (k, v)));
        Server::start(cmd, port)
    };
    let leaf = probe(leaf_port, &[]);
    let middle_metrics = free_port();
    let middle = probe(
        middle_port,
        &[
            ("metrics_port", middle_metrics.to_string()),
            ("FMERGE_CALL_LOG", "100".into()),
        ],
    );
    let metrics = free_port();
    let caller = keyed_probe(&[
        ("GATEWAY_URL", &gateway.url()),
        ("metrics_port", &metrics.to_string()),
        ("FMERGE_CALL_LOG", "100"),
    ]);
    let rows = |port: u16| -> Vec<Vec<String>> {
        let log = request(port, "GET", "/calls", &[], b"").unwrap();
        log.body
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(' ').map(str::to_string).collect())
            .collect()
    };
    // The caller sends its request's id, whatever its client claimed (the
    // leaf, its log off, leaves the header to its handler).
    let r = request(
        caller.server_port(),
        "GET",
        "/invoke?target=leaf&path=/echo",
        &[("X-Fmerge-Request", "forged.1")],
        b"",
    )
    .unwrap();
    let echo: serde_json::Value = serde_json::from_str(&r.body).expect(&r.body);
    let top = rows(metrics);
    assert_eq!(top.len(), 1, "{top:?}");
    assert_eq!(top[0][5], "-", "an outside client's claim is not taken");
    assert_eq!(
        echo["headers"]["x-fmerge-request"], top[0][0],
        "the call carries the request the caller's record names: {echo}"
    );
    // The middle takes it from a function of the application...
    let target = "/fanout?target=leaf";
    let sig = support::caller_sig(
        "caller",
        "fmerge-runtime",
        "GET",
        target,
        support::unix_now(),
    );
    let signed = [
        ("X-Fmerge-Caller", "caller"),
        ("X-Fmerge-Caller-Sig", sig.as_str()),
        ("X-Fmerge-Request", "upstream-1.7"),
    ];
    let r = request(middle_port, "GET", target, &signed, b"").unwrap();
    assert_eq!(r.body, "done", "{}", middle.output());
    let below = rows(middle_metrics);
    assert_eq!(below.len(), 3, "{below:?}");
    assert!(
        below
            .iter()
            .all(|l| l[2] == "leaf" && l[5] == "upstream-1.7"),
        "{below:?}"
    );
    // ...and from no one else.
    let unsigned = [("X-Fmerge-Request", "upstream-1.8")];
    let r = request(middle_port, "GET", target, &unsigned, b"").unwrap();
    assert_eq!(r.body, "done");
    let below = rows(middle_metrics);
    assert_eq!(below.len(), 6, "{below:?}");
    assert!(below[3..].iter().all(|l| l[5] == "-"), "{below:?}");
    drop((leaf, middle));
}
