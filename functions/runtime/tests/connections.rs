//! The connection layer (accept, HTTP, timeouts, probes, metrics, signals) runs
//! apart from the handlers, so careless handlers cannot stall it; what it
//! enforces that of-watchdog does not, or does worse (`conformance.rs` compares
//! the rest with the real of-watchdog): `X-Timeout` can only lower
//! `exec_timeout`, requests that end badly are counted, a request that waits
//! for a handler thread gets its 504 at `exec_timeout` from its arrival, and
//! request bodies in memory have a budget, charged on the bytes that arrived.
//!
//! Run: `cargo test --release -p fmerge-runtime --test connections`.

mod support;

use fmerge_testkit::dataplane::{
    self, Exited, ProbeServer, RawResponse, ResidentKib, probe, request, rss_kib,
};
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
    let ProbeServer { server: s, .. } = probe(&[("exec_timeout", "1s")]);
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
    let ProbeServer { server: mut s, .. } = probe(&[
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
    // A connection layer stalled with its handlers would answer after 60 s, not
    // in 1.
    assert!(slowest < Duration::from_secs(1), "health took {slowest:?}");
    for a in asleep {
        let (reply, after) = a.join().unwrap();
        let reply = reply.unwrap();
        assert_eq!(reply.status, 504, "after {after:?}: {reply:?}");
        assert!(reply.body.contains("exec_timeout"), "{reply:?}");
        eprintln!("504 after {after:?}");
    }
    s.signal("TERM");
    let Exited { code, after } = s
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("still running 30 s after SIGTERM:\n{}", s.output()));
    eprintln!("exit {code:?} {after:?} after SIGTERM, handler threads still asleep");
    assert_eq!(code, Some(0), "{}", s.output());
}

#[test]
fn a_blocked_handler_answered_504_no_longer_holds_its_max_inflight_slot() {
    // As of-watchdog's limit counts its own requests, not its upstream's: once
    // the connection layer has answered, the next request is admitted even
    // while the abandoned handler still blocks its thread.
    let ProbeServer { server: s, .. } = probe(&[
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
    let ProbeServer { server: s, metrics } =
        probe(&[("exec_timeout", "1s"), ("FMERGE_ACCESS_LOG", "1")]);
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
            .any(|l| l.contains("GET /sleep?ms=5000 - 499")),
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
    let ProbeServer { server: s, .. } =
        probe(&[("max_buffered_bytes", &(64usize << 20).to_string())]);
    let port = s.port;
    // Eight 31 MiB bodies at once, each held 2 s: two fit the 64 MiB budget;
    // the others wait for budget, and those that wait too long get 503.
    let posts: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || post_body(port, 31 << 20, 2000)))
        .collect();
    let statuses: Vec<u16> = posts
        .into_iter()
        .map(|p| p.join().unwrap().unwrap())
        .collect();
    let ok = statuses.iter().filter(|&&s| s == 200).count();
    let refused = statuses.iter().filter(|&&s| s == 503).count();
    let ResidentKib { peak, .. } = rss_kib(s.pid());
    eprintln!(
        "8 × 31 MiB at once: {ok} × 200, {refused} × 503; peak RSS {} MiB",
        peak >> 10
    );
    assert_eq!(ok + refused, 8, "{statuses:?}");
    assert!(ok >= 1, "{statuses:?}");
    assert!(peak < 160 << 10, "peak RSS {peak} KiB");
    // The budget is given back: one more fits.
    assert_eq!(post_body(port, 31 << 20, 0), Ok(200));
}

/// Sends `head`, then `body` as it is, and reads the reply.
fn raw_post(port: u16, head: &str, body: &[u8]) -> Result<RawResponse, String> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    // Refused early, the rest of the body may not be wanted.
    let _ = c.write_all(body);
    let mut reply = Vec::new();
    let _ = c.read_to_end(&mut reply);
    dataplane::parse(&reply, false)
}

const BUDGET: &str = "67108864";

#[test]
fn two_connections_declaring_32_mib_and_sending_nothing_take_no_budget() {
    let ProbeServer { server: s, .. } = probe(&[("max_buffered_bytes", BUDGET)]);
    let liars: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
            c.write_all(
                format!(
                    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                    32 << 20
                )
                .as_bytes(),
            )
            .unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let small = request(s.port, "POST", "/sleep?ms=0", &[], b"small").unwrap();
    assert_eq!(small.status, 200, "{small:?}");
    drop(liars);
}

#[test]
fn a_chunked_upload_of_70000_one_byte_chunks_is_charged_its_size() {
    let ProbeServer { server: s, .. } = probe(&[("max_buffered_bytes", BUDGET)]);
    let head = "POST /sleep?ms=0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut chunks = b"1\r\nx\r\n".repeat(70_000);
    chunks.extend_from_slice(b"0\r\n\r\n");
    let upload = raw_post(s.port, head, &chunks).unwrap();
    assert_eq!(upload.status, 200, "{upload:?}");
    let small = request(s.port, "POST", "/sleep?ms=0", &[], b"small").unwrap();
    assert_eq!(small.status, 200, "{small:?}");
}

