//! What the runtime's integration tests share beyond [`fmerge_testkit`]:
//! reading error replies, checking a function's answer through the gateway,
//! raw requests to a probe, and the dispatch table filled as `fmerge` fills it.

// Each test binary compiles this module; only some use each helper.
#![allow(dead_code)]

pub mod servers;

use fmerge_runtime::Entry;
use fmerge_runtime::hooks::{Route, Routes};
use fmerge_testkit::dataplane::{self, RawResponse, Server, request};
use fmerge_testkit::{Deployment, HttpReply};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The `"error"` string of a JSON error reply.
pub fn error_of(body: &str) -> String {
    let value: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("error reply is not JSON ({e}): {body}"));
    value["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no \"error\" string in {body}"))
        .to_string()
}

/// A function's answer through the gateway, checked.
pub trait Answers {
    /// POSTs to `function` and expects a 200 with `reply`.
    fn ok(&self, function: &str, request: &str, reply: &str);
    /// POSTs to `function` and expects a 400 saying `error`.
    fn refused(&self, function: &str, request: &str, error: &str);
}

impl Answers for Deployment {
    fn ok(&self, function: &str, request: &str, reply: &str) {
        let answer = fmerge_testkit::post(&self.url(function), request);
        let context = format!("{function} {request}\n{}", self.outputs());
        fmerge_testkit::assert_ok(&answer, reply, &context);
    }

    fn refused(&self, function: &str, request: &str, error: &str) {
        let HttpReply { status, body } = fmerge_testkit::post(&self.url(function), request);
        assert_eq!((status, error_of(&body).as_str()), (400, error));
    }
}

/// POSTs `request` to `url`, expects `status`, and returns the reply's error.
pub fn failure(url: &str, request: &str, status: u16) -> String {
    let HttpReply { status: got, body } = fmerge_testkit::post(url, request);
    assert_eq!(got, status, "{body}");
    error_of(&body)
}

/// `GET path` with `headers` to 127.0.0.1:`port`, which must answer.
pub fn get(port: u16, path: &str, headers: &[(&str, &str)]) -> RawResponse {
    request(port, "GET", path, headers, b"").unwrap()
}

/// `n` threads, each sending `GET path` to `port` at once: its reply and
/// how long it took.
pub fn at_once(
    n: usize,
    port: u16,
    path: &str,
) -> Vec<JoinHandle<(Result<RawResponse, String>, Duration)>> {
    (0..n)
        .map(|_| {
            let path = path.to_string();
            std::thread::spawn(move || {
                let asked = Instant::now();
                (request(port, "GET", &path, &[], b""), asked.elapsed())
            })
        })
        .collect()
}

/// The probe function (`examples/probe.rs`) alone on `port`: no metrics
/// port, no caller key, with `env`.
pub fn probe_on(port: u16, env: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(dataplane::example_binary("fmerge-runtime", "probe"));
    cmd.env("port", port.to_string())
        .env("metrics_port", "0")
        .env("listen_address", "127.0.0.1")
        .envs(env.iter().copied());
    Server::start(cmd, port)
}

unsafe extern "Rust" {
    #[link_name = fmerge_contract::routes_symbol!()]
    static mut ROUTES: Routes;
}

/// Fills the dispatch table as `fmerge` does, with `name` served in process
/// by `entry`. Call it once, before any `invoke`, from the only test of its
/// binary that invokes.
pub fn merge_locally(name: &'static str, entry: Entry) {
    let routes: &'static [Route] = Box::leak(Box::new([Route {
        name: name.as_ptr(),
        len: name.len(),
        entry,
        isolate: 0,
    }]));
    // SAFETY: written once, before any `invoke` (see above).
    unsafe {
        ROUTES = Routes {
            routes: routes.as_ptr(),
            len: routes.len(),
        }
    };
}

/// Asks `GET path` every 20 ms until the answer is not a 200 or `within`
/// has passed; the last answer.
pub fn first_not_200(port: u16, path: &str, within: Duration) -> RawResponse {
    let deadline = Instant::now() + within;
    loop {
        let r = get(port, path, &[]);
        if r.status != 200 || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `GET path` on a new connection; the reply's status, or why none came
/// within `within`.
pub fn answered_within(port: u16, path: &str, within: Duration) -> Result<u16, String> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    c.set_read_timeout(Some(within)).unwrap();
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut reply = Vec::new();
    c.read_to_end(&mut reply)
        .map_err(|e| format!("no answer within {within:?}: {e}"))?;
    dataplane::parse(&reply, false).map(|r| r.status)
}

/// A connection that sent `sent` and nothing more.
pub fn stalled(port: u16, sent: &str) -> TcpStream {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(sent.as_bytes()).unwrap();
    c
}

/// `X-Fmerge-Caller-Sig` for `caller` calling `callee` with the request
/// line `method` `target`, made with the tests' caller key at unix time `t`.
pub fn caller_sig(caller: &str, callee: &str, method: &str, target: &str, t: u64) -> String {
    use hmac::Mac;
    let key = fmerge_testkit::CALLER_KEY.as_bytes();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    mac.update(format!("{caller}\n{callee}\n{method} {target}\n{t}").as_bytes());
    format!("t={t},s={}", hex::encode(mac.finalize().into_bytes()))
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Raises this process's soft limit on open files to the hard one, which
/// it returns.
pub fn raise_fd_limit() -> libc::rlim_t {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `limit`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    limit.rlim_max
}
