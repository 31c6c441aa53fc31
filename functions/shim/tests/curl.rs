//! End to end with a shared libcurl as the HTTP client: libcurl binds to
//! `connect`, `getaddrinfo` and `send` at load time, so only definitions
//! exported from the executable take the place of libc's. GNU ld exports
//! them by itself when libcurl is on the link line, as here; fmerge exports
//! them explicitly, with `linker-scripts/process.ver` (as this build does),
//! so that a library loaded any other way is covered too. A call libcurl
//! makes from the main thread to a member that runs in the process runs on
//! that thread.

mod common;

use std::process::Command;

use common::UPSTREAM_REPLY;

const PROGRAM: &str = r#"
use std::ffi::{c_long, c_void, CString};
use std::io::Write;

#[link(name = "curl")]
unsafe extern "C" {
    fn curl_easy_init() -> *mut c_void;
    fn curl_easy_setopt(handle: *mut c_void, option: i32, ...) -> i32;
    fn curl_easy_perform(handle: *mut c_void) -> i32;
    fn curl_easy_cleanup(handle: *mut c_void);
}

extern "C" fn collect(ptr: *const u8, size: usize, n: usize, data: *mut c_void) -> usize {
    let out = unsafe { &mut *(data as *mut Vec<u8>) };
    out.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, size * n) });
    size * n
}

fn main() {
    let base = std::env::var("TEST_GATEWAY_URL").unwrap();
    let mut stdout = std::io::stdout().lock();
    for (path, body) in [("/function/echo/sub", c"hello"), ("/function/other", c"hello"), ("/function/inner", c"tid")] {
        let url = CString::new(format!("{base}{path}")).unwrap();
        let mut reply: Vec<u8> = Vec::new();
        let cb: extern "C" fn(*const u8, usize, usize, *mut c_void) -> usize = collect;
        unsafe {
            let h = curl_easy_init();
            curl_easy_setopt(h, 10002, url.as_ptr()); // CURLOPT_URL
            curl_easy_setopt(h, 10015, body.as_ptr()); // CURLOPT_POSTFIELDS
            curl_easy_setopt(h, 42, 1 as c_long); // CURLOPT_HEADER
            curl_easy_setopt(h, 20011, cb); // CURLOPT_WRITEFUNCTION
            curl_easy_setopt(h, 10001, &mut reply as *mut Vec<u8>); // CURLOPT_WRITEDATA
            assert_eq!(curl_easy_perform(h), 0, "curl failed for {base}{path}");
            curl_easy_cleanup(h);
        }
        writeln!(stdout, "{}", reply.len()).unwrap();
        stdout.write_all(&reply).unwrap();
    }
    unsafe extern "C" {
        fn gettid() -> i32;
    }
    let tid = unsafe { gettid() }.to_string();
    write!(stdout, "{}\n{tid}", tid.len()).unwrap();
}
"#;

/// The link argument fmerge gives a merged binary of these functions.
fn exports() -> String {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../linker-scripts/process.ver");
    format!("-Wl,--version-script={}", script.display())
}

/// A name other than `localhost` for 127.0.0.1 (curl resolves `localhost`
/// itself, without getaddrinfo), if /etc/hosts has one.
fn loopback_name() -> Option<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
    let line = hosts
        .lines()
        .find(|l| l.split_whitespace().next() == Some("127.0.0.1"))?;
    line.split_whitespace()
        .skip(1)
        .find(|n| !n.starts_with("localhost"))
        .map(str::to_string)
}

fn run(prog: &std::path::Path, url: &str) -> Vec<Vec<u8>> {
    let out = fmerge_testkit::run_ok(
        Command::new(prog)
            .env("TEST_GATEWAY_URL", url)
            .env("ECHO__GREETING", "hi"),
    );
    common::replies(&out.stdout)
}

#[test]
fn libcurl_calls_are_redirected_when_the_symbols_are_exported() {
    let dir = common::scratch("curl");
    let exported = common::build(&dir, PROGRAM, &[&exports()]);
    std::fs::write(common::REWRITTEN_SECRET.0, common::REWRITTEN_SECRET.1).unwrap();
    let (addr, seen) = common::gateway();
    let port = addr.port();
    let hosts: Vec<String> = std::iter::once("127.0.0.1".to_string())
        .chain(loopback_name())
        .collect();
    for host in &hosts {
        seen.lock().unwrap().clear();
        let url = format!("http://{host}:{port}");
        let replies = run(&exported, &url);
        common::assert_echo_reply(&replies[0], b"HELLO|/sub||hi||its-own", "", &url);
        assert_eq!(replies[1], UPSTREAM_REPLY, "{url}");
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.len(),
            1,
            "{url}: only the non-member call reaches the gateway"
        );
        assert!(
            seen[0].starts_with(b"POST /function/other HTTP/1.1\r\n"),
            "{url}"
        );
        // The member run in the process ran on the thread that called it.
        let inner = String::from_utf8_lossy(&replies[2]);
        let main_tid = String::from_utf8_lossy(&replies[3]);
        assert!(inner.starts_with("HTTP/1.1 200 OK\r\n"), "{url}: {inner}");
        assert!(
            inner.ends_with(&format!("tid={main_tid}")),
            "{url}: {inner} (main thread {main_tid})"
        );
    }

    let _ = std::fs::remove_dir_all(&dir);
}
