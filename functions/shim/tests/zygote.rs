//! Members' processes come from the zygote the binary forks at its start,
//! not from a process start: the member `whoami` reports its parent, which
//! must be that zygote (one for every call, not the caller), and the zygote
//! must end with the caller. A call whose environment is too large for the
//! zygote runs from a process start instead, with the same answer. Either
//! way the member's exit, panic, `exec_timeout` and stderr are what
//! of-watchdog's serializing runner makes of them, and it sees its own
//! settings, not what the caller's deployment sets.

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

/// Calls `whoami` once per line of `BODIES` (`|` for a newline) and prints
/// `len\nreply` for each, after its own pid.
const PROGRAM: &str = r#"
use std::io::{Read, Write};
use std::net::TcpStream;

fn main() {
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut out = std::io::stdout().lock();
    let me = std::process::id().to_string();
    writeln!(out, "{}", me.len()).unwrap();
    out.write_all(me.as_bytes()).unwrap();
    for body in std::env::var("BODIES").unwrap().split('|') {
        let mut s = TcpStream::connect(authority).unwrap();
        write!(s, "POST /function/whoami HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).unwrap();
        writeln!(out, "{}", reply.len()).unwrap();
        out.write_all(&reply).unwrap();
    }
}
"#;

struct Run {
    caller: u32,
    /// Each reply's status line and body.
    replies: Vec<(String, String)>,
    stderr: String,
}

fn run(prog: &std::path::Path, bodies: &[&str], extra_env: &[(&str, String)]) -> Run {
    let (addr, _seen) = common::gateway();
    let out = Command::new(prog)
        .env("TEST_GATEWAY_URL", common::gateway_url(addr))
        .env("BODIES", bodies.join("|"))
        .env("WHOAMI__GREETING", "its-own")
        .env("WHOAMI__exec_timeout", "1s")
        .env("CALLER_ONLY", "set by the caller's deployment")
        .envs(extra_env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let mut all = common::replies(&out.stdout).into_iter();
    let caller = String::from_utf8(all.next().unwrap())
        .unwrap()
        .parse()
        .unwrap();
    let replies = all.map(|r| common::status_and_body(&r)).collect();
    Run {
        caller,
        replies,
        stderr,
    }
}

/// `key=value` pairs of a `whoami` reply.
fn fields(body: &str) -> BTreeMap<String, String> {
    body.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

const BODIES: [&str; 5] = ["one", "exit 3", "panic", "sleep", "two"];

/// What of-watchdog's serializing runner answers to each of [`BODIES`].
fn assert_answers(r: &Run) {
    let statuses: Vec<&str> = r.replies.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 500 Internal Server Error",
            "HTTP/1.1 500 Internal Server Error",
            "HTTP/1.1 500 Internal Server Error",
            "HTTP/1.1 200 OK",
        ],
        "{:#?}\n{}",
        r.replies,
        r.stderr
    );
    let first = fields(&r.replies[0].1);
    assert_eq!(first["greeting"], "its-own");
    assert_eq!(
        first["marker"], "-",
        "the exec marker never reaches a member"
    );
    assert_eq!(first["len"], "3", "the body is the member's stdin");
    assert_eq!(r.replies[1].1, "exit status 3");
    assert_eq!(r.replies[2].1, "exit status 101");
    assert_eq!(r.replies[3].1, "signal: killed", "exec_timeout kills it");
    assert!(
        r.stderr.contains("whoami was asked to panic"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.matches("whoami wrote to stderr").count(), 5);
}

#[test]
fn members_run_in_processes_forked_by_one_zygote_that_ends_with_the_caller() {
    let dir = common::scratch("zygote");
    let prog = common::build(&dir, PROGRAM, &[]);

    let r = run(&prog, &BODIES, &[]);
    assert_answers(&r);
    let parents: Vec<u32> = [0, 4]
        .iter()
        .map(|&i| fields(&r.replies[i].1)["ppid"].parse().unwrap())
        .collect();
    assert_ne!(
        parents[0], r.caller,
        "forked by the zygote, not by the caller"
    );
    assert_eq!(parents[0], parents[1], "one zygote serves every call");
    // The zygote ends with the caller (it already has, or does shortly:
    // the bound is generous, not a measure of speed).
    let zygote = parents[0];
    let until = Instant::now() + Duration::from_secs(30);
    while alive(zygote) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(zygote), "the zygote {zygote} outlived its caller");

    // An environment too large for one message to the zygote: the member
    // runs from a process start, the caller its parent, with the same
    // answers.
    // (Three variables: exec takes none longer than 128 KiB.)
    let large: Vec<(&str, String)> = ["LARGE1", "LARGE2", "LARGE3"]
        .into_iter()
        .map(|k| (k, "x".repeat(60 * 1024)))
        .collect();
    let r = run(&prog, &BODIES, &large);
    assert_answers(&r);
    let parent: u32 = fields(&r.replies[0].1)["ppid"].parse().unwrap();
    assert_eq!(parent, r.caller, "started by the caller itself");
}
