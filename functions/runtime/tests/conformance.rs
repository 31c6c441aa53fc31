//! The of-watchdog contract as the spec: the same probes against (a) the
//! real of-watchdog 0.11.6 in HTTP mode in front of a function and (b) our
//! runtime serving the same function directly, asserting the same
//! observable behaviour: health, 429 beyond max_inflight (ready too), 504
//! on exec_timeout, slow and idle connections closed after read_timeout,
//! and the drain on SIGTERM (health 503 at once, in-flight requests finish,
//! requests during healthcheck_interval still served, then exit 0).
//!
//! Run: `cargo test --release -p fmerge-runtime --test conformance`.
//! of-watchdog comes from `$FMERGE_OF_WATCHDOG` or is built by
//! `../shared/tools/of-watchdog/build.sh`; if neither works the watchdog
//! half is skipped with the reason, unless `FMERGE_REQUIRE_TOOLS=1`
//! (CI), where it fails.

mod support;

use fmerge_testkit::dataplane::{self, Exited, closed_after, request};
use std::time::{Duration, Instant};
use support::servers::{
    Serving, answers_ok_within, both, both_started, cut_at_exec_timeout, refused_beside,
    start_with_metrics,
};
use support::{at_once, first_not_200, get};

#[test]
fn health_answers_get_200_and_other_methods_405() {
    both_started(&[], |serving, s| {
        let port = s.server.port;
        let health = get(port, "/_/health", &[]);
        assert_eq!(health.status, 200, "{serving:?}");
        assert_eq!(health.body, "OK", "{serving:?}");
        let ready = get(port, "/_/ready", &[]);
        assert_eq!(ready.status, 200, "{serving:?}");
        let post = request(port, "POST", "/_/health", &[], b"").unwrap();
        assert_eq!(post.status, 405, "{serving:?}");
        let echo = get(port, "/echo?status=201", &[]);
        assert_eq!(echo.status, 201, "{serving:?}: {}", s.server.output());
    });
}

#[test]
fn beyond_max_inflight_requests_get_429_and_ready_says_so() {
    both_started(&[("max_inflight", "1")], |serving, s| {
        let port = s.server.port;
        let started = Instant::now();
        let slow = std::thread::spawn(move || request(port, "GET", "/sleep?ms=3000", &[], b""));
        // Ready says 429 once the slow request is in flight.
        let ready = first_not_200(port, "/_/ready", Duration::from_secs(10));
        assert_eq!(
            ready.status,
            429,
            "{serving:?}: ready with one request in flight, {:?} in",
            started.elapsed()
        );
        let refused = refused_beside(serving, port, slow);
        assert!(
            refused.body.contains("Concurrent request limit exceeded"),
            "{serving:?}: {refused:?}"
        );
        let after = get(port, "/sleep?ms=0", &[]);
        assert_eq!(after.status, 200, "{serving:?}");
    });
}

#[test]
fn a_handler_running_past_exec_timeout_is_answered_504() {
    both_started(&[("exec_timeout", "1s")], |serving, s| {
        cut_at_exec_timeout(serving, s.server.port);
        // X-Timeout lowers it for one request.
        let r = get(s.server.port, "/sleep?ms=800", &[("X-Timeout", "200ms")]);
        assert_eq!(r.status, 504, "{serving:?}: {r:?}");
        let ok = get(s.server.port, "/sleep?ms=10", &[]);
        assert_eq!(ok.status, 200, "{serving:?}");
    });
}

#[test]
fn partial_headers_and_idle_keep_alive_connections_are_closed_after_read_timeout() {
    both_started(&[("read_timeout", "1s")], |serving, s| {
        let port = s.server.port;
        let slow = closed_after(
            port,
            b"GET /echo HTTP/1.1\r\nHost: x\r\nX-Slow:",
            Duration::from_secs(15),
        );
        let slow = slow
            .unwrap_or_else(|| panic!("{serving:?}: a partial header was still open after 15 s"));
        assert!(
            slow >= Duration::from_millis(500),
            "{serving:?}: closed after {slow:?}, before read_timeout"
        );
        let idle = closed_after(
            port,
            b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n",
            Duration::from_secs(15),
        );
        let idle = idle.unwrap_or_else(|| {
            panic!("{serving:?}: an idle keep-alive connection was still open after 15 s")
        });
        assert!(
            idle >= Duration::from_millis(500),
            "{serving:?}: idle closed after {idle:?}"
        );
        eprintln!("{serving:?}: partial header closed after {slow:?}, idle after {idle:?}");
    });
}

