//! A member fmerge gave an entry (`run` in the table) runs in the caller's
//! process, on a thread, with what its own process would have given it: the
//! call's body as stdin, its stdout as the reply, its own settings and
//! rewrites (on threads it starts too), its exit code and panics mapped as
//! of-watchdog's serializing runner maps a process's. The caller's own
//! stdin and stdout are untouched by it: a line the caller had not read
//! yet, and output it had not flushed, stay the caller's. A member whose
//! `exec_timeout` could cut it off before the caller's process ends runs in
//! a process of its own instead. The call's connection is a Unix socket
//! pair to the stand-in that the client cannot tell from its TCP
//! connection to the gateway.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

/// Reads one line of its stdin (std buffers the rest), leaves output
/// unflushed, calls `inner` once per entry of `BODIES` (`|` between), then
/// prints what is left of its stdin: `first` and `rest` as records.
const PROGRAM: &str = r#"
use std::io::{Read, Write};
use std::net::TcpStream;

fn record(bytes: &[u8]) {
    let mut out = std::io::stdout();
    writeln!(out, "{}", bytes.len()).unwrap();
    out.write_all(bytes).unwrap();
}

fn main() {
    let mut first = String::new();
    std::io::stdin().read_line(&mut first).unwrap();
    print!("caller-before;");
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut replies = Vec::new();
    let mut socket = String::new();
    for body in std::env::var("BODIES").unwrap().split('|') {
        let mut s = TcpStream::connect(authority).unwrap();
        if socket.is_empty() {
            // What a TCP client sees of its connection, and what it is.
            s.set_nodelay(true).unwrap();
            let (mut domain, mut len) = (0i32, 4u32);
            unsafe extern "C" {
                fn getsockopt(fd: i32, level: i32, name: i32, value: *mut i32, len: *mut u32) -> i32;
            }
            use std::os::fd::AsRawFd;
            // SOL_SOCKET, SO_DOMAIN
            assert_eq!(unsafe { getsockopt(s.as_raw_fd(), 1, 39, &mut domain, &mut len) }, 0);
            socket = format!("peer={} nodelay={} domain={domain}", s.peer_addr().unwrap(), s.nodelay().unwrap());
        }
        write!(s, "POST /function/inner HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).unwrap();
        replies.push(reply);
    }
    let mut rest = String::new();
    std::io::stdin().read_to_string(&mut rest).unwrap();
    println!();
    record(std::process::id().to_string().as_bytes());
    record(first.as_bytes());
    record(rest.as_bytes());
    record(socket.as_bytes());
    for r in replies {
        record(&r);
    }
    // Caught, as a panic of a process that goes on: std notes only a
    // process's first.
    let _ = std::panic::catch_unwind(|| panic!("the caller panics last"));
}
"#;

const BODIES: [&str; 7] = [
    "plain", "partial", "thread", "secret", "nested", "exit 3", "panic",
];

struct Run {
    /// What the caller printed before its records.
    before: String,
    caller: String,
    first: String,
    rest: String,
    /// What the caller saw of its first connection.
    socket: String,
    gateway: std::net::SocketAddr,
    /// Each reply's status line and body.
    replies: Vec<(String, String)>,
    stderr: String,
}

fn run(prog: &std::path::Path, extra_env: &[(&str, &str)]) -> Run {
    let (addr, _seen) = common::gateway();
    let mut child = Command::new(prog)
        .env_remove("RUST_BACKTRACE")
        .env("TEST_GATEWAY_URL", common::gateway_url(addr))
        .env("BODIES", BODIES.join("|"))
        .env("INNER__GREETING", "its-own")
        .env("CALLER_ONLY", "set by the caller's deployment")
        .envs(extra_env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"line-one\nline-two\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let nl = out.stdout.iter().position(|&b| b == b'\n').unwrap();
    let before = String::from_utf8_lossy(&out.stdout[..nl]).into_owned();
    let mut all = common::replies(&out.stdout[nl + 1..])
        .into_iter()
        .map(|r| String::from_utf8(r).unwrap());
    let (caller, first, rest, socket) = (
        all.next().unwrap(),
        all.next().unwrap(),
        all.next().unwrap(),
        all.next().unwrap(),
    );
    let replies = all.map(|r| common::status_and_body(r.as_bytes())).collect();
    Run {
        before,
        caller,
        first,
        rest,
        socket,
        gateway: addr,
        replies,
        stderr,
    }
}

#[test]
fn a_member_with_an_entry_runs_in_the_callers_process_as_in_its_own() {
    let dir = common::scratch("inproc");
    let prog = common::build(&dir, PROGRAM, &[]);
    std::fs::write(common::REWRITTEN_SECRET.0, common::REWRITTEN_SECRET.1).unwrap();
    let r = run(&prog, &[]);
    let statuses: Vec<&str> = r.replies.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 500 Internal Server Error",
            "HTTP/1.1 500 Internal Server Error",
        ],
        "{:#?}\n{}",
        r.replies,
        r.stderr
    );
    let body = |i: usize| r.replies[i].1.as_str();
    assert_eq!(
        body(0),
        format!(
            "pid={} thread=main greeting=its-own caller_only=- input=plain\n",
            r.caller
        ),
        "in the caller's process, with its own settings and stdin"
    );
    assert!(
        body(1).ends_with("input=partial\nno newline"),
        "{:?}",
        body(1)
    );
    assert!(
        body(2).ends_with("from-thread=its-own\n"),
        "a thread it starts has its settings: {:?}",
        body(2)
    );
    assert!(
        body(3).ends_with(&format!("secret={}", common::REWRITTEN_SECRET.1)),
        "its rewrite: {:?}",
        body(3)
    );
    assert_eq!(
        body(4),
        format!(
            "pid={0} thread=main greeting=its-own caller_only=- input=nested\n\
             outer-partial;nested-reply=pid={0} thread=main greeting=its-own caller_only=- input=plain\n",
            r.caller
        ),
        "a member called by a member run here, its caller's unended line its caller's"
    );
    assert_eq!(body(5), "exit status 3");
    assert_eq!(body(6), "exit status 101");
    assert!(
        r.stderr.contains("thread 'main'") && r.stderr.contains("inner was asked to panic"),
        "{}",
        r.stderr
    );
    // Each had a process of its own, so each panic's message ends with
    // std's note: the member's, and the caller's after it.
    let note = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
    assert_eq!(r.stderr.matches(note).count(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("the caller panics last"), "{}", r.stderr);
    // The caller's own stdio is its own.
    assert_eq!(r.before, "caller-before;");
    assert!(r.replies.iter().all(|(_, b)| !b.contains("caller-before")));
    assert!(!r.before.contains("outer-partial"));
    assert_eq!(
        (r.first.as_str(), r.rest.as_str()),
        ("line-one\n", "line-two\n")
    );
    // The call's connection is a Unix socket pair to the stand-in (no
    // TCP), which the client sees as its TCP connection to the gateway.
    assert_eq!(
        r.socket,
        format!("peer={} nodelay=false domain=1", r.gateway)
    );
}

#[test]
fn a_member_whose_exec_timeout_could_end_it_first_runs_in_its_own_process() {
    let dir = common::scratch("inproc-timeout");
    let prog = common::build(&dir, PROGRAM, &[]);
    // The caller's process may run 30 s (the default); `inner` only 5 s:
    // only a process can be killed at 5 s.
    let r = run(&prog, &[("INNER__exec_timeout", "5s")]);
    let first = &r.replies[0].1;
    assert!(first.starts_with("pid="), "{first:?}\n{}", r.stderr);
    assert!(
        !first.starts_with(&format!("pid={} ", r.caller)),
        "ran in the caller's process: {first:?}"
    );
    assert!(
        first.ends_with("greeting=its-own caller_only=- input=plain\n"),
        "{first:?}"
    );
    // With the caller's own limit as short, this process ends first.
    let r = run(
        &prog,
        &[("INNER__exec_timeout", "5s"), ("exec_timeout", "5s")],
    );
    assert!(
        r.replies[0].1.starts_with(&format!("pid={} ", r.caller)),
        "{:?}",
        r.replies[0].1
    );
}
