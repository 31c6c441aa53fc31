//! What the socialNetwork functions share: the messages they exchange
//! ([`api`]), the user records ([`users`]), the social graph
//! ([`social_graph`]), the ids ([`ids`]), and, here, the Redis connection of
//! a function: one reconnecting connection per function (the redis crate's
//! `ConnectionManager`), created on first use and shared by its requests.
//!
//! The address is not read here: each function passes a closure that calls
//! `config!` in its own crate, so that the setting is that function's
//! (`<FUNCTION>__REDIS_URL` once merged) and the literal default lives in its
//! own code, where `fmerge build --rewrite` can find it.
//!
//! Why `ConnectionManager`: a plain `MultiplexedConnection` that Redis closed
//! (a restart, a failover) stays closed, and every later request fails. The
//! manager notices the dropped connection and opens a new one in the
//! background (with backoff), so a Redis restart costs the requests made while
//! it is down, not every request after. A Redis that stops answering without
//! closing the socket is another matter: the manager would keep the dead
//! socket (for the kernel's ~15 min retransmission limit), so a command that
//! times out ([`RESPONSE_TIMEOUT`]) replaces the connection.

use fmerge_runtime::Error;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::io::tcp::{TcpSettings, socket2::TcpKeepalive};
use redis::{Arg, Cmd, FromRedisValue, IntoConnectionInfo, Pipeline, RedisFuture, Value};
use std::sync::Mutex;
use std::time::Duration;

pub use redis;

pub mod api;
pub mod ids;
pub mod social_graph;
pub mod users;

/// How long a command may wait for Redis's reply before it fails. A Redis
/// that stops answering without closing its socket (a lost node, a
/// partition, a stopped process) fails requests after this, and the
/// connection is then replaced, not reused.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long opening a connection may take; a reconnect makes at most
/// [`RECONNECT_ATTEMPTS`] of them (with backoff between), which bounds how
/// long a request waits for a Redis that is down (docs/operating.md says
/// how long, as measured).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);
pub const RECONNECT_ATTEMPTS: usize = 3;

/// TCP keepalive on the Redis socket: probes after 10 s idle, every 5 s, 3
/// unanswered ones close it; and data unacknowledged for 10 s closes it
/// (`TCP_USER_TIMEOUT`), so a peer that vanished is noticed by the kernel
/// even between requests.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_PROBES: u32 = 3;
const USER_TIMEOUT: Duration = Duration::from_secs(10);

/// What a function queries: a handle to its current connection (clone it
/// per request). A command that times out makes the store open a new
/// connection for the requests after it.
#[derive(Clone)]
pub struct Conn {
    inner: ConnectionManager,
    store: &'static Store,
    generation: u64,
}

/// A function's Redis: one per function, also once merged; [`store!`]
/// declares it in the function's own crate.
pub struct Store(Mutex<State>);

/// Milliseconds since the Unix epoch: the time a post or a follow is given
/// when the request names none.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Declares `handle` for `social-graph-follow-with-username` and
/// `social-graph-unfollow-with-username`: `{"username", "followee_username",
/// <fields>}` → both user ids from `get-user-id`, asked concurrently, then
/// `$by_id` with `{"user_id", "followee_id", <fields>}`, whose reply is the
/// reply. A macro, so that the calls stay in the function's own code, where
/// fmerge reads the call graph.
#[macro_export]
macro_rules! by_usernames {
    ($by_id:literal $(, $field:ident: $type:ty)*) => {
        #[derive(::serde::Deserialize)]
        struct Request {
            username: String,
            followee_username: String,
            $($field: $type,)*
        }

        async fn handle(body: ::fmerge_runtime::Bytes) -> ::fmerge_runtime::Reply {
            use $crate::api::UserId;
            use ::fmerge_runtime::{callee_json, invoke};
            use ::serde_json::{json, to_vec};
            let req: Request = ::fmerge_runtime::json(&body)?;
            let (user, followee) = ::tokio::try_join!(
                invoke("get-user-id", to_vec(&json!({ "username": req.username }))?),
                invoke("get-user-id", to_vec(&json!({ "username": req.followee_username }))?)
            )?;
            let mut by_id = ::serde_json::Map::new();
            let UserId { user_id } = callee_json("get-user-id", &user)?;
            by_id.insert("user_id".into(), user_id.into());
            let UserId { user_id } = callee_json("get-user-id", &followee)?;
            by_id.insert("followee_id".into(), user_id.into());
            $(by_id.insert(stringify!($field).into(), ::serde_json::to_value(&req.$field)?);)*
            Ok(invoke($by_id, to_vec(&by_id)?).await?.to_vec())
        }
    };
}

