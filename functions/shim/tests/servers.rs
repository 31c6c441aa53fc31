//! A call to a member that serves HTTP itself, forwarded to its server over
//! real loopback sockets as the gateway and its of-watchdog would forward
//! it (`fmerge_shim::servers`): `/function/<name>` off the path, the query
//! kept, of-watchdog's `X-Duration-Seconds` added, its empty 500 for a
//! server that closes without a reply and 504 at `exec_timeout` or a
//! shorter `X-Timeout`, and a request never sent twice.

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fmerge_shim::relay::Upstream;
use fmerge_shim::{Member, Mode, http, servers};

unsafe extern "C" fn no_main(_: i32, _: *const *const u8) -> i32 {
    0
}

/// A member's server: answers `/echo…` with its request line and body,
/// closes on `/close`, answers `/slow` after 2 s; every request line it
/// read, in `seen`.
fn member_server(name: &'static str) -> (Member, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let mut r = BufReader::new(stream.try_clone().unwrap());
                while let Ok(Some(req)) = http::read_request(&mut r, &mut std::io::sink()) {
                    let line = format!("{} {}", req.method, req.target);
                    s.lock().unwrap().push(line.clone());
                    if req.target.starts_with("/close") {
                        return;
                    }
                    if req.target.starts_with("/slow") {
                        std::thread::sleep(Duration::from_secs(2));
                    }
                    let body = format!("{line} {}", String::from_utf8_lossy(&req.body));
                    let reply = format!(
                        "HTTP/1.1 201 Created\r\nX-Own: yes\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (bound(name, port), seen)
}

/// Member `name`, serving HTTP itself on `port`.
fn bound(name: &'static str, port: u16) -> Member {
    servers::bound(name, 3000, port);
    Member {
        name,
        main: no_main,
        mode: Mode::Http,
        run: None,
        handle: None,
    }
}

/// Whether `head` is of-watchdog's own reply, not the member's.
fn assert_of_watchdogs(head: &http::ResponseHead) {
    assert_eq!(
        http::header(&head.headers, "X-Openfaas-Internal"),
        Some("of-watchdog")
    );
}

/// Forwards `request` (a method and a path after `/function/<name>`)
/// with `headers` (each line ended by CRLF) and `body`, as the gateway
/// sends it, on `slot`; the reply the client got, parsed.
fn call(
    slot: &mut Option<Upstream>,
    member: &Member,
    request: &str,
    headers: &str,
    body: &str,
) -> (http::ResponseHead, Vec<u8>) {
    let (method, path) = request.split_once(' ').unwrap();
    let length = match body.len() {
        0 => String::new(),
        n => format!("Content-Length: {n}\r\n"),
    };
    let raw = format!(
        "{method} /function/{}{path} HTTP/1.1\r\nHost: gw\r\n{headers}{length}\r\n{body}",
        member.name
    );
    let mut forwarded = || -> Result<_, std::io::Error> {
        let req = http::read_request(&mut raw.as_bytes(), &mut std::io::sink())?.unwrap();
        let mut client = Vec::new();
        servers::forward(slot, member, &req, &mut client)?;
        let mut r = &client[..];
        let head = http::read_response_head(&mut r)?.unwrap();
        let framing = http::response_framing(&req.method, &head)?;
        let mut body = Vec::new();
        http::read_body(&mut r, framing, &mut std::io::sink(), Some(&mut body))?;
        Ok((head, body))
    };
    forwarded().unwrap_or_else(|e| panic!("{raw:?}: {e}"))
}

#[test]
fn a_call_reaches_the_members_server_as_the_gateway_would_send_it() {
    let (member, seen) = member_server("fwd-echo");
    let mut slot = None;
    let (head, body) = call(&mut slot, &member, "POST /echo/a?x=1", "", "hi");
    assert_eq!(head.status, 201);
    assert_eq!(http::header(&head.headers, "X-Own"), Some("yes"));
    assert!(http::header(&head.headers, "X-Duration-Seconds").is_some());
    assert_eq!(String::from_utf8_lossy(&body), "POST /echo/a?x=1 hi");
    // The bare function path is the server's `/`.
    let (_, body) = call(&mut slot, &member, "GET ", "", "");
    assert_eq!(String::from_utf8_lossy(&body), "GET / ");
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["POST /echo/a?x=1", "GET /"]
    );
}

#[test]
fn a_server_that_closes_without_a_reply_is_an_empty_500_and_is_not_asked_twice() {
    let (member, seen) = member_server("fwd-close");
    let mut slot = None;
    // A kept connection first, so that the failing call reuses it.
    call(&mut slot, &member, "GET /echo", "", "");
    let (head, body) = call(&mut slot, &member, "POST /close", "", "x");
    assert_eq!(head.status, 500);
    assert!(body.is_empty());
    assert_of_watchdogs(&head);
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["GET /echo", "POST /close"],
        "the POST was sent once"
    );
}

