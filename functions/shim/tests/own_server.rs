//! A member that serves HTTP itself, in a program linked as fmerge links a
//! merged binary: its `main` starts with the program, on a thread acting
//! for it (its own `GREETING`), its `bind` of `0.0.0.0:3000` moved to a
//! free port of 127.0.0.1, and calls to it through the gateway's address,
//! on new and kept connections, reach it there with the path it would
//! have had behind the gateway.

mod common;

const PROGRAM: &str = r#"
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

/// One request on `s`, its reply's body (Content-Length framed).
fn call(r: &mut BufReader<TcpStream>, s: &mut TcpStream, authority: &str, path: &str, close: bool) -> String {
    let conn = if close { "close" } else { "keep-alive" };
    write!(s, "POST /function/served{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 2\r\nConnection: {conn}\r\n\r\nhi").unwrap();
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    String::from_utf8(head_and_body(r)).unwrap()
}

fn main() {
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let authority = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let mut s = TcpStream::connect(authority.as_str()).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    println!("{}", call(&mut r, &mut s, &authority, "/a?x=1", false));
    println!("{}", call(&mut r, &mut s, &authority, "", true));
    let mut s = TcpStream::connect(authority.as_str()).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    println!("{}", call(&mut r, &mut s, &authority, "/b", true));
}
"#;

#[test]
fn calls_reach_the_members_own_server_on_a_loopback_port_of_its_own() {
    let (stdout, _, seen) = common::run_once(
        "own-server",
        PROGRAM,
        &[("SERVED__GREETING", "its-own"), ("GREETING", "the-callers")],
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let paths = ["/a?x=1", "/", "/b"];
    for (line, path) in lines.iter().zip(paths) {
        let rest = line
            .strip_prefix(&format!("served {path} at 127.0.0.1:"))
            .unwrap_or_else(|| panic!("{line}: not served at 127.0.0.1"));
        let (port, greeting) = rest.split_once(' ').unwrap();
        assert_ne!(port, "3000", "the server kept the port it asked for");
        assert_eq!(greeting, "greeting=its-own", "{line}");
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "a call to the member reached the gateway"
    );
}
