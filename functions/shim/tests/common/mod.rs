//! What the end-to-end tests share: the shim compiled as fmerge compiles it
//! (a bare `rustc --emit obj --cfg fmerge_merged` against a generated table)
//! and linked into a small program, and a gateway listener on loopback.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use fmerge_shim::http;

/// The table fmerge would write for the test program: the program itself
/// (`main`), the member `echo` (`echo_main`), the member `whoami`
/// (`whoami_main`, in serializing mode), the member `inner` (serializing),
/// which fmerge would let run in the caller's process (`inner_run`), the
/// member `served`, which serves HTTP itself (`served_run`), and the member
/// `handled`, a handler library whose `handle` entry fmerge exports
/// (`handled_handle`, its server `handled_run` never to run).
const TABLE: &str = r#"//! The members of the test program.
use crate::rewrite::Rewrite;
use crate::{Member, Mode};
pub(crate) static CALLER: &str = "prog";
pub(crate) static MEMBERS: &[Member] = &[
    Member { name: "prog", main: m0, mode: Mode::Streaming, run: None, handle: None },
    Member { name: "echo", main: m1, mode: Mode::Streaming, run: None, handle: None },
    Member { name: "whoami", main: m2, mode: Mode::Serializing, run: None, handle: None },
    Member { name: "inner", main: m3, mode: Mode::Serializing, run: Some(r3), handle: None },
    Member { name: "served", main: m4, mode: Mode::Http, run: Some(r4), handle: None },
    Member { name: "handled", main: m5, mode: Mode::Http, run: Some(r5), handle: Some(crate::Handle { call: h5, now: Some(n5), shape: s5 }) },
];
unsafe extern "C" {
    #[link_name = "main"] fn m0(argc: i32, argv: *const *const u8) -> i32;
    #[link_name = "echo_main"] fn m1(argc: i32, argv: *const *const u8) -> i32;
    #[link_name = "whoami_main"] fn m2(argc: i32, argv: *const *const u8) -> i32;
    #[link_name = "inner_main"] fn m3(argc: i32, argv: *const *const u8) -> i32;
    #[link_name = "served_main"] fn m4(argc: i32, argv: *const *const u8) -> i32;
    #[link_name = "handled_main"] fn m5(argc: i32, argv: *const *const u8) -> i32;
}
unsafe extern "C-unwind" {
    #[link_name = "inner_run"] fn r3() -> i32;
    #[link_name = "served_run"] fn r4() -> i32;
    #[link_name = "handled_run"] fn r5() -> i32;
}
unsafe extern "C" {
    #[link_name = "handled_handle"] fn h5(method: *const u8, method_len: usize, target: *const u8, target_len: usize, headers: *const u8, headers_len: usize, body: *const u8, body_len: usize, limit_ms: u64, ctx: *mut std::ffi::c_void, reply: crate::HandleReply) -> i32;
    #[link_name = "handled_now"] fn n5(method: *const u8, method_len: usize, target: *const u8, target_len: usize, headers: *const u8, headers_len: usize, body: *const u8, body_len: usize, ctx: *mut std::ffi::c_void, done: crate::HandleDone) -> i32;
    #[link_name = "handled_shape"] fn s5() -> i32;
}
pub(crate) static GATEWAY_URLS: &[&str] = &["http://gateway.openfaas.svc.cluster.local.:8080"];
pub(crate) static GATEWAY_VARS: &[&str] = &["TEST_GATEWAY_URL"];
pub(crate) static CALLER_ENV: &[&str] = &["CALLER_ONLY"];
pub(crate) static INLINE_CALLS: bool = true;
pub(crate) static REWRITES: &[Rewrite] = &[
    Rewrite { member: "echo", from: "/fmerge-shim-test/secret", to: "/tmp/fmerge-shim-test-secret" },
    Rewrite { member: "inner", from: "/fmerge-shim-test/secret", to: "/tmp/fmerge-shim-test-secret" },
];
"#;

/// The file `echo`'s rewrite opens in place of `/fmerge-shim-test/secret`,
/// which does not exist, and what it holds.
// Each test file compiles this module; not all of them write the secret.
#[allow(dead_code)]
pub const REWRITTEN_SECRET: (&str, &str) = ("/tmp/fmerge-shim-test-secret", "its-own");

