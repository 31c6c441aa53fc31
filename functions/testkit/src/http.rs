//! Ports and a blocking HTTP client, for 127.0.0.1 only.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A TCP port that is free on 127.0.0.1 now and was not handed out before in
/// this process, nor to another test process still running (`reserve`).
/// Picked at random below Linux's ephemeral range (32768+), so that no
/// outgoing connection takes it before the test binds it.
pub fn free_port() -> u16 {
    static GIVEN: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    let mut given = GIVEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let port = 20_000 + (random() % 12_000) as u16;
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() && reserve(port)
        {
            given.insert(port);
            return port;
        }
    }
    panic!("no free port in 20000..32000 on 127.0.0.1");
}

/// Claims `port` for this process among the test processes of the machine
/// (CI runs two test binaries at once, each handing out ports): a file
/// named by the port, created only if absent, holding this process's id;
/// one whose process has ended is taken over. `false` if another live
/// process holds it. Without the folder, the port is taken as free.
fn reserve(port: u16) -> bool {
    use std::io::Write as _;
    let dir = std::env::temp_dir().join("fmerge-test-ports");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(port.to_string());
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                let _ = f.write_all(std::process::id().to_string().as_bytes());
                return true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let owner = std::fs::read_to_string(&path).unwrap_or_default();
                // Empty: its owner is writing its id now.
                let ended = owner.trim().parse::<u32>().is_ok_and(|pid| {
                    pid != std::process::id()
                        && !std::path::Path::new(&format!("/proc/{pid}")).exists()
                });
                if !ended {
                    return false;
                }
                let _ = std::fs::remove_file(&path);
            }
            Err(_) => return true,
        }
    }
    false
}

fn random() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    static STATE: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    STATE
        .get_or_init(RandomState::new)
        .hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::Agent::config_builder()
            // Longer than the runtime's 30 s invoke timeout, so that a test
            // sees the function's own answer; a hang still fails the test.
            .timeout_global(Some(Duration::from_secs(60)))
            .http_status_as_error(false)
            .proxy(None) // Only ever 127.0.0.1, whatever http_proxy says.
            .build()
            .into()
    })
}

/// An HTTP reply: its status and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    pub status: u16,
    pub body: String,
}

impl HttpReply {
    /// A reply of `status` with `body`, for tests to compare against.
    pub fn new(status: u16, body: &str) -> HttpReply {
        HttpReply {
            status,
            body: body.to_string(),
        }
    }
}

/// POSTs `json` to `url` (blocking, 60 s timeout) and returns the reply.
/// Panics if there is no HTTP answer at all.
pub fn post(url: &str, json: &str) -> HttpReply {
    try_post(url, json).unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

/// [`post`] that returns transport errors instead of panicking.
pub fn try_post(url: &str, json: &str) -> Result<HttpReply, ureq::Error> {
    let mut reply = agent()
        .post(url)
        .header("content-type", "application/json")
        .send(json)?;
    let status = reply.status().as_u16();
    let body = reply.body_mut().read_to_string()?;
    Ok(HttpReply { status, body })
}

/// GETs `url`; like [`post`].
pub fn get(url: &str) -> HttpReply {
    let result = agent().get(url).call().and_then(|mut r| {
        Ok(HttpReply {
            status: r.status().as_u16(),
            body: r.body_mut().read_to_string()?,
        })
    });
    result.unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

/// GETs `http://127.0.0.1:<port><path>` until it answers or `timeout` passes.
pub fn wait_http(port: u16, path: &str, timeout: Duration) -> Result<HttpReply, String> {
    let url = format!("http://127.0.0.1:{port}{path}");
    let deadline = Instant::now() + timeout;
    loop {
        match agent().get(&url).call() {
            Ok(mut r) => {
                return Ok(HttpReply {
                    status: r.status().as_u16(),
                    body: r.body_mut().read_to_string().unwrap_or_default(),
                });
            }
            Err(e) if Instant::now() > deadline => return Err(format!("GET {url}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_another_live_process_holds_is_not_handed_out_and_a_dead_ones_is() {
        let dir = std::env::temp_dir().join("fmerge-test-ports");
        std::fs::create_dir_all(&dir).unwrap();
        // Ports above the range free_port draws from, so no test meets them.
        let (held, stale, fresh) = (32_101u16, 32_102u16, 32_103u16);
        // pid 1 lives as long as the machine.
        std::fs::write(dir.join(held.to_string()), "1").unwrap();
        // No pid is this large (pid_max is at most 2^22).
        std::fs::write(dir.join(stale.to_string()), "99999999").unwrap();
        let _ = std::fs::remove_file(dir.join(fresh.to_string()));
        assert!(!reserve(held));
        assert!(reserve(stale));
        assert!(reserve(fresh));
        let mine = std::process::id().to_string();
        for port in [stale, fresh] {
            assert_eq!(
                std::fs::read_to_string(dir.join(port.to_string())).unwrap(),
                mine
            );
            std::fs::remove_file(dir.join(port.to_string())).unwrap();
        }
        std::fs::remove_file(dir.join(held.to_string())).unwrap();
    }
}
