//! A call to a member that runs in this process, made from the process's
//! main thread (or a member's), is run on that very thread, in the middle
//! of the client's `send`; every other call is answered as before by a
//! thread of the stand-in, the client seeing no difference: a request sent
//! in pieces, two requests on one kept-alive connection or in one write,
//! a request that waits for `100 Continue`, a reply larger than the socket
//! takes at once, a call relayed to the gateway, a member that needs a
//! process, a call from a thread the program started, and a request
//! written past the interposed calls (a raw `sendto` system call).

mod common;

use std::process::Command;

/// Makes each kind of call and prints one record per call: the reply's
/// status line, a space, then its body; then the main thread's id.
const PROGRAM: &str = r#"
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

unsafe extern "C" {
    fn gettid() -> i32;
    fn syscall(n: i64, ...) -> i64;
}

fn record(bytes: &[u8]) {
    let mut out = std::io::stdout();
    writeln!(out, "{}", bytes.len()).unwrap();
    out.write_all(bytes).unwrap();
}

fn request(authority: &str, target: &str, body: &str, extra: &str) -> String {
    format!("POST {target} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\n{extra}\r\n{body}", body.len())
}

/// Reads one reply framed by its Content-Length: its status line and body.
fn reply(r: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut len = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    let mut out = status.trim_end().as_bytes().to_vec();
    out.push(b' ');
    out.extend(body);
    out
}

fn call(authority: &str, target: &str, body: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(authority).unwrap();
    s.write_all(request(authority, target, body, "Connection: close\r\n").as_bytes()).unwrap();
    reply(&mut BufReader::new(s))
}

fn main() {
    let url = std::env::var("TEST_GATEWAY_URL").unwrap();
    let a = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let a = a.as_str();
    // 1. From the main thread.
    record(&call(a, "/function/inner", "tid"));
    // 2. From a thread the program started.
    let from = a.to_string();
    let other = std::thread::spawn(move || (call(&from, "/function/inner", "tid"), unsafe { gettid() }));
    let (r, tid) = other.join().unwrap();
    record(&r);
    record(tid.to_string().as_bytes());
    // 3. Sent in two pieces, the body a while after the head.
    let mut s = TcpStream::connect(a).unwrap();
    let whole = request(a, "/function/inner", "tid", "Connection: close\r\n");
    let (head, body) = whole.split_at(whole.len() - 3);
    s.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.write_all(body.as_bytes()).unwrap();
    record(&reply(&mut BufReader::new(s)));
    // 4. Two requests on one kept-alive connection, then two in one write.
    let s = TcpStream::connect(a).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    (&s).write_all(request(a, "/function/inner", "tid", "").as_bytes()).unwrap();
    record(&reply(&mut r));
    (&s).write_all(request(a, "/function/inner", "plain", "").as_bytes()).unwrap();
    record(&reply(&mut r));
    let two = request(a, "/function/inner", "tid", "") + &request(a, "/function/inner", "exit 3", "");
    (&s).write_all(two.as_bytes()).unwrap();
    record(&reply(&mut r));
    record(&reply(&mut r));
    drop(r);
    drop(s);
    // 5. A request that waits for 100 Continue before its body.
    let s = TcpStream::connect(a).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let whole = request(a, "/function/inner", "plain", "Expect: 100-continue\r\nConnection: close\r\n");
    let (head, body) = whole.split_at(whole.len() - 5);
    (&s).write_all(head.as_bytes()).unwrap();
    let mut interim = String::new();
    r.read_line(&mut interim).unwrap();
    let mut blank = String::new();
    r.read_line(&mut blank).unwrap();
    (&s).write_all(body.as_bytes()).unwrap();
    let mut got = interim.trim_end().as_bytes().to_vec();
    got.push(b'|');
    got.extend(reply(&mut r));
    record(&got);
    // 6. A reply larger than the socket takes at once.
    record(&call(a, "/function/inner", "big 4000000"));
    // 7. A function that is not a member, and a member that needs a process.
    record(&call(a, "/function/elsewhere", "plain"));
    record(&call(a, "/function/echo", "plain"));
    // 8. Written by the system call itself, past the interposed functions.
    let s = TcpStream::connect(a).unwrap();
    let req = request(a, "/function/inner", "plain", "Connection: close\r\n");
    use std::os::fd::AsRawFd;
    let sent = unsafe { syscall(44, s.as_raw_fd() as i64, req.as_ptr(), req.len(), 0i64, 0i64, 0i64) };
    assert_eq!(sent as usize, req.len());
    record(&reply(&mut BufReader::new(s)));
    record(unsafe { gettid() }.to_string().as_bytes());
}
"#;