#[test]
fn sigterm_drains_in_flight_requests_and_turns_health_503() {
    // Long enough that the checks below land inside it even on a slow machine.
    let env = [("healthcheck_interval", "5s"), ("write_timeout", "10s")];
    both_started(&env, |serving, mut s| {
        let port = s.server.port;
        let in_flight: Vec<_> = (0..5)
            .map(|_| std::thread::spawn(move || request(port, "GET", "/sleep?ms=7000", &[], b"")))
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        s.server.signal("TERM");
        let signalled = Instant::now();
        // Unhealthy at once (give the signal a moment to land).
        let health = first_not_200(port, "/_/health", Duration::from_secs(3));
        assert_eq!(health.status, 503, "{serving:?}: health while draining");
        // Still served during healthcheck_interval.
        let during = get(port, "/sleep?ms=10", &[]);
        assert_eq!(
            during.status, 200,
            "{serving:?}: a request during healthcheck_interval"
        );
        assert!(
            signalled.elapsed() < Duration::from_secs(1),
            "the check above came too late to mean anything"
        );
        for r in in_flight {
            let r = r.join().unwrap();
            assert!(
                matches!(&r, Ok(r) if r.status == 200 && r.body == "slept"),
                "{serving:?}: an in-flight request: {r:?}\n{}",
                s.server.output()
            );
        }
        let Exited { code, after } =
            s.server
                .wait_exit(Duration::from_secs(15))
                .unwrap_or_else(|| {
                    panic!("{serving:?}: still running 15 s after the in-flight requests finished")
                });
        eprintln!(
            "{serving:?}: exit {code:?}, {:?} after the signal",
            signalled.elapsed()
        );
        assert_eq!(
            code,
            Some(0),
            "{serving:?} after {after:?}:\n{}",
            s.server.output()
        );
        assert!(
            request(port, "GET", "/_/health", &[], b"").is_err(),
            "{serving:?}: still listening after exit"
        );
    });
}

/// Probes health every 100 ms for `window`: every probe must be answered
/// 200 within 3 s. Returns the slowest answer.
fn health_throughout(serving: Serving, port: u16, window: Duration) -> Duration {
    let until = Instant::now() + window;
    let mut slowest = Duration::ZERO;
    while Instant::now() < until {
        let took = answers_ok_within(serving, port, "/_/health", Duration::from_secs(3));
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    slowest
}

#[test]
fn clients_that_never_read_their_replies_neither_keep_their_connections_nor_take_health_away() {
    use std::io::{Read, Write};
    const REPLIES: usize = 20;
    let env = [
        ("max_connections", "4"),
        ("read_timeout", "3s"),
        ("write_timeout", "3s"),
    ];
    both_started(&env, |serving, s| {
        let port = s.server.port;
        // Four clients pipeline 20 requests for 4 MiB each and never read:
        // more than the socket buffers on the way hold (behind of-watchdog,
        // two connections), so a reply write stalls.
        let stalled: Vec<std::net::TcpStream> = (0..4)
            .map(|_| {
                let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                let one = b"GET /big?kb=4096 HTTP/1.1\r\nHost: x\r\n\r\n";
                c.write_all(&one.repeat(REPLIES)).unwrap();
                c
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        let slowest = health_throughout(serving, port, Duration::from_secs(5));
        eprintln!("{serving:?}: health answered throughout, slowest in {slowest:?}");
        // Each stalled connection was closed by the write deadline: reading
        // now ends before all of its replies came.
        for mut c in stalled {
            c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut got = Vec::new();
            let _ = c.read_to_end(&mut got);
            let replies = got.windows(12).filter(|w| w == b"HTTP/1.1 200").count();
            assert!(
                replies < REPLIES,
                "{serving:?}: a client that did not read got all {replies} replies: its connection was never closed"
            );
        }
    });
}

#[test]
fn handlers_that_block_their_threads_are_answered_504_at_exec_timeout_while_health_answers() {
    // As many blocked handlers as the handlers' runtime has threads.
    let env = [("exec_timeout", "1s"), ("TOKIO_WORKER_THREADS", "2")];
    both_started(&env, |serving, s| {
        let port = s.server.port;
        let blocked: Vec<_> = at_once(2, port, "/block?ms=8000");
        std::thread::sleep(Duration::from_millis(300));
        let slowest = health_throughout(serving, port, Duration::from_secs(2));
        for b in blocked {
            let (reply, after) = b.join().unwrap();
            let reply = reply.unwrap();
            assert_eq!(reply.status, 504, "{serving:?}: after {after:?}: {reply:?}");
            eprintln!("{serving:?}: 504 after {after:?}; health meanwhile, slowest {slowest:?}");
        }
    });
}

#[test]
fn a_flood_of_made_up_methods_leaves_the_metrics_small() {
    both(|serving| {
        let Some((s, metrics)) = start_with_metrics(serving, &[]) else {
            return;
        };
        let statuses = dataplane::method_flood(s.server.port, 3000);
        assert_eq!(statuses.len(), 3001, "{serving:?}");
        let text = get(metrics, "/metrics", &[]).body;
        eprintln!(
            "{serving:?}: /metrics after 3000 made-up methods: {} bytes",
            text.len()
        );
        assert!(text.len() < 64 << 10, "{serving:?}: {} bytes", text.len());
    });
}
