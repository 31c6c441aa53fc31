//! Not a test but a measurement, run by hand for docs/PERFORMANCE.md
//! (`cargo test --release --workspace --test percall -- --ignored
//! --nocapture`): a program with the shim linked in, as a merged binary
//! has it, calls a member through the gateway's address N times, one call
//! at a time, each on a new connection as a client such as libcurl makes
//! it, and prints the mean time per call: to `inner`, run in the program's
//! own process (a thread of the stand-in), to `echo`, run in a process
//! forked by the zygote, and to `served`, a member that serves HTTP itself
//! in the program's process (its server reached over loopback), on new
//! connections and on one kept connection (`served-kept`, as a pooled
//! client such as reqwest's calls), and to `handled`, a handler library
//! whose `handle` is started on the client's own thread (`handled-kept`:
//! on one kept connection; the test's entry replies at once, as an async
//! `handle` ready at its first poll does). The members do almost nothing,
//! so the figures are the paths' own cost. It fails only if a call is not
//! answered 200.

mod common;

use std::process::Command;

const PROGRAM: &str = r#"
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

fn main() {
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let n: usize = std::env::var("CALLS").unwrap().parse().unwrap();
    let target = std::env::var("TARGET").unwrap();
    let started = std::time::Instant::now();
    if let Some(target) = target.strip_suffix("-kept") {
        // One connection, kept: each reply read by its Content-Length.
        let mut s = TcpStream::connect(authority).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        for _ in 0..n {
            let req = format!("POST /function/{target} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 5\r\n\r\nplain");
            s.write_all(req.as_bytes()).unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert!(line.starts_with("HTTP/1.1 200"), "{line}");
            head_and_body(&mut r);
        }
        let per_call = started.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("{target}-kept {per_call:.1}");
        return;
    }
    for _ in 0..n {
        let mut s = TcpStream::connect(authority).unwrap();
        // In one write, as libcurl sends a small request.
        let req = format!("POST /function/{target} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nplain");
        s.write_all(req.as_bytes()).unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).unwrap();
        assert!(reply.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&reply));
    }
    let per_call = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("{target} {per_call:.1}");
}
"#;

#[test]
#[ignore = "a measurement for docs/PERFORMANCE.md, run by hand"]
fn time_per_call_in_process_forked_and_served() {
    let dir = common::scratch("percall");
    let prog = common::build(&dir, PROGRAM, &[]);
    let (addr, _seen) = common::gateway();
    for round in 1..=3 {
        for (target, calls) in [
            ("inner", "3000"),
            ("echo", "1000"),
            ("served", "3000"),
            ("served-kept", "3000"),
            ("handled-kept", "3000"),
        ] {
            let out = fmerge_testkit::run_ok(
                Command::new(&prog)
                    .env("TEST_GATEWAY_URL", common::gateway_url(addr))
                    .env("CALLS", calls)
                    .env("TARGET", target),
            );
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            println!(
                "round {round}: {} µs per call ({calls} calls); load {}",
                String::from_utf8_lossy(&out.stdout).trim(),
                load.split(' ').next().unwrap_or("?")
            );
        }
    }
}