#[test]
fn calls_from_the_main_thread_run_on_it_and_every_other_call_is_answered_as_before() {
    let dir = common::scratch("inline");
    let prog = common::build(&dir, PROGRAM, &[]);
    let (addr, seen) = common::gateway();
    let out = Command::new(&prog)
        .env("TEST_GATEWAY_URL", common::gateway_url(addr))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let records: Vec<String> = common::replies(&out.stdout)
        .into_iter()
        .map(|r| String::from_utf8(r).unwrap())
        .collect();
    let [
        main_call,
        thread_call,
        thread_tid,
        pieces,
        kept_1,
        kept_2,
        piped_1,
        piped_2,
        expect,
        big,
        relayed,
        process,
        raw,
        main_tid,
    ] = &records[..]
    else {
        panic!("{records:?}\n{stderr}");
    };
    let ok = "HTTP/1.1 200 OK ";
    let tid_of = |reply: &str| {
        reply
            .rsplit("tid=")
            .next()
            .and_then(|t| t.parse::<i32>().ok())
            .unwrap_or_else(|| panic!("no tid in {reply:?}"))
    };
    let main_tid: i32 = main_tid.parse().unwrap();
    // The main thread's calls ran on it: the same thread id.
    for reply in [main_call, pieces, kept_1, piped_1] {
        assert!(reply.starts_with(ok), "{reply:?}");
        assert_eq!(tid_of(reply), main_tid, "{reply:?}");
    }
    // The other thread's call ran on a thread of the stand-in.
    let thread_tid: i32 = thread_tid.parse().unwrap();
    assert!(thread_call.starts_with(ok), "{thread_call:?}");
    assert_ne!(tid_of(thread_call), thread_tid);
    assert_ne!(tid_of(thread_call), main_tid);
    // Each of the others answered as the stand-in answers it.
    assert!(
        kept_2.starts_with(ok) && kept_2.ends_with("input=plain\n"),
        "{kept_2:?}"
    );
    assert!(
        piped_2.starts_with("HTTP/1.1 500 Internal Server Error exit status 3"),
        "{piped_2:?}"
    );
    assert!(
        expect.starts_with("HTTP/1.1 100 Continue|HTTP/1.1 200 OK ")
            && expect.ends_with("input=plain\n"),
        "{expect:?}"
    );
    assert!(big.starts_with(ok), "{}", &big[..100.min(big.len())]);
    assert!(
        big.ends_with(&format!("input=big 4000000\n{}", "x".repeat(4_000_000))),
        "a reply of {} bytes",
        big.len()
    );
    assert_eq!(
        relayed,
        &format!(
            "HTTP/1.1 201 Created {}",
            String::from_utf8_lossy(&common::UPSTREAM_REPLY[common::UPSTREAM_REPLY.len() - 8..])
        )
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "only the relayed call reached the gateway"
    );
    assert!(
        process.starts_with(ok) && process.contains("PLAIN|/|"),
        "{process:?}"
    );
    assert!(
        raw.starts_with(ok) && raw.ends_with("input=plain\n"),
        "{raw:?}"
    );
}
