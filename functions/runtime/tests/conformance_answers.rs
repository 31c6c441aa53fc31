//! What a user of of-watchdog notices in its answers, against both servers
//! (see `conformance.rs`): every reply of the function carries
//! `X-Duration-Seconds`; the 504 at `exec_timeout` and the 429 past
//! `max_inflight` say they are the server's (`X-OpenFaaS-Internal`); health
//! says its `Content-Type`; a `/_/` path other than health and ready
//! reaches the function; `write_timeout` counts from the request's head
//! (Go's `WriteTimeout`); a body later than `exec_timeout`, and a client
//! that closes its side after its request, get 504; `/metrics` is
//! Prometheus text 0.0.4.
//!
//! Run: `cargo test --release -p fmerge-runtime --test conformance_answers`.

mod support;

use fmerge_testkit::dataplane::{RawResponse, parse, request};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};
use support::servers::{
    Serving, both, both_started, cut_at_exec_timeout, refused_beside, start_with_metrics,
};
use support::{first_not_200, get};

/// The reply's `X-Duration-Seconds`, which must be a number of seconds.
fn duration_of(serving: support::servers::Serving, r: &RawResponse) -> f64 {
    let value = r
        .headers
        .get("x-duration-seconds")
        .unwrap_or_else(|| panic!("{serving:?}: no X-Duration-Seconds: {r:?}"));
    value
        .parse()
        .unwrap_or_else(|e| panic!("{serving:?}: X-Duration-Seconds {value:?}: {e}"))
}

#[test]
fn every_reply_of_the_function_carries_x_duration_seconds() {
    both_started(&[], |serving, s| {
        let r = get(s.server.port, "/sleep?ms=300", &[]);
        assert_eq!(r.status, 200, "{serving:?}: {r:?}");
        let took = duration_of(serving, &r);
        assert!((0.25..30.0).contains(&took), "{serving:?}: {took}");
        let r = get(s.server.port, "/echo?status=404", &[]);
        assert_eq!(r.status, 404, "{serving:?}: {r:?}");
        duration_of(serving, &r);
    });
}

#[test]
fn the_504_at_exec_timeout_says_how_long_and_that_the_front_made_it() {
    both_started(&[("exec_timeout", "1s")], |serving, s| {
        let r = cut_at_exec_timeout(serving, s.server.port);
        let took = duration_of(serving, &r);
        assert!((0.9..4.5).contains(&took), "{serving:?}: {took}");
        assert!(
            r.headers.contains_key("x-openfaas-internal"),
            "{serving:?}: {r:?}"
        );
    });
}

#[test]
fn health_has_a_content_type_and_the_429_says_the_front_made_it() {
    both_started(&[("max_inflight", "1")], |serving, s| {
        let port = s.server.port;
        let health = get(port, "/_/health", &[]);
        assert_eq!(health.status, 200, "{serving:?}");
        let content_type = health.headers.get("content-type").map(String::as_str);
        assert_eq!(
            content_type,
            Some("text/plain; charset=utf-8"),
            "{serving:?}: {health:?}"
        );
        let slow = std::thread::spawn(move || request(port, "GET", "/sleep?ms=3000", &[], b""));
        // Ready says 429 once the slow request is in flight (it takes no
        // slot itself, unlike another request that could race the slow one).
        first_not_200(port, "/_/ready", Duration::from_secs(10));
        let refused = refused_beside(serving, port, slow);
        assert!(
            refused.headers.contains_key("x-openfaas-internal"),
            "{serving:?}: {refused:?}"
        );
    });
}

#[test]
fn a_probe_path_other_than_health_and_ready_reaches_the_function() {
    both_started(&[], |serving, s| {
        let r = get(s.server.port, "/_/other", &[]);
        assert_eq!(r.status, 404, "{serving:?}: {r:?}");
        assert!(
            r.body.contains("no route /_/other"),
            "{serving:?}: not the function's answer: {r:?}"
        );
    });
}

/// Sends `head`, then `body` after `late`, then closes the sending side if
/// `half_close`; everything the server sent until it closed.
fn exchange(port: u16, head: &str, body: &[u8], late: Duration, half_close: bool) -> Vec<u8> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(late);
    c.write_all(body).unwrap();
    if half_close {
        c.shutdown(Shutdown::Write).unwrap();
    }
    let mut reply = Vec::new();
    let _ = c.read_to_end(&mut reply);
    reply
}

