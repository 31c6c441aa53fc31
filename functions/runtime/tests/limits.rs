//! The bounds and the HTTP surface of our runtime that of-watchdog leaves to
//! the function (so `conformance.rs` cannot compare them): the body limit
//! (413 before buffering, memory near the body, not twice it), accept
//! back-off at the fd limit, the connection cap, bad settings, HEAD and
//! OPTIONS on a body-shaped function, whole-request handlers, metrics per
//! function and caller and of the process, the access log, and header
//! propagation by `invoke`.
//!
//! Run: `cargo test --release -p fmerge-runtime --test limits`.

use fmerge_testkit::dataplane::{
    self, ProbeServer, ResidentKib, Server, cpu_ticks, keyed_probe, request, rss_kib,
    ticks_per_second,
};
use fmerge_testkit::{CALLER_KEY, Gateway, exit_within, free_port};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// Sends only the head of a POST declaring `length` bytes (plus `first`
/// bytes of it) and reads the reply.
fn declared_post(port: u16, path: &str, length: u64, first: usize) -> Result<String, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n");
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    // The server may have answered and closed already: a failed write is fine.
    let _ = s.write_all(&vec![b'x'; first]);
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    if reply.is_empty() {
        return Err("no reply".into());
    }
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

#[test]
fn a_body_over_max_body_size_is_refused_413_before_it_is_read() {
    let s = keyed_probe(&[]);
    let port = s.server_port();
    // 1 GiB declared: refused at once, nothing buffered.
    let start = Instant::now();
    let reply = declared_post(port, "/echo", 1 << 30, 64 << 10).unwrap();
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("max_body_size"), "{reply}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    // 100 × 50 MiB at once: all refused, memory stays where it was.
    let replies: Vec<_> = (0..100)
        .map(|_| std::thread::spawn(move || declared_post(port, "/echo", 50 << 20, 256 << 10)))
        .collect();
    for r in replies {
        let r = r.join().unwrap().unwrap();
        assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    }
    let ResidentKib { peak, now } = rss_kib(s.pid());
    eprintln!("after 1 GiB + 100 × 50 MiB declared: peak RSS {peak} KiB, now {now} KiB");
    assert!(peak < 64 << 10, "peak RSS {peak} KiB");
    // A chunked body (no length declared) is cut off while it is read.
    let small = keyed_probe(&[("max_body_size", "1048576")]);
    let mut c = TcpStream::connect(("127.0.0.1", small.server_port())).unwrap();
    c.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let chunk = vec![b'y'; 64 << 10];
    let mut sent = 0;
    while sent < (4 << 20) {
        if c.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .is_err()
            || c.write_all(&chunk).is_err()
            || c.write_all(b"\r\n").is_err()
        {
            break;
        }
        sent += chunk.len();
    }
    let mut reply = Vec::new();
    let _ = c.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
}

