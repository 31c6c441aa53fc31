//! End to end with std's `TcpStream` as the HTTP client: the call to the
//! member `echo` must be answered by a process running the program's
//! `echo_main` without reaching the gateway; any other call must reach the
//! real gateway, a listener of this test, and come back byte for byte.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::UPSTREAM_REPLY;

const PROGRAM: &str = r#"
use std::io::{Read, Write};
use std::net::TcpStream;

fn main() {
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut out = std::io::stdout().lock();
    for path in ["/function/echo/sub", "/function/other"] {
        let mut s = TcpStream::connect(authority).unwrap();
        write!(s, "POST {path} HTTP/1.1\r\nHost: {authority}\r\nx-test: yes\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello").unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).unwrap();
        writeln!(out, "{}", reply.len()).unwrap();
        out.write_all(&reply).unwrap();
    }
}
"#;

#[test]
fn calls_to_members_stay_in_the_binary_and_the_rest_reach_the_gateway() {
    let dir = common::scratch("e2e");
    let prog = common::build(&dir, PROGRAM, &[]);
    std::fs::write(common::REWRITTEN_SECRET.0, common::REWRITTEN_SECRET.1).unwrap();
    let (addr, seen) = common::gateway();

    // An IP literal (connect alone) and a name (getaddrinfo, then connect).
    for host in ["127.0.0.1", "localhost"] {
        seen.lock().unwrap().clear();
        let url = format!("http://{host}:{}", addr.port());
        let out = fmerge_testkit::run_ok(
            Command::new(&prog)
                .env("TEST_GATEWAY_URL", &url)
                .env("ECHO__GREETING", "hi")
                .env("Http_Caller", "the caller's own request"),
        );
        let replies = common::replies(&out.stdout);
        common::assert_echo_reply(
            &replies[0],
            b"HELLO|/sub|yes|hi||its-own",
            "Connection: close\r\n",
            &url,
        );
        assert_eq!(replies[1], UPSTREAM_REPLY, "{url}");
        let request = format!(
            "POST /function/other HTTP/1.1\r\nHost: {host}:{}\r\nx-test: yes\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            addr.port()
        );
        let only_other = vec![request.into_bytes()];
        assert_eq!(
            *seen.lock().unwrap(),
            only_other,
            "{url}: only the non-member call reaches the gateway"
        );
    }

    // The constructor alone: run as a member, and refuse an unknown one.
    let mut child = Command::new(&prog)
        .env("FMERGE_RUN_MEMBER", "echo")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"direct").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.stdout, b"DIRECT|||||its-own");
    let out = Command::new(&prog)
        .env("FMERGE_RUN_MEMBER", "nope")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.starts_with("error: ")
            && stderr.contains("\nfix: ")
            && stderr.contains("prog, echo"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