/// The members, watchdog-process functions. `echo`: its body upper-cased,
/// then what it sees of the call.
pub const ECHO_MAIN: &str = r#"
#[unsafe(no_mangle)]
pub extern "C" fn echo_main(_argc: i32, _argv: *const *const u8) -> i32 {
    use std::io::{Read, Write};
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).unwrap();
    let mut out = std::io::stdout();
    out.write_all(&input.to_ascii_uppercase()).unwrap();
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    write!(out, "|{}|{}|{}|{}", var("Http_Path"), var("Http_X_Test"), var("GREETING"), var("Http_Caller")).unwrap();
    // A secret file its rewrite points elsewhere, in its own process only.
    let secret = std::fs::read_to_string("/fmerge-shim-test/secret").unwrap_or_else(|_| "none".into());
    write!(out, "|{secret}").unwrap();
    out.flush().unwrap();
    0
}

/// The member `whoami`: which process ran it and how, then what the body
/// asks: `exit N`, `panic`, `sleep` (ten seconds) or nothing. A panic ends
/// it with 101 and stdout is flushed at its end, as std's runtime does
/// around a real `main`.
#[unsafe(no_mangle)]
pub extern "C" fn whoami_main(_argc: i32, _argv: *const *const u8) -> i32 {
    use std::io::{Read, Write};
    let code = std::panic::catch_unwind(|| {
        let mut input = String::new();
        std::io::stdin().read_to_string(&mut input).unwrap();
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let ppid = stat.rsplit(") ").next().unwrap().split(' ').nth(1).unwrap().to_string();
        let var = |k: &str| std::env::var(k).unwrap_or_else(|_| "-".into());
        print!("pid={} ppid={ppid} greeting={} marker={} caller_only={} len={}", std::process::id(), var("GREETING"), var("FMERGE_RUN_MEMBER"), var("CALLER_ONLY"), input.len());
        std::io::stdout().flush().unwrap();
        eprintln!("whoami wrote to stderr");
        match input.split_whitespace().collect::<Vec<_>>()[..] {
            ["exit", n] => std::process::exit(n.parse().unwrap()),
            ["panic"] => panic!("whoami was asked to panic"),
            ["sleep"] => std::thread::sleep(std::time::Duration::from_secs(10)),
            _ => {}
        }
    });
    if code.is_ok() { 0 } else { 101 }
}

/// The member `inner`'s entry, as fmerge makes one from a `main`: its exit
/// code, a panic unwinding out. It prints its pid, its thread's name, what
/// it sees of its environment and its stdin, then does what the body asks:
/// `partial` (ends with a line it does not end or flush), `thread` (a
/// thread of its own prints its setting), `secret` (reads a file its
/// rewrite points elsewhere), `nested` (calls itself with `plain` after
/// output it has not flushed), `tid` (the thread it runs on), `big N` (N
/// bytes), `exit N`, `panic`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn inner_run() -> i32 {
    use std::io::Read;
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| "-".into());
    println!(
        "pid={} thread={} greeting={} caller_only={} input={input}",
        std::process::id(),
        std::thread::current().name().unwrap_or("-"),
        var("GREETING"),
        var("CALLER_ONLY"),
    );
    match input.split_whitespace().collect::<Vec<_>>()[..] {
        ["partial"] => print!("no newline"),
        ["thread"] => std::thread::spawn(|| println!("from-thread={}", std::env::var("GREETING").unwrap_or_default())).join().unwrap(),
        ["secret"] => print!("secret={}", std::fs::read_to_string("/fmerge-shim-test/secret").unwrap_or_else(|_| "none".into())),
        ["nested"] => {
            // A line it has not ended when it calls: still its own.
            print!("outer-partial;");
            let url = std::env::var("TEST_GATEWAY_URL").unwrap();
            let authority = url.trim_start_matches("http://").trim_end_matches('/');
            let mut s = std::net::TcpStream::connect(authority).unwrap();
            use std::io::Write;
            write!(s, "POST /function/inner HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nplain").unwrap();
            let mut reply = String::new();
            s.read_to_string(&mut reply).unwrap();
            print!("nested-reply={}", reply.split_once("\r\n\r\n").unwrap().1);
        }
        ["tid"] => {
            unsafe extern "C" { fn gettid() -> i32; }
            print!("tid={}", unsafe { gettid() });
        }
        ["big", n] => print!("{}", "x".repeat(n.parse().unwrap())),
        ["exit", n] => return n.parse().unwrap(),
        ["panic"] => panic!("inner was asked to panic"),
        _ => {}
    }
    0
}