#[test]
fn an_accepted_body_costs_about_its_size_in_memory_not_twice() {
    let s = keyed_probe(&[]);
    let ResidentKib { peak: base, .. } = rss_kib(s.pid());
    let body = vec![b'z'; 24 << 20];
    let r = request(s.server_port(), "POST", "/sleep?ms=0", &[], &body).unwrap();
    assert_eq!(r.status, 200);
    // The 8 MiB case of the other tests passes under the default limit.
    let r = request(
        s.server_port(),
        "POST",
        "/sleep?ms=0",
        &[],
        &body[..8 << 20],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    let ResidentKib { peak, .. } = rss_kib(s.pid());
    let grew = peak.saturating_sub(base);
    eprintln!("a 24 MiB body: peak RSS grew by {grew} KiB (from {base} KiB)");
    assert!(
        grew < (24 << 10) * 3 / 2,
        "a 24 MiB body raised peak RSS by {grew} KiB"
    );
}

#[test]
fn at_the_fd_limit_accept_backs_off_and_serves_again_once_idle_connections_close() {
    let port = free_port();
    let probe = dataplane::example_binary("fmerge-runtime", "probe");
    let mut cmd = Command::new("bash");
    cmd.args(["-c", &format!("ulimit -n 64 && exec {}", probe.display())])
        .env("port", port.to_string())
        .env("metrics_port", "0")
        .env("listen_address", "127.0.0.1")
        .env("read_timeout", "3s");
    let s = Server::start(cmd, port);
    // More idle connections than descriptors: accept fails with EMFILE.
    let idle: Vec<TcpStream> = (0..120)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(s.pid());
    let window = Duration::from_millis(1500);
    std::thread::sleep(window);
    let used = cpu_ticks(s.pid()) - before;
    let per_second = dataplane::ticks_per_second();
    eprintln!("at the fd limit: {used} ticks of CPU in {window:?} ({per_second}/s)");
    // A spinning accept loop burns the whole window; allow a third of it.
    assert!(
        used * 3 < per_second * window.as_millis() as u64 / 1000,
        "{used} ticks in {window:?}: the accept loop spins\n{}",
        s.output()
    );
    // The idle ones are closed after read_timeout; a new client is answered.
    let deadline = Instant::now() + Duration::from_secs(20);
    let answered = loop {
        match request(port, "GET", "/echo", &[], b"") {
            Ok(r) => break r,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("no answer 20 s into the fd limit: {e}\n{}", s.output()),
        }
    };
    assert_eq!(answered.status, 200);
    drop(idle);
    let log = s.output();
    let failures = log.matches("accept failed").count();
    assert!(
        (1..=5).contains(&failures),
        "{failures} accept-failure lines:\n{log}"
    );
}

#[test]
fn beyond_max_connections_a_new_client_closes_the_connection_idle_longest() {
    let s = keyed_probe(&[("max_connections", "4")]);
    let port = s.server_port();
    // Four keep-alive connections, each answered once, one after another:
    // the first has been idle longest.
    let mut idle: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            c.write_all(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut reply = Vec::new();
            let mut buf = [0u8; 512];
            while !reply.ends_with(b"}") {
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0, "closed before answering");
                reply.extend_from_slice(&buf[..n]);
            }
            std::thread::sleep(Duration::from_millis(50));
            c
        })
        .collect();
    // A fifth client is served at once, and the first connection closed.
    let fifth = request(port, "GET", "/echo", &[], b"").unwrap();
    assert_eq!(fifth.status, 200);
    let mut rest = [0u8; 64];
    assert_eq!(
        idle[0].read(&mut rest).map_err(|e| e.kind()),
        Ok(0),
        "the connection idle longest is still open"
    );
    // The others are still served on their connections.
    let last = idle.last_mut().unwrap();
    last.write_all(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let n = last.read(&mut rest).unwrap();
    assert!(rest[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &rest[..n]);
}

/// Idle keep-alive connections make room before new ones: a connection
/// that has not sent its head yet (it may be on its way) outlives a newer
/// idle one when a client arrives past the cap.
#[test]
fn beyond_max_connections_an_idle_connection_goes_before_a_new_one() {
    let s = keyed_probe(&[("max_connections", "2")]);
    let port = s.server_port();
    let mut waiting = TcpStream::connect(("127.0.0.1", port)).unwrap();
    waiting
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let mut idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    idle.write_all(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 512];
    let n = idle.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &buf[..n]);
    std::thread::sleep(Duration::from_millis(100));
    // A third client: the idle connection is closed for it, though the
    // waiting one is older.
    let third = request(port, "GET", "/echo", &[], b"").unwrap();
    assert_eq!(third.status, 200);
    let mut rest = [0u8; 64];
    assert_eq!(
        idle.read(&mut rest).map_err(|e| e.kind()),
        Ok(0),
        "the idle connection is still open"
    );
    waiting
        .write_all(b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    waiting
        .read_to_end(&mut reply)
        .expect("the waiting connection is answered");
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "the waiting connection was closed: {:?}",
        String::from_utf8_lossy(&reply)
    );
}

#[test]
fn an_invalid_setting_stops_the_start_naming_the_variable() {
    for (key, value) in [
        ("read_timeout", "ten"),
        ("max_inflight", "-1"),
        ("port", "http"),
        ("max_body_size", "8M"),
    ] {
        let out = Command::new(dataplane::example_binary("fmerge-runtime", "probe"))
            .env(key, value)
            .env("metrics_port", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}={value}: {stderr}");
        assert!(
            stderr.contains(&format!("{key}=\"{value}\"")),
            "{key}: {stderr}"
        );
        assert!(stderr.contains("\nfix: "), "{key}: {stderr}");
    }
}

