//! A member in a handler-library template whose `handle` fmerge exports, in
//! a program linked as fmerge links a merged binary: a call to it through
//! the gateway's address is answered by its `handle`, acting for it (its
//! own `GREETING`), with the target its server would have had, its limit,
//! and of-watchdog's reply around it; a panic is of-watchdog's empty 500,
//! a call past its limit the empty 504; its server never starts, and
//! nothing reaches the gateway.

mod common;

const PROGRAM: &str = r#"
use std::io::{Read, Write};
use std::net::TcpStream;

fn main() {
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let authority = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    for (path, extra) in [
        ("/a/b?x=1", "X-Call: one\r\nX-Timeout: 2s\r\n"),
        ("/panic", ""),
        ("/slow", ""),
    ] {
        let mut s = TcpStream::connect(authority.as_str()).unwrap();
        write!(s, "POST /function/handled{path} HTTP/1.1\r\nHost: {authority}\r\n{extra}Content-Length: 2\r\nConnection: close\r\n\r\nhi").unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        println!("{}", reply.replace("\r\n", "|"));
    }
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
    assert_eq!(replies.len(), 3, "{stdout}");
    // The handle's reply, with of-watchdog's duration and a length; the
    // shorter X-Timeout as its limit; the member's own environment.
    let ok = replies[0];
    assert!(ok.starts_with("HTTP/1.1 200 OK|"), "{ok}");
    for part in [
        "|x-handled: yes|",
        "|content-type: text/plain|",
        "|X-Duration-Seconds: ",
    ] {
        assert!(
            ok.to_ascii_lowercase().contains(&part.to_ascii_lowercase()),
            "{part}: {ok}"
        );
    }
    let body = "POST /a/b?x=1 hi limit=2000 call=one greeting=its-own";
    assert!(
        ok.contains(&format!("|Content-Length: {}|Date: ", body.len())),
        "{ok}"
    );
    assert!(ok.contains(" GMT|X-Duration-Seconds: "), "{ok}");
    assert!(ok.ends_with(&format!("||{body}")), "{ok}");
    for (reply, status) in [
        (replies[1], "500 Internal Server Error"),
        (replies[2], "504 Gateway Timeout"),
    ] {
        assert!(reply.starts_with(&format!("HTTP/1.1 {status}|")), "{reply}");
        assert!(
            reply.contains("|X-Openfaas-Internal: of-watchdog|"),
            "{reply}"
        );
        assert!(reply.ends_with("|Content-Length: 0||"), "{reply}");
    }
    assert!(
        stderr.contains("handled killed due to exec_timeout: 5s"),
        "{stderr}"
    );
    assert!(!stderr.contains("handled's server ran"), "{stderr}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "a call reached the gateway"
    );
}