#[test]
fn exec_timeout_and_a_shorter_x_timeout_answer_an_empty_504() {
    let (member, _) = member_server("fwd-slow");
    // SAFETY: set before any thread of this test reads it; no other test
    // reads this member's settings.
    unsafe { std::env::set_var("FWD_SLOW__exec_timeout", "300ms") };
    let (head, body) = call(&mut None, &member, "GET /slow", "", "");
    assert_eq!((head.status, body.len()), (504, 0));
    assert_of_watchdogs(&head);
    let (member, _) = member_server("fwd-asked");
    unsafe { std::env::set_var("FWD_ASKED__exec_timeout", "60s") };
    // A longer X-Timeout than exec_timeout is not taken, as of-watchdog's
    // getTimeout has it: with 60 s, the slow answer comes.
    for (timeout, status) in [("200ms", 504), ("90s", 201)] {
        let timeout_header = format!("X-Timeout: {timeout}\r\n");
        let (head, _) = call(&mut None, &member, "GET /slow", &timeout_header, "");
        assert_eq!(head.status, status, "X-Timeout: {timeout}");
    }
}

/// A client that hands each write to `pieces` as it is flushed.
struct Pieces(std::sync::mpsc::Sender<Vec<u8>>, Vec<u8>);

impl Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.1.is_empty() {
            let _ = self.0.send(std::mem::take(&mut self.1));
        }
        Ok(())
    }
}

/// A streamed reply stays streamed: the member's server sends its second
/// piece only once the client has the first, so a forward that held the
/// reply back until its end would never finish.
#[test]
fn a_streamed_reply_reaches_the_client_piece_by_piece() {
    streamed(|port, req, client| {
        let member = bound("fwd-stream", port);
        servers::forward(&mut None, &member, req, client).map(|_| ())
    });
}

/// The same through the relay to the real gateway (a call to a function
/// that is not a member): it reaches the client as the gateway sends it.
#[test]
fn a_streamed_reply_through_the_gateway_reaches_the_client_piece_by_piece() {
    streamed(|port, req, client| {
        let gateway = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        fmerge_shim::relay::forward(&mut None, gateway, req, client).map(|_| ())
    });
}

/// Runs `forward` (given the upstream's port, the request and the client)
/// against an upstream that sends its reply's second piece only once the
/// client has the first.
fn streamed(
    forward: impl FnOnce(u16, &http::Request, &mut Pieces) -> std::io::Result<()> + Send + 'static,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (got_first, first_seen) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut r = BufReader::new(stream.try_clone().unwrap());
        http::read_request(&mut r, &mut std::io::sink()).unwrap();
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
            .unwrap();
        // Waits for the client, within a bound so that a failing forward
        // ends the test instead of hanging it.
        let seen = first_seen.recv_timeout(Duration::from_secs(30)).is_ok();
        let last = if seen { "seen" } else { "none" };
        let _ = write!(stream, "4\r\n{last}\r\n0\r\n\r\n");
    });
    let (tx, pieces) = std::sync::mpsc::channel();
    let forwarding = std::thread::spawn(move || {
        let raw = "GET /function/fwd-stream HTTP/1.1\r\nHost: gw\r\n\r\n";
        let req = http::read_request(&mut raw.as_bytes(), &mut std::io::sink())
            .unwrap()
            .unwrap();
        let mut client = Pieces(tx, Vec::new());
        forward(port, &req, &mut client)
    });
    let mut before_second = Vec::new();
    while !String::from_utf8_lossy(&before_second).contains("first") {
        let piece = pieces
            .recv_timeout(Duration::from_secs(30))
            .expect("the first piece reaches the client before the reply ends");
        before_second.extend(piece);
    }
    let before = String::from_utf8_lossy(&before_second);
    assert!(
        !before.contains("seen") && !before.contains("none"),
        "the first piece came alone, before the server sent the second: {before}"
    );
    got_first.send(()).unwrap();
    forwarding.join().unwrap().unwrap();
    let rest: Vec<u8> = pieces.iter().flatten().collect();
    assert!(
        String::from_utf8_lossy(&rest).contains("4\r\nseen\r\n0\r\n\r\n"),
        "{}",
        String::from_utf8_lossy(&rest)
    );
}