/// The member `served`'s entry: its own HTTP server on the `:3000` every
/// template asks for, a thread per connection, keep-alive; each reply says
/// the path, the address the server listens on and its `GREETING`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn served_run() -> i32 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("0.0.0.0:3000").unwrap();
    let at = listener.local_addr().unwrap();
    for stream in listener.incoming() {
        let stream = stream.unwrap();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stream.try_clone().unwrap());
            let mut w = stream;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let path = line.split(' ').nth(1).unwrap_or("").to_string();
                head_and_body(&mut r);
                let greeting = std::env::var("GREETING").unwrap_or_else(|_| "-".into());
                let text = format!("served {path} at {at} greeting={greeting}");
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}", text.len());
                if w.write_all(reply.as_bytes()).is_err() { return; }
            }
        });
    }
    0
}

/// The rest of an HTTP message's head on `r`, its first line read, then
/// its body as its Content-Length frames it: what the test's servers and
/// clients read of a request or a reply.
pub fn head_and_body(r: &mut impl std::io::BufRead) -> Vec<u8> {
    let mut length = 0;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h == "\r\n" { break; }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).unwrap();
    body
}

/// `served`'s C `main`.
#[unsafe(no_mangle)]
pub extern "C" fn served_main(_argc: i32, _argv: *const *const u8) -> i32 {
    served_run()
}

/// `handled`'s server, which must not run: its calls go to its `handle`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn handled_run() -> i32 {
    eprintln!("handled's server ran");
    0
}

/// `handled`'s C `main`.
#[unsafe(no_mangle)]
pub extern "C" fn handled_main(_argc: i32, _argv: *const *const u8) -> i32 {
    handled_run()
}

/// The shape of `handled`'s `handle`: one the entry takes.
#[unsafe(no_mangle)]
pub extern "C" fn handled_shape() -> i32 {
    1
}

/// `handled`'s `handle` entry, as fmerge writes one: `/panic` panicked,
/// `/slow` past its limit, anything else a 200 with what it was given
/// (method, target, body, its limit, its `X-Call` header and the
/// `GREETING` it sees); a target under `/not-here` as the same without it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn handled_handle(
    method: *const u8, method_len: usize,
    target: *const u8, target_len: usize,
    headers: *const u8, headers_len: usize,
    body: *const u8, body_len: usize,
    limit_ms: u64,
    ctx: *mut std::ffi::c_void,
    reply: unsafe extern "C" fn(*mut std::ffi::c_void, u16, *const u8, usize, *const u8, usize),
) -> i32 {
    let text = |p: *const u8, n: usize| String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p, n) }).into_owned();
    let (method, target, headers, body) = (text(method, method_len), text(target, target_len), text(headers, headers_len), text(body, body_len));
    match target.strip_prefix("/not-here").unwrap_or(&target) {
        "/panic" => return 1,
        "/slow" => return 2,
        _ => {}
    }
    let call = headers.lines().find_map(|l| l.strip_prefix("X-Call: ")).unwrap_or("-").to_string();
    let greeting = std::env::var("GREETING").unwrap_or_else(|_| "-".into());
    let head = "X-Handled: yes\r\nContent-Type: text/plain\r\n";
    let out = format!("{method} {target} {body} limit={limit_ms} call={call} greeting={greeting}");
    unsafe { reply(ctx, 200, head.as_ptr(), head.len(), out.as_ptr(), out.len()) };
    0
}