fn get_closing(port: u16, target: &str, headers: &str) -> Vec<u8> {
    let head = format!("GET {target} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n");
    exchange(port, &head, b"", Duration::ZERO, false)
}

#[test]
fn write_timeout_counts_from_the_request_head_as_go_counts_it() {
    both_started(
        &[("write_timeout", "1s"), ("exec_timeout", "10s")],
        |serving, s| {
            let port = s.server.port;
            let quick = parse(&get_closing(port, "/sleep?ms=200", ""), false);
            assert_eq!(quick.map(|r| r.status), Ok(200), "{serving:?}");
            // Ready after write_timeout: never written, the connection closed.
            let late = get_closing(port, "/sleep?ms=2500", "");
            assert!(
                late.is_empty(),
                "{serving:?}: {:?}",
                String::from_utf8_lossy(&late)
            );
            // The server's own 504 at an exec_timeout that is not below
            // write_timeout: of-watchdog's comes too late to be written, the
            // runtime's is (see docs/operating.md). Half a second above it:
            // Go enforces a write deadline by a timer, which a loaded machine
            // can fire a few milliseconds late, letting a write at the
            // deadline itself through.
            let timed_out = get_closing(port, "/sleep?ms=2500", "X-Timeout: 1500ms\r\n");
            match serving {
                Serving::Runtime => {
                    let r = parse(&timed_out, false).unwrap();
                    assert_eq!(r.status, 504, "{r:?}");
                }
                Serving::Watchdog => assert!(timed_out.is_empty(), "{timed_out:?}"),
            }
        },
    );
}

#[test]
fn a_body_later_than_exec_timeout_and_a_client_that_closes_its_side_get_504() {
    both_started(&[("exec_timeout", "1s")], |serving, s| {
        let port = s.server.port;
        // Several at once: a handler quick enough could once finish
        // before the deadline was looked at.
        let head =
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n";
        let late: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(move || {
                    exchange(port, head, b"hello", Duration::from_millis(2000), false)
                })
            })
            .collect();
        for late in late {
            let late = late.join().unwrap();
            let late = parse(&late, false).unwrap_or_else(|e| panic!("{serving:?}: {e}"));
            assert_eq!(late.status, 504, "{serving:?}: a late body: {late:?}");
            assert!(
                late.headers.contains_key("x-openfaas-internal"),
                "{serving:?}"
            );
        }
        let head = "GET /sleep?ms=3000 HTTP/1.1\r\nHost: x\r\n\r\n";
        let asked = Instant::now();
        let closed = exchange(port, head, b"", Duration::ZERO, true);
        let closed = parse(&closed, false).unwrap_or_else(|e| panic!("{serving:?}: {e}"));
        assert_eq!(closed.status, 504, "{serving:?}: a half-close: {closed:?}");
        assert!(
            closed.headers.contains_key("x-openfaas-internal"),
            "{serving:?}"
        );
        assert!(
            asked.elapsed() < Duration::from_millis(2500),
            "{serving:?}: answered after {:?}, not when the client closed its side",
            asked.elapsed()
        );
    });
}

#[test]
fn metrics_are_prometheus_text_0_0_4_unless_openmetrics_is_asked_for() {
    both(|serving| {
        let Some((s, metrics)) = start_with_metrics(serving, &[]) else {
            return;
        };
        assert_eq!(get(s.server.port, "/echo", &[]).status, 200, "{serving:?}");
        let text = get(metrics, "/metrics", &[]);
        let content_type = text
            .headers
            .get("content-type")
            .cloned()
            .unwrap_or_default();
        assert!(
            content_type.starts_with("text/plain; version=0.0.4; charset=utf-8"),
            "{serving:?}: {content_type}"
        );
        assert!(
            text.body.contains("# TYPE http_requests_total counter\n"),
            "{serving:?}: {}",
            text.body
        );
        // What Prometheus asks for: whichever it gets, it is what it asked.
        let accept =
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3";
        let asked = get(metrics, "/metrics", &[("Accept", accept)]);
        let content_type = asked
            .headers
            .get("content-type")
            .cloned()
            .unwrap_or_default();
        assert!(
            content_type.starts_with("application/openmetrics-text; version=1.0.0")
                || content_type.starts_with("text/plain; version=0.0.4"),
            "{serving:?}: {content_type}"
        );
    });
}