#[test]
fn a_whole_request_handler_sees_method_path_query_headers_and_sets_the_reply() {
    let s = keyed_probe(&[("FMERGE_ACCESS_LOG", "1")]);
    let r = request(
        s.server_port(),
        "PUT",
        "/echo?status=418&a=b",
        &[("X-Custom", "v"), ("X-Call-Id", "call-1")],
        b"payload",
    )
    .unwrap();
    assert_eq!(r.status, 418);
    assert_eq!(r.headers.get("x-echo").map(String::as_str), Some("1"));
    let echo: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(echo["method"], "PUT");
    assert_eq!(echo["path"], "/echo");
    assert_eq!(echo["query"], "status=418&a=b");
    assert_eq!(echo["headers"]["x-custom"], "v");
    assert_eq!(echo["body"], "payload");
    // HEAD and OPTIONS reach a whole-request handler as they are.
    let head = request(s.server_port(), "HEAD", "/echo", &[], b"").unwrap();
    assert_eq!(head.status, 200);
    // The access log line names the function, the request and the call id.
    let log = s.output();
    assert!(
        log.lines().any(|l| l
            .starts_with("fmerge-runtime: PUT /echo?status=418&a=b - 418 I'm a teapot")
            && l.ends_with(" [call-1]")),
        "{log}"
    );
}

#[test]
fn head_and_options_do_not_run_a_body_shaped_handler() {
    let port = free_port();
    let mut cmd = Command::new(fmerge_testkit::function_binary(
        "social-graph-get-followers",
    ));
    cmd.env("port", port.to_string())
        .env("metrics_port", "0")
        .env("REDIS_URL", "redis://127.0.0.1:9");
    let s = Server::start(cmd, port);
    let options = request(port, "OPTIONS", "/", &[], b"").unwrap();
    assert_eq!(options.status, 204, "{options:?}");
    assert!(options.headers["allow"].contains("POST"), "{options:?}");
    // Run, an empty body would be a 400 (and the Redis here is closed).
    let head = request(port, "HEAD", "/", &[], b"").unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    let post = request(port, "POST", "/", &[], b"").unwrap();
    assert_eq!(post.status, 400, "{post:?}");
    assert!(!s.output().contains("panicked"));
}