/// `handled`'s `.now` entry, as fmerge writes one: `/wait` goes on on a
/// thread of its own and replies after 100 ms, `/soon` at once from there,
/// `/late` after 1 s, `/slow` after 5 s, `/panic` panicked at once,
/// `/not-here` is not taken (as a `handle` that is not async) nor anything
/// under it, anything else replies
/// at once, each as `handled_handle` would with `via=now` and the name of
/// the thread it started on.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn handled_now(
    method: *const u8, method_len: usize,
    target: *const u8, target_len: usize,
    headers: *const u8, headers_len: usize,
    body: *const u8, body_len: usize,
    ctx: *mut std::ffi::c_void,
    done: unsafe extern "C" fn(*mut std::ffi::c_void, i32, u16, *const u8, usize, *const u8, usize),
) -> i32 {
    let text = |p: *const u8, n: usize| String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p, n) }).into_owned();
    let (method, target, headers, body) = (text(method, method_len), text(target, target_len), text(headers, headers_len), text(body, body_len));
    let call = headers.lines().find_map(|l| l.strip_prefix("X-Call: ")).unwrap_or("-").to_string();
    let greeting = std::env::var("GREETING").unwrap_or_else(|_| "-".into());
    let thread = std::thread::current().name().unwrap_or("-").to_string();
    let out = format!("{method} {target} {body} via=now call={call} greeting={greeting} thread={thread}");
    // Not capturing: `Copy`, for the thread and for here.
    let reply = move |ctx: *mut std::ffi::c_void, out: &str| {
        let head = "X-Handled: yes\r\nContent-Type: text/plain\r\n";
        unsafe { done(ctx, 0, 200, head.as_ptr(), head.len(), out.as_ptr(), out.len()) };
    };
    let later = |ms: u64| {
        struct Ctx(*mut std::ffi::c_void);
        unsafe impl Send for Ctx {}
        let (ctx, out) = (Ctx(ctx), out.clone());
        std::thread::spawn(move || {
            let ctx = ctx;
            std::thread::sleep(std::time::Duration::from_millis(ms));
            reply(ctx.0, &out);
        });
        1
    };
    match target.as_str() {
        t if t.starts_with("/not-here") => 2,
        "/panic" => {
            unsafe { done(ctx, 1, 0, std::ptr::null(), 0, std::ptr::null(), 0) };
            0
        }
        "/wait" => later(100),
        "/soon" => later(0),
        "/late" => later(1000),
        "/slow" => later(5000),
        _ => {
            reply(ctx, &out);
            0
        }
    }
}

/// `inner`'s C `main`, for when it runs in a process of its own.
#[unsafe(no_mangle)]
pub extern "C" fn inner_main(_argc: i32, _argv: *const *const u8) -> i32 {
    let code = std::panic::catch_unwind(|| inner_run()).unwrap_or(101);
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    code
}
"#;

/// What the gateway answers to anything.
pub const UPSTREAM_REPLY: &[u8] =
    b"HTTP/1.1 201 Created\r\nX-Upstream: yes\r\nContent-Length: 8\r\n\r\nupstream";

fn rustc(dir: &Path, args: &[&str]) {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{rustc} {args:?}:\n{stderr}");
    assert!(out.stderr.is_empty(), "warnings from {args:?}:\n{stderr}");
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fmerge-shim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds `program` (plus the members, [`ECHO_MAIN`]) in `dir` with the
/// shim linked in as a merged binary has it, `link` being extra `-C link-arg`s.
pub fn build(dir: &Path, program: &str, link: &[&str]) -> PathBuf {
    // As fmerge lays them out: the shim's sources, and the contract's
    // beside them, which the shim includes by a relative path.
    let src = dir.join("shim/src");
    if !dir.join("shim.o").exists() {
        std::fs::create_dir_all(&src).unwrap();
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &src);
        let contract = dir.join("contract/src");
        std::fs::create_dir_all(&contract).unwrap();
        let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contract/src/lib.rs");
        std::fs::copy(lib, contract.join("lib.rs")).unwrap();
        std::fs::write(src.join("table.rs"), TABLE).unwrap();
        let mut args = vec!["--edition", "2024", "--crate-type", "lib", "--emit", "obj"];
        args.extend([
            "-C",
            "codegen-units=1",
            "-C",
            "opt-level=2",
            "--cfg",
            "fmerge_merged",
        ]);
        args.extend([
            "--target",
            "x86_64-unknown-linux-gnu",
            "shim/src/lib.rs",
            "-o",
            "shim.o",
        ]);
        rustc(dir, &args);
    }
    std::fs::write(dir.join("main.rs"), format!("{program}\n{ECHO_MAIN}")).unwrap();
    let out = format!("prog{}", link.len());
    let mut links = vec![format!("link-arg={}", dir.join("shim.o").display())];
    links.extend(link.iter().map(|l| format!("link-arg={l}")));
    let mut args = vec!["--edition", "2024", "--target", "x86_64-unknown-linux-gnu"];
    for l in &links {
        args.extend(["-C", l]);
    }
    args.extend(["main.rs", "-o", &out]);
    rustc(dir, &args);
    dir.join(out)
}

