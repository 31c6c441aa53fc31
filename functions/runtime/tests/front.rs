//! The front (accept, HTTP, timeouts, probes, metrics, signals) runs apart
//! from the handlers, so careless handlers cannot stall it; what it enforces
//! that of-watchdog does not, or does worse (`conformance.rs` compares the
//! rest with the real of-watchdog): `X-Timeout` can only lower
//! `exec_timeout`, requests that end badly are counted, and request bodies
//! in memory have a budget.
//!
//! Run: `cargo test --release -p fmerge-runtime --test front`.

mod support;

use fmerge_testkit::dataplane::{self, probe, rss_kib};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{at_once, get};

/// `http_requests_total` of the probe function with status `code`.
fn count(metrics: u16, code: u16) -> u64 {
    let body = get(metrics, "/metrics", &[]).body;
    body.lines()
        .filter(|l| {
            l.starts_with("http_requests_total{") && l.contains(&format!("code=\"{code}\""))
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

#[test]
fn x_timeout_can_only_lower_exec_timeout() {
    let (s, _) = probe(&[("exec_timeout", "1s")]);
    // Zero, a rounding to zero, garbage and a longer one: all keep the 1 s.
    for value in ["0", "0s", "0.1ns", "never", "10s"] {
        let asked = Instant::now();
        let r = get(s.port, "/sleep?ms=3000", &[("X-Timeout", value)]);
        assert_eq!(
            r.status,
            504,
            "X-Timeout: {value} after {:?}: {r:?}",
            asked.elapsed()
        );
    }
    let r = get(s.port, "/sleep?ms=1500", &[("X-Timeout", "300ms")]);
    assert_eq!(r.status, 504, "a lower X-Timeout applies: {r:?}");
}

#[test]
fn two_handlers_asleep_for_a_minute_on_two_threads_get_504_while_health_answers_and_sigterm_drains()
{
    let (mut s, _) = probe(&[
        ("exec_timeout", "2s"),
        ("TOKIO_WORKER_THREADS", "2"),
        ("healthcheck_interval", "1s"),
        ("write_timeout", "3s"),
    ]);
    let port = s.port;
    let asleep: Vec<_> = at_once(2, port, "/block?ms=60000");
    std::thread::sleep(Duration::from_millis(500));
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let asked = Instant::now();
        let health = get(port, "/_/health", &[]);
        assert_eq!(health.status, 200);
        slowest = slowest.max(asked.elapsed());
    }
    eprintln!("health while both handler threads sleep: slowest of 5 in {slowest:?}");
    // A front stalled with its handlers would answer after 60 s, not in 1.
    assert!(slowest < Duration::from_secs(1), "health took {slowest:?}");
    for a in asleep {
        let (reply, after) = a.join().unwrap();
        let reply = reply.unwrap();
        assert_eq!(reply.status, 504, "after {after:?}: {reply:?}");
        assert!(reply.body.contains("exec_timeout"), "{reply:?}");
        eprintln!("504 after {after:?}");
    }
    s.signal("TERM");
    let (code, after) = s
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("still running 30 s after SIGTERM:\n{}", s.output()));
    eprintln!("exit {code:?} {after:?} after SIGTERM, handler threads still asleep");
    assert_eq!(code, Some(0), "{}", s.output());
}

#[test]
fn a_blocked_handler_answered_504_no_longer_holds_its_max_inflight_slot() {
    // As of-watchdog's limit counts its own requests, not its upstream's:
    // once the front has answered, the next request is admitted even while
    // the abandoned handler still blocks its thread.
    let (s, _) = probe(&[
        ("exec_timeout", "1s"),
        ("max_inflight", "1"),
        ("TOKIO_WORKER_THREADS", "2"),
    ]);
    let asked = Instant::now();
    let blocked = get(s.port, "/block?ms=60000", &[]);
    assert_eq!(blocked.status, 504, "{blocked:?}");
    let next = get(s.port, "/echo", &[]);
    let after = asked.elapsed();
    // Only meaningful while the first handler still blocks.
    assert!(
        after < Duration::from_secs(60),
        "{after:?}: the handler woke up"
    );
    assert_eq!(next.status, 200, "the slot is still held: {next:?}");
}

#[test]
fn a_client_that_goes_away_and_a_request_past_exec_timeout_are_counted() {
    let (s, metrics) = probe(&[("exec_timeout", "1s"), ("FMERGE_ACCESS_LOG", "1")]);
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.write_all(b"GET /sleep?ms=5000 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(c);
    let r = get(s.port, "/sleep?ms=3000", &[]);
    assert_eq!(r.status, 504);
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(metrics, 499) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        count(metrics, 499),
        1,
        "the client that went away\n{}",
        s.output()
    );
    assert_eq!(count(metrics, 504), 1, "the request past exec_timeout");
    assert!(
        s.output()
            .lines()
            .any(|l| l.contains("GET /sleep?ms=5000 499")),
        "the access log has it too:\n{}",
        s.output()
    );
}

/// Sends a POST of `size` bytes to `/sleep?ms=<ms>` and returns its status.
fn post_body(port: u16, size: usize, ms: u64) -> Result<u16, String> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "POST /sleep?ms={ms} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {size}\r\n\r\n"
    );
    c.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    // Refused early, the rest of the body may not be wanted.
    let _ = c.write_all(&vec![b'x'; size]);
    let mut reply = Vec::new();
    let _ = c.read_to_end(&mut reply);
    dataplane::parse(&reply, false).map(|r| r.status)
}

#[test]
fn bodies_past_max_buffered_bytes_get_503_and_memory_stays_bounded() {
    let (s, _) = probe(&[("max_buffered_bytes", &(64usize << 20).to_string())]);
    let port = s.port;
    // Eight 31 MiB bodies at once, each held 2 s: two fit the 64 MiB budget.
    let posts: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || post_body(port, 31 << 20, 2000)))
        .collect();
    let statuses: Vec<u16> = posts
        .into_iter()
        .map(|p| p.join().unwrap().unwrap())
        .collect();
    let ok = statuses.iter().filter(|&&s| s == 200).count();
    let refused = statuses.iter().filter(|&&s| s == 503).count();
    let (peak, _) = rss_kib(s.pid());
    eprintln!(
        "8 × 31 MiB at once: {ok} × 200, {refused} × 503; peak RSS {} MiB",
        peak >> 10
    );
    assert_eq!(ok + refused, 8, "{statuses:?}");
    assert!((1..=2).contains(&ok), "{statuses:?}");
    assert!(peak < 160 << 10, "peak RSS {peak} KiB");
    // The budget is given back: one more fits.
    assert_eq!(post_body(port, 31 << 20, 0), Ok(200));
}