/// Declares `handle` for a timeline reader (`read-home-timeline`,
/// `read-user-timeline`): `{"user_id", "start" (0), "stop" (10)}` → the
/// post ids at ranks `start..stop` of `<timeline>:<user_id>` (`ZREVRANGE`,
/// newest first), then `{"posts": [...]}` from `read-posts`; an empty page
/// asks no one. Needs [`store!`] in the same crate. A macro, so that the
/// call to `read-posts` stays in the function's own code, where fmerge reads
/// the call graph.
#[macro_export]
macro_rules! timeline_reader {
    ($timeline:literal) => {
        #[derive(::serde::Deserialize)]
        struct Page {
            user_id: u64,
            #[serde(default)]
            start: u64,
            #[serde(default = "default_stop")]
            stop: u64,
        }

        fn default_stop() -> u64 {
            10
        }

        async fn handle(body: ::fmerge_runtime::Bytes) -> ::fmerge_runtime::Reply {
            use ::fmerge_runtime::Error;
            let page: Page = ::fmerge_runtime::json(&body)?;
            if page.stop <= page.start {
                return ::fmerge_runtime::to_json(&::serde_json::json!({ "posts": [] }));
            }
            let post_ids: Vec<u64> = query(
                $crate::redis::cmd("ZREVRANGE")
                    .arg(format!(concat!($timeline, ":{}"), page.user_id))
                    .arg(page.start)
                    .arg(page.stop - 1),
            )
            .await?;
            if post_ids.is_empty() {
                return ::fmerge_runtime::to_json(&::serde_json::json!({ "posts": [] }));
            }
            let reply = ::fmerge_runtime::invoke(
                "read-posts",
                ::serde_json::to_vec(&::serde_json::json!({ "post_ids": post_ids }))?,
            )
            .await?;
            Ok(reply.to_vec())
        }
    };
}

/// Declares the calling function's Redis: a `static STORE`, `async fn
/// redis() -> Result<Conn, Error>` and `async fn query(&Cmd)` (one command on
/// it, [`Conn::query`]), whose address is the function's
/// `REDIS_URL` setting (default: the socialNetwork's Redis service). A macro,
/// so that `config!` and the literal default expand in the function's own
/// crate: the setting is that function's (`<FUNCTION>__REDIS_URL` once
/// merged) and `fmerge build --rewrite` finds the literal in its code.
#[macro_export]
macro_rules! store {
    () => {
        $crate::store!(config: fmerge_runtime::config);
    };
    // The hand-fused baseline (bench/fused) reads the setting with its own
    // `config!`, the plain variable.
    (config: $($config:ident)::+) => {
        static STORE: $crate::Store = $crate::Store::new();

        #[allow(dead_code)] // a function that only calls `query` never names it
        async fn redis() -> ::std::result::Result<$crate::Conn, ::fmerge_runtime::Error> {
            STORE
                .conn(|| {
                    $($config)::+!(
                        "REDIS_URL",
                        "redis://sn-redis-master.openfaas-fn.svc.cluster.local:6379"
                    )
                })
                .await
        }

        #[allow(dead_code)]
        async fn query<T: $crate::redis::FromRedisValue>(
            cmd: &$crate::redis::Cmd,
        ) -> ::std::result::Result<T, ::fmerge_runtime::Error> {
            redis().await?.query(cmd).await
        }
    };
}

