//! The two servers the conformance tests compare: the runtime serving the
//! probe function itself, and the real of-watchdog in front of it.

use super::probe_on;
use fmerge_testkit::dataplane::{self, Server, request};
use fmerge_testkit::free_port;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Serving {
    /// The function binary serves the port itself.
    Runtime,
    /// of-watchdog serves the port and proxies to the function binary.
    Watchdog,
}

/// `GET path` on `port` (of `serving`), which must be answered 200 within
/// `within`; how long the answer took.
pub fn answers_ok_within(serving: Serving, port: u16, path: &str, within: Duration) -> Duration {
    let asked = Instant::now();
    let status = super::answered_within(port, path, within);
    assert_eq!(
        status,
        Ok(200),
        "{serving:?}: {path} after {:?}",
        asked.elapsed()
    );
    asked.elapsed()
}

/// A 5 s request to a server whose `exec_timeout` is 1 s: answered 504
/// (by `serving`) well before it would have finished. The answer.
pub fn cut_at_exec_timeout(serving: Serving, port: u16) -> dataplane::RawResponse {
    let asked = Instant::now();
    let r = super::get(port, "/sleep?ms=5000", &[]);
    assert_eq!(r.status, 504, "{serving:?}: {r:?}");
    assert!(
        asked.elapsed() < Duration::from_millis(4500),
        "{serving:?}: answered after {:?}",
        asked.elapsed()
    );
    r
}

/// A request while `slow` holds the server's only `max_inflight` slot:
/// refused 429 (by `serving`), and `slow` answered 200 after it. The
/// refusal.
pub fn refused_beside(
    serving: Serving,
    port: u16,
    slow: std::thread::JoinHandle<Result<dataplane::RawResponse, String>>,
) -> dataplane::RawResponse {
    let refused = super::get(port, "/sleep?ms=0", &[]);
    assert_eq!(refused.status, 429, "{serving:?}: {refused:?}");
    assert_eq!(slow.join().unwrap().unwrap().status, 200, "{serving:?}");
    refused
}

/// of-watchdog always puts its metrics on :8081, so two cannot run at once.
static WATCHDOG: Mutex<()> = Mutex::new(());

pub struct Started {
    pub server: Server,
    _watchdog_lock: Option<std::sync::MutexGuard<'static, ()>>,
    _tmp: tempfile::TempDir,
}

/// Starts the probe function (`examples/probe.rs`) behind `serving` with the
/// of-watchdog settings `env`. `None` when of-watchdog is unavailable and
/// not required.
pub fn start(serving: Serving, env: &[(&str, &str)]) -> Option<Started> {
    let probe = dataplane::example_binary("fmerge-runtime", "probe");
    let port = free_port();
    let tmp = tempfile::tempdir().unwrap();
    match serving {
        Serving::Runtime => Some(Started {
            server: probe_on(port, env),
            _watchdog_lock: None,
            _tmp: tmp,
        }),
        Serving::Watchdog => {
            let watchdog = match dataplane::of_watchdog() {
                Ok(path) => path,
                Err(why) => {
                    dataplane::tool_present(Some(format!(
                        "of-watchdog is unavailable, so is the of-watchdog half: {why}"
                    )));
                    return None;
                }
            };
            let lock = WATCHDOG.lock().unwrap_or_else(|e| e.into_inner());
            let upstream = free_port();
            // The function behind it must not read of-watchdog's `port`,
            // nor take :8081: `env` gives it its own; and of-watchdog's
            // limits are the ones under test, so the function has none.
            let fprocess = format!(
                "env -u exec_timeout -u max_inflight -u read_timeout port={upstream} metrics_port=0 listen_address=127.0.0.1 {}",
                probe.display()
            );
            let mut cmd = Command::new(watchdog);
            cmd.env("mode", "http")
                .env("upstream_url", format!("http://127.0.0.1:{upstream}"))
                .env("fprocess", fprocess)
                .env("port", port.to_string())
                .env("TMPDIR", tmp.path())
                .envs(env.iter().copied());
            let server = Server::start(cmd, port);
            // of-watchdog answers health before its function listens.
            let deadline = Instant::now() + Duration::from_secs(20);
            while request(upstream, "GET", "/_/health", &[], b"").is_err() {
                assert!(
                    Instant::now() < deadline,
                    "the function behind of-watchdog did not come up:\n{}",
                    server.output()
                );
                std::thread::sleep(Duration::from_millis(25));
            }
            Some(Started {
                server,
                _watchdog_lock: Some(lock),
                _tmp: tmp,
            })
        }
    }
}

/// [`start`], with the metrics served on the port returned: the
/// runtime's on a free port, of-watchdog's on :8081, where it always is.
/// `None` for of-watchdog also when :8081 is another process's (another
/// test's function on this machine), which it could not serve.
pub fn start_with_metrics(serving: Serving, env: &[(&str, &str)]) -> Option<(Started, u16)> {
    match serving {
        Serving::Runtime => {
            let metrics = fmerge_testkit::free_port();
            let port = metrics.to_string();
            let mut env = env.to_vec();
            env.push(("metrics_port", &port));
            start(serving, &env).map(|s| (s, metrics))
        }
        Serving::Watchdog => {
            let lock = WATCHDOG.lock().unwrap_or_else(|e| e.into_inner());
            let free = std::net::TcpListener::bind(("0.0.0.0", 8081)).is_ok();
            drop(lock);
            // Under .ci/run nothing else binds :8081 (the test kit's
            // functions serve no metrics unless asked): a taken port
            // there is a defect to see, not a half to skip.
            let taken = (!free).then(|| {
                ":8081, of-watchdog's metrics port, is taken by another process, so the of-watchdog half is skipped"
                    .to_string()
            });
            if !dataplane::tool_present(taken) {
                return None;
            }
            start(serving, env).map(|s| (s, 8081))
        }
    }
}

pub fn both(probe: impl Fn(Serving)) {
    for serving in [Serving::Runtime, Serving::Watchdog] {
        eprintln!("--- {serving:?}");
        probe(serving);
    }
}

/// [`both`], with the probe started behind each server with `env`; a server
/// that [`start`] gives `None` for is left out.
pub fn both_started(env: &[(&str, &str)], probe: impl Fn(Serving, Started)) {
    both(|serving| {
        if let Some(s) = start(serving, env) {
            probe(serving, s);
        }
    });
}
