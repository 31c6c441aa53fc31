//! What a user of of-watchdog notices in its answers, against both fronts
//! (see `conformance.rs`): every reply of the function carries
//! `X-Duration-Seconds`; the 504 at `exec_timeout` and the 429 past
//! `max_inflight` say they are the front's (`X-OpenFaaS-Internal`); health
//! says its `Content-Type`; and a `/_/` path other than health and ready
//! reaches the function.
//!
//! Run: `cargo test --release -p fmerge-runtime --test conformance_answers`.

mod support;

use fmerge_testkit::dataplane::{RawResponse, request};
use std::time::{Duration, Instant};
use support::fronts::both_started;
use support::get;

/// The reply's `X-Duration-Seconds`, which must be a number of seconds.
fn duration_of(front: support::fronts::Front, r: &RawResponse) -> f64 {
    let value = r
        .headers
        .get("x-duration-seconds")
        .unwrap_or_else(|| panic!("{front:?}: no X-Duration-Seconds: {r:?}"));
    value
        .parse()
        .unwrap_or_else(|e| panic!("{front:?}: X-Duration-Seconds {value:?}: {e}"))
}

#[test]
fn every_reply_of_the_function_carries_x_duration_seconds() {
    both_started(&[], |front, s| {
        let r = get(s.server.port, "/sleep?ms=300", &[]);
        assert_eq!(r.status, 200, "{front:?}: {r:?}");
        let took = duration_of(front, &r);
        assert!((0.25..30.0).contains(&took), "{front:?}: {took}");
        let r = get(s.server.port, "/echo?status=404", &[]);
        assert_eq!(r.status, 404, "{front:?}: {r:?}");
        duration_of(front, &r);
    });
}

#[test]
fn the_504_at_exec_timeout_says_how_long_and_that_the_front_made_it() {
    both_started(&[("exec_timeout", "1s")], |front, s| {
        let asked = Instant::now();
        let r = get(s.server.port, "/sleep?ms=5000", &[]);
        assert_eq!(r.status, 504, "{front:?}: {r:?}");
        assert!(asked.elapsed() < Duration::from_millis(4500), "{front:?}");
        let took = duration_of(front, &r);
        assert!((0.9..4.5).contains(&took), "{front:?}: {took}");
        assert!(
            r.headers.contains_key("x-openfaas-internal"),
            "{front:?}: {r:?}"
        );
    });
}

#[test]
fn health_has_a_content_type_and_the_429_says_the_front_made_it() {
    both_started(&[("max_inflight", "1")], |front, s| {
        let port = s.server.port;
        let health = get(port, "/_/health", &[]);
        assert_eq!(health.status, 200, "{front:?}");
        let content_type = health.headers.get("content-type").map(String::as_str);
        assert_eq!(
            content_type,
            Some("text/plain; charset=utf-8"),
            "{front:?}: {health:?}"
        );
        let slow = std::thread::spawn(move || request(port, "GET", "/sleep?ms=3000", &[], b""));
        // Ready says 429 once the slow request is in flight (it takes no
        // slot itself, unlike another request that could race the slow one).
        let deadline = Instant::now() + Duration::from_secs(10);
        while get(port, "/_/ready", &[]).status == 200 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let refused = get(port, "/sleep?ms=0", &[]);
        assert_eq!(refused.status, 429, "{front:?}: {refused:?}");
        assert!(
            refused.headers.contains_key("x-openfaas-internal"),
            "{front:?}: {refused:?}"
        );
        assert_eq!(slow.join().unwrap().unwrap().status, 200, "{front:?}");
    });
}

#[test]
fn a_probe_path_other_than_health_and_ready_reaches_the_function() {
    both_started(&[], |front, s| {
        let r = get(s.server.port, "/_/other", &[]);
        assert_eq!(r.status, 404, "{front:?}: {r:?}");
        assert!(
            r.body.contains("no route /_/other"),
            "{front:?}: not the function's answer: {r:?}"
        );
    });
}
