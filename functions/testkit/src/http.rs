//! Ports and a blocking HTTP client, for 127.0.0.1 only.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A TCP port that is free on 127.0.0.1 now and was not handed out before in
/// this process. Picked at random below Linux's ephemeral range (32768+), so
/// that no outgoing connection takes it before the test binds it.
pub fn free_port() -> u16 {
    static GIVEN: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    let mut given = GIVEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let port = 20_000 + (random() % 12_000) as u16;
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.insert(port);
            return port;
        }
    }
    panic!("no free port in 20000..32000 on 127.0.0.1");
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
