//! A member in a handler-library template whose `handle` fmerge exports, in
//! a program linked as fmerge links a merged binary: a call to it through
//! the gateway's address is answered by its `handle`, acting for it (its
//! own `GREETING`), with the target its server would have had and
//! of-watchdog's reply around it, started on the client's own thread
//! (`.now`) where it can be, else by a stand-in thread (`handle`, with its
//! limit); a panic is of-watchdog's empty 500, a call past its limit the
//! empty 504 (whether `handle` replies later on another thread or a
//! stand-in waits for it); its server never starts, and nothing reaches
//! the gateway.

mod common;

const PROGRAM: &str = r#"
use std::io::{Read, Write};
use std::net::TcpStream;

/// The reply on a kept connection, framed by its Content-Length, its
/// lines joined by `|`.
fn kept_reply(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).to_string();
    let length: usize = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap().trim().parse().unwrap();
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).unwrap();
    format!("{}{}", head.replace("\r\n", "|"), String::from_utf8_lossy(&body))
}

fn main() {
    // A call that hangs fails the test rather than hanging it.
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_secs(60));
        eprintln!("a call hung");
        std::process::abort();
    });
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let authority = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let calls = [
        ("/a/b?x=1", "X-Call: one\r\nX-Timeout: 2s\r\n"),
        ("/wait", ""),
        ("/panic", ""),
        ("/slow", "X-Timeout: 300ms\r\n"),
        ("/not-here/c", "X-Call: two\r\nX-Timeout: 2s\r\n"),
        ("/not-here/panic", ""),
        ("/not-here/slow", ""),
    ];
    for (path, extra) in calls {
        let mut s = TcpStream::connect(authority.as_str()).unwrap();
        write!(s, "POST /function/handled{path} HTTP/1.1\r\nHost: {authority}\r\n{extra}Content-Length: 2\r\nConnection: close\r\n\r\nhi").unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        println!("{}", reply.replace("\r\n", "|"));
    }
    // Two calls on one kept connection, the second after a reply that came
    // from another thread: the connection goes on.
    let mut s = TcpStream::connect(authority.as_str()).unwrap();
    for path in ["/wait", "/kept"] {
        write!(s, "POST /function/handled{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 2\r\n\r\nhi").unwrap();
        println!("{}", kept_reply(&mut s));
    }
    // A kept connection a stand-in thread answered once (a `/not-here`
    // call is not started on the client's thread) is held again after it:
    // its next call is.
    let mut s = TcpStream::connect(authority.as_str()).unwrap();
    for path in ["/not-here/d", "/kept"] {
        write!(s, "POST /function/handled{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 2\r\n\r\nhi").unwrap();
        println!("{}", kept_reply(&mut s));
    }
    // A kept connection closed while held, its number taken by the
    // stand-in's end of the next connection's pair (the next client's
    // socket takes the placeholder's lower one): a reply written into that
    // end from another thread reaches its client (once, the thread writing
    // it locked the held connections' list a second time, and every later
    // call hung).
    let placeholder = std::fs::File::open("/dev/null").unwrap();
    let mut kept = TcpStream::connect(authority.as_str()).unwrap();
    write!(kept, "POST /function/handled/kept HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 2\r\n\r\nhi").unwrap();
    kept_reply(&mut kept);
    drop(placeholder);
    drop(kept);
    // Kept alive too: its reply is written with the connection held again.
    let mut s = TcpStream::connect(authority.as_str()).unwrap();
    write!(s, "POST /function/handled/soon HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 2\r\n\r\nhi").unwrap();
    println!("{}", kept_reply(&mut s));
    // A reply that comes after its limit's 504 (1 s against 50 ms): the 504
    // alone is said, once; the program lives on past the late reply.
    let mut s = TcpStream::connect(authority.as_str()).unwrap();
    write!(s, "POST /function/handled/late HTTP/1.1\r\nHost: {authority}\r\nX-Timeout: 50ms\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    println!("{}", reply.replace("\r\n", "|"));
    std::thread::sleep(std::time::Duration::from_millis(1500));
}
"#;