/// `from`'s files and folders into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let into = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &into);
        } else {
            std::fs::copy(&path, into).unwrap();
        }
    }
}

/// The requests that reached the gateway, each as its bytes.
pub type Seen = Arc<Mutex<Vec<Vec<u8>>>>;

/// A gateway on 127.0.0.1 (and ::1 on the same port when it can) answering
/// [`UPSTREAM_REPLY`] to one request per connection.
pub fn gateway() -> (SocketAddr, Seen) {
    let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = v4.local_addr().unwrap();
    let seen = Seen::default();
    let v6 = TcpListener::bind(("::1", addr.port())).ok();
    for listener in std::iter::once(v4).chain(v6) {
        let seen = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut r = BufReader::new(stream.try_clone().unwrap());
                if let Ok(Some(req)) = http::read_request(&mut r, &mut std::io::sink()) {
                    seen.lock().unwrap().push(req.raw);
                    stream.write_all(UPSTREAM_REPLY).unwrap();
                }
            }
        });
    }
    (addr, seen)
}

/// The URL of the gateway at `addr`, as a program finds it in
/// `TEST_GATEWAY_URL`.
pub fn gateway_url(addr: SocketAddr) -> String {
    format!("http://127.0.0.1:{}", addr.port())
}

/// Builds `program` (in the scratch directory `name`) and runs it once,
/// with a gateway's address in `TEST_GATEWAY_URL` and `env`; asserts it
/// succeeded. Its stdout and stderr, and what reached the gateway.
// Each test file compiles this module; not all of them run a program once.
#[allow(dead_code)]
pub fn run_once(name: &str, program: &str, env: &[(&str, &str)]) -> (String, String, Seen) {
    let prog = build(&scratch(name), program, &[]);
    let (addr, seen) = gateway();
    let out = Command::new(&prog)
        .env("TEST_GATEWAY_URL", gateway_url(addr))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    (stdout, stderr, seen)
}

/// Asserts that `reply` is the whole of `echo`'s reply to a call made
/// through `url`: a 200 of `body`, with `more_head` (whole header lines)
/// after its Content-Length.
// Each test file compiles this module; not all of them call echo.
#[allow(dead_code)]
pub fn assert_echo_reply(reply: &[u8], body: &[u8], more_head: &str, url: &str) {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n{more_head}\r\n",
        body.len()
    );
    let shown = String::from_utf8_lossy(reply);
    assert_eq!(reply, [head.as_bytes(), body].concat(), "{url}: {shown}");
}

/// A whole reply's status line and body.
// Each test file compiles this module; not all of them read replies so.
#[allow(dead_code)]
pub fn status_and_body(reply: &[u8]) -> (String, String) {
    let reply = std::str::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// Splits the program's output into the replies it printed as `len\nbytes`.
// Each test file compiles this module; not all of them print replies.
#[allow(dead_code)]
pub fn replies(mut out: &[u8]) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    while let Some(nl) = out.iter().position(|&b| b == b'\n') {
        let len: usize = std::str::from_utf8(&out[..nl]).unwrap().parse().unwrap();
        all.push(out[nl + 1..nl + 1 + len].to_vec());
        out = &out[nl + 1 + len..];
    }
    all
}