struct State {
    current: Option<Current>,
    /// The generation of the next connection.
    next: u64,
}

struct Current {
    conn: ConnectionManager,
    generation: u64,
}

impl Store {
    pub const fn new() -> Self {
        Store(Mutex::new(State {
            current: None,
            next: 0,
        }))
    }

    /// The connection, created on the first call (and after a timeout) with
    /// the URL `url()` gives. It connects lazily: a Redis that is down fails
    /// the requests that need it (after the reconnect attempts), and the next
    /// ones reconnect.
    pub async fn conn(&'static self, url: impl FnOnce() -> String) -> Result<Conn, Error> {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = state.current.as_ref() {
            return Ok(Conn {
                inner: c.conn.clone(),
                store: self,
                generation: c.generation,
            });
        }
        let url = url();
        // Internal: the URL may hold a password, the error a host.
        let bad = |e: redis::RedisError| {
            Error::internal("bad REDIS_URL (expected redis://host:port/)", e)
        };
        let info = url
            .as_str()
            .into_connection_info()
            .map_err(bad)?
            .set_tcp_settings(tcp_settings());
        let client = redis::Client::open(info).map_err(bad)?;
        let conn = ConnectionManager::new_lazy_with_config(client, config())
            .map_err(|e| Error::internal("cannot set up the Redis connection", e))?;
        let generation = state.next;
        state.next += 1;
        state.current = Some(Current {
            conn: conn.clone(),
            generation,
        });
        Ok(Conn {
            inner: conn,
            store: self,
            generation,
        })
    }

    /// Drops connection `generation` if it is still the current one: the
    /// next request opens a new one (once, however many requests timed out).
    fn replace(&self, generation: u64) {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if state
            .current
            .as_ref()
            .is_some_and(|c| c.generation == generation)
        {
            state.current = None;
        }
    }
}

impl Conn {
    /// Runs `cmd`; a failure is a 500 `redis <COMMAND> failed`, logged with why.
    pub async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T, Error> {
        cmd.query_async(self)
            .await
            .map_err(|e| failed(Some(cmd), e))
    }

    /// Runs `pipe` (in `MULTI`/`EXEC` if it is atomic); a failure names its
    /// first command.
    pub async fn query_pipe<T: FromRedisValue>(&mut self, pipe: &Pipeline) -> Result<T, Error> {
        pipe.query_async(self)
            .await
            .map_err(|e| failed(pipe.cmd_iter().next(), e))
    }

    fn after<T>(&self, result: redis::RedisResult<T>) -> redis::RedisResult<T> {
        if let Err(e) = &result
            && e.is_timeout()
        {
            self.store.replace(self.generation);
        }
        result
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let result = self.inner.req_packed_command(cmd).await;
            self.after(result)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let result = self.inner.req_packed_commands(cmd, offset, count).await;
            self.after(result)
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

fn failed(cmd: Option<&Cmd>, e: redis::RedisError) -> Error {
    let name = match cmd.and_then(|c| c.args_iter().next()) {
        Some(Arg::Simple(name)) => String::from_utf8_lossy(name).into_owned(),
        _ => "command".to_owned(),
    };
    Error::internal(format!("redis {name} failed"), e)
}

/// The reconnect policy: delays from 50 ms, at most 500 ms apart,
/// [`RECONNECT_ATTEMPTS`] attempts per reconnect, after which the next
/// request starts a new round.
fn config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_millis(500))
        .set_number_of_retries(RECONNECT_ATTEMPTS)
        .set_connection_timeout(Some(CONNECTION_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
}

fn tcp_settings() -> TcpSettings {
    TcpSettings::default()
        .set_nodelay(true)
        .set_keepalive(
            TcpKeepalive::new()
                .with_time(KEEPALIVE_IDLE)
                .with_interval(KEEPALIVE_INTERVAL)
                .with_retries(KEEPALIVE_PROBES),
        )
        .set_user_timeout(USER_TIMEOUT)
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}