#[test]
fn metrics_count_per_function_and_caller_and_invoke_passes_ids_and_4xx_on() {
    let callee_port = free_port();
    // Deployed under its package's name, which a caller signs for.
    let gateway = Gateway::start(&[("fmerge-runtime", callee_port)]);
    let callee_metrics = free_port();
    let mut cmd = Command::new(dataplane::example_binary("fmerge-runtime", "probe"));
    cmd.env("port", callee_port.to_string())
        .env("metrics_port", callee_metrics.to_string())
        .env("listen_address", "127.0.0.1")
        .env(fmerge_contract::CALLER_KEY_VAR, CALLER_KEY);
    let callee = Server::start(cmd, callee_port);
    let caller_metrics = free_port().to_string();
    let caller = keyed_probe(&[
        ("GATEWAY_URL", &gateway.url()),
        ("metrics_port", &caller_metrics),
    ]);
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let r = request(
        caller.server_port(),
        "GET",
        "/invoke?target=fmerge-runtime&path=/echo%3Fstatus=409",
        &[("X-Call-Id", "abc-123"), ("traceparent", traceparent)],
        b"",
    );
    let r = r.unwrap();
    // The callee's 409 and its own header reach the client as they were.
    assert_eq!(r.status, 409, "{r:?}\n{}", caller.output());
    assert_eq!(r.headers.get("x-echo").map(String::as_str), Some("1"));
    let echo: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(echo["headers"]["x-call-id"], "abc-123");
    assert_eq!(echo["headers"]["traceparent"], traceparent);
    assert_eq!(echo["headers"]["x-fmerge-caller"], "fmerge-runtime");
    let metrics = request(callee_metrics, "GET", "/metrics", &[], b"").unwrap();
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.body.contains(r#"http_requests_total{function="fmerge-runtime",caller="fmerge-runtime",code="409",method="get"} 1"#),
        "{}",
        metrics.body
    );
    assert!(
        metrics
            .body
            .contains("http_request_duration_seconds_bucket{"),
        "{}",
        metrics.body
    );
    assert!(
        metrics.body.contains("http_requests_in_flight{"),
        "{}",
        metrics.body
    );
    // The handler's part of that serving (what an in-process call keeps),
    // timed on its own thread: no longer than the serving.
    let sum = |prefix: &str| {
        metrics
            .body
            .lines()
            .find_map(|l| l.strip_prefix(prefix)?.trim().parse::<f64>().ok())
    };
    let handler = r#"fmerge_handler_duration_seconds_sum{function="fmerge-runtime",caller="fmerge-runtime"} "#;
    let serving = r#"http_request_duration_seconds_sum{function="fmerge-runtime",caller="fmerge-runtime",code="409",method="get"} "#;
    let (handler, serving) = (sum(handler), sum(serving));
    assert!(
        handler.zip(serving).is_some_and(|(h, s)| h > 0.0 && h <= s),
        "{handler:?} {serving:?}\n{}",
        metrics.body
    );
    assert!(
        metrics.body.contains(r#"fmerge_handler_duration_seconds_count{function="fmerge-runtime",caller="fmerge-runtime"} 1"#),
        "{}",
        metrics.body
    );
    // The caller's side: what the hop cost it, over the gateway.
    let port: u16 = caller_metrics.parse().unwrap();
    let mine = request(port, "GET", "/metrics", &[], b"").unwrap().body;
    assert!(
        mine.contains(r#"fmerge_invoke_duration_seconds_count{caller="fmerge-runtime",callee="fmerge-runtime",transport="gateway"} 1"#),
        "{mine}"
    );
    drop(callee);
}

/// The value of the sample `name` (no labels) in an exposition text.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn metrics_export_the_process_resident_memory_and_cpu_seconds() {
    let ProbeServer { server: s, metrics } = dataplane::probe(&[]);
    for _ in 0..200 {
        let r = request(s.server_port(), "POST", "/echo", &[], &[b'x'; 4096]).unwrap();
        assert_eq!(r.status, 200, "{r:?}");
    }
    let text = request(metrics, "GET", "/metrics", &[], b"").unwrap().body;
    // After the scrape: the kernel's own figures for the same process.
    let ResidentKib { peak: peak_kib, .. } = rss_kib(s.pid());
    let cpu_after = cpu_ticks(s.pid()) as f64 / ticks_per_second() as f64;
    assert!(
        text.contains("# TYPE process_resident_memory_bytes gauge\n"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE process_cpu_seconds_total counter\n"),
        "{text}"
    );
    let rss = sample(&text, "process_resident_memory_bytes").expect("the RSS sample");
    let cpu = sample(&text, "process_cpu_seconds_total").expect("the CPU sample");
    assert!(rss > 0.0, "RSS {rss}");
    assert!(
        rss <= 2.0 * (peak_kib * 1024) as f64,
        "RSS {rss} bytes against a peak of {peak_kib} KiB"
    );
    assert!(cpu >= 0.0, "CPU {cpu}");
    assert!(
        cpu <= cpu_after + 0.001,
        "CPU {cpu} s, more than the {cpu_after} s /proc gave after"
    );
}

#[test]
fn an_idle_process_names_its_function_beside_its_usage() {
    // No request yet: the scrape must still say whose figures these are.
    let ProbeServer {
        server: _s,
        metrics,
    } = dataplane::probe(&[]);
    let text = request(metrics, "GET", "/metrics", &[], b"").unwrap().body;
    assert!(
        text.contains(r#"http_requests_in_flight{function="fmerge-runtime"} 0"#),
        "{text}"
    );
    assert!(
        sample(&text, "process_resident_memory_bytes").is_some(),
        "{text}"
    );
}

#[test]
fn a_bad_invoke_setting_stops_the_start_naming_the_variable() {
    for (key, value) in [
        ("FMERGE_INVOKE_TIMEOUT_SECS", "ten"),
        ("FMERGE_INVOKE_MAX_REPLY_BYTES", "8M"),
    ] {
        let mut child = Command::new(dataplane::example_binary("fmerge-runtime", "probe"))
            .env(key, value)
            .env("port", free_port().to_string())
            .env("metrics_port", "0")
            .env("listen_address", "127.0.0.1")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = exit_within(&mut child, Duration::from_secs(10));
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(2),
            "{key}={value}: started anyway: {stderr}"
        );
        assert!(
            stderr.contains(&format!("{key}=\"{value}\"")),
            "{key}: {stderr}"
        );
        assert!(stderr.contains("\nfix: "), "{key}: {stderr}");
    }
}