#[test]
fn a_body_waits_for_budget_and_gets_503_with_retry_after_only_past_its_wait() {
    let ProbeServer { server: s, .. } = probe(&[("max_buffered_bytes", "1048576")]);
    let port = s.port;
    let body = vec![b'b'; 900 << 10];
    let post = move |ms: u64, body: &[u8]| {
        let head = format!(
            "POST /sleep?ms={ms} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        raw_post(port, &head, body).unwrap()
    };
    let hold = |ms: u64| {
        let body = body.clone();
        std::thread::spawn(move || post(ms, &body))
    };
    // Held 300 ms: the second body waits for its budget, then fits.
    let first = hold(300);
    std::thread::sleep(Duration::from_millis(100));
    let second = post(0, &body);
    assert_eq!(second.status, 200, "{second:?}");
    assert_eq!(first.join().unwrap().status, 200);
    // Held 4 s: the second waits its while, then gets 503 and Retry-After.
    let first = hold(4000);
    std::thread::sleep(Duration::from_millis(300));
    let second = post(0, &body);
    assert_eq!(second.status, 503, "{second:?}");
    assert_eq!(
        second.headers.get("retry-after").map(String::as_str),
        Some("1")
    );
    assert!(second.body.contains("max_buffered_bytes"), "{second:?}");
    assert_eq!(first.join().unwrap().status, 200);
}

#[test]
fn a_request_waiting_for_a_handler_thread_gets_504_at_exec_timeout_from_its_arrival() {
    let ProbeServer { server: s, .. } =
        probe(&[("exec_timeout", "1s"), ("TOKIO_WORKER_THREADS", "2")]);
    let blockers = at_once(2, s.port, "/block?ms=6000");
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let third = get(s.port, "/echo", &[]);
    let after = asked.elapsed();
    eprintln!("the third request: {} after {after:?}", third.status);
    assert_eq!(third.status, 504, "after {after:?}: {third:?}");
    assert!(third.body.contains("exec_timeout"), "{third:?}");
    // Well before the blockers free a thread (6 s): from the connection layer.
    assert!(after < Duration::from_secs(4), "504 after {after:?}");
    for b in blockers {
        assert_eq!(b.join().unwrap().0.unwrap().status, 504);
    }
}

/// Reads one reply off a keep-alive connection: its status and body.
fn read_reply(c: &mut TcpStream) -> (u16, String) {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(c.read(&mut byte).unwrap(), 1, "closed mid-reply: {raw:?}");
        raw.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&raw).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    c.read_exact(&mut body).unwrap();
    let status = head[9..12].parse().unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn the_next_request_of_a_keep_alive_connection_gets_504_at_exec_timeout_while_threads_block() {
    let ProbeServer { server: s, .. } =
        probe(&[("exec_timeout", "1s"), ("TOKIO_WORKER_THREADS", "2")]);
    let mut kept = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let ask = b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n";
    kept.write_all(ask).unwrap();
    assert_eq!(read_reply(&mut kept).0, 200, "the first request");
    let blockers = at_once(2, s.port, "/block?ms=6000");
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    kept.write_all(ask).unwrap();
    let (status, body) = read_reply(&mut kept);
    let after = asked.elapsed();
    eprintln!("the next request of the kept connection: {status} after {after:?}");
    assert_eq!(status, 504, "after {after:?}: {body}");
    assert!(body.contains("exec_timeout"), "{body}");
    // Well before the blockers free a thread (6 s): from the connection layer.
    assert!(after < Duration::from_secs(4), "504 after {after:?}");
    for b in blockers {
        assert_eq!(b.join().unwrap().0.unwrap().status, 504);
    }
}

#[test]
fn ready_answers_503_while_every_handler_thread_is_held_by_a_handler_answered_504() {
    let ProbeServer { server: s, .. } =
        probe(&[("exec_timeout", "1s"), ("TOKIO_WORKER_THREADS", "2")]);
    let blocked = at_once(2, s.port, "/block?ms=6000");
    for b in blocked {
        let (reply, after) = b.join().unwrap();
        assert_eq!(reply.unwrap().status, 504, "after {after:?}");
    }
    // Both threads still block (for some 5 s): not ready, yet healthy.
    let asked = Instant::now();
    let ready = get(s.port, "/_/ready", &[]);
    let health = get(s.port, "/_/health", &[]);
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "the check came too late to mean anything"
    );
    assert_eq!(ready.status, 503, "{ready:?}");
    assert_eq!(health.status, 200, "{health:?}");
    // Ready again once the threads are back.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = get(s.port, "/_/ready", &[]);
        if ready.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still {ready:?} 20 s on");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(get(s.port, "/echo", &[]).status, 200);
}