#[test]
fn calls_are_answered_by_the_members_handle_without_its_server() {
    let (stdout, stderr, seen) = common::run_once(
        "handles",
        PROGRAM,
        &[
            ("HANDLED__GREETING", "its-own"),
            ("HANDLED__exec_timeout", "5s"),
            ("GREETING", "the-callers"),
        ],
    );
    let replies: Vec<&str> = stdout.lines().collect();
    assert_eq!(replies.len(), 13, "{stdout}");
    // The handle's reply, with of-watchdog's duration and a length; the
    // member's own environment; started on the client's thread (`main`).
    let ok = |reply: &str, body: &str| {
        assert!(reply.starts_with("HTTP/1.1 200 OK|"), "{reply}");
        for part in [
            "|x-handled: yes|",
            "|content-type: text/plain|",
            "|X-Duration-Seconds: ",
        ] {
            assert!(
                reply
                    .to_ascii_lowercase()
                    .contains(&part.to_ascii_lowercase()),
                "{part}: {reply}"
            );
        }
        assert!(
            reply.contains(&format!("|Content-Length: {}|Date: ", body.len())),
            "{reply}"
        );
        assert!(reply.contains(" GMT|X-Duration-Seconds: "), "{reply}");
        assert!(reply.ends_with(&format!("||{body}")), "{reply}");
    };
    ok(
        replies[0],
        "POST /a/b?x=1 hi via=now call=one greeting=its-own thread=main",
    );
    // Replied from another thread, after the client's own thread started it
    // (a member slow to start three times in a row would be left to the
    // stand-in: not these).
    ok(
        replies[1],
        "POST /wait hi via=now call=- greeting=its-own thread=main",
    );
    // Not taken on the client's thread: the stand-in's call, with the
    // shorter X-Timeout as its limit.
    ok(
        replies[4],
        "POST /not-here/c hi limit=2000 call=two greeting=its-own",
    );
    ok(
        replies[7],
        "POST /wait hi via=now call=- greeting=its-own thread=main",
    );
    ok(
        replies[8],
        "POST /kept hi via=now call=- greeting=its-own thread=main",
    );
    ok(
        replies[9],
        "POST /not-here/d hi limit=5000 call=- greeting=its-own",
    );
    ok(
        replies[10],
        "POST /kept hi via=now call=- greeting=its-own thread=main",
    );
    ok(
        replies[11],
        "POST /soon hi via=now call=- greeting=its-own thread=main",
    );
    for (reply, status) in [
        (replies[2], "500 Internal Server Error"),
        (replies[3], "504 Gateway Timeout"),
        (replies[5], "500 Internal Server Error"),
        (replies[6], "504 Gateway Timeout"),
        (replies[12], "504 Gateway Timeout"),
    ] {
        assert!(reply.starts_with(&format!("HTTP/1.1 {status}|")), "{reply}");
        assert!(
            reply.contains("|X-Openfaas-Internal: of-watchdog|"),
            "{reply}"
        );
        assert!(reply.ends_with("|Content-Length: 0||"), "{reply}");
    }
    // The 504 of a reply that comes later is sent at the limit, not when
    // the reply comes (five seconds on).
    let took: f64 = replies[3]
        .split('|')
        .find_map(|h| h.strip_prefix("X-Duration-Seconds: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.3..4.0).contains(&took), "{}", replies[3]);
    for limit in ["300ms", "5s", "50ms"] {
        let said = format!("handled killed due to exec_timeout: {limit}\n");
        assert_eq!(stderr.matches(&said).count(), 1, "{said}{stderr}");
    }
    assert!(!stderr.contains("handled's server ran"), "{stderr}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "a call reached the gateway"
    );
}
