//! The Redis connection of a socialNetwork function: one reconnecting
//! connection per function (the redis crate's `ConnectionManager`), created
//! on first use and shared by its requests, plus the user records that
//! `register-user`, `register-user-with-id` and `user-login` share ([`users`]).
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
//! it is down, not every request after.

use fmerge_runtime::Error;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;
use tokio::sync::OnceCell;

pub use redis;

pub mod users;

/// What a function queries: clone it per request (it is a handle).
pub type Conn = ConnectionManager;

/// A function's Redis: `static STORE: Store = Store::new();`.
pub struct Store(OnceCell<ConnectionManager>);

impl Store {
    pub const fn new() -> Self {
        Store(OnceCell::const_new())
    }

    /// The connection, created on the first call with the URL `url()` gives.
    /// It connects lazily: a Redis that is down fails the requests that need
    /// it (after the manager's retries), and the next ones reconnect.
    pub async fn conn(&self, url: impl FnOnce() -> String) -> Result<Conn, Error> {
        self.0
            .get_or_try_init(|| async {
                let url = url();
                let client = redis::Client::open(url.as_str()).map_err(|e| {
                    Error::new(format!(
                        "bad REDIS_URL {url}: {e} (expected redis://host:port/)"
                    ))
                })?;
                ConnectionManager::new_lazy_with_config(client, config()).map_err(|e| {
                    Error::new(format!("cannot set up the Redis connection to {url}: {e}"))
                })
            })
            .await
            .cloned()
    }
}

/// Reconnect quickly: the delays grow from 50 ms but never past 1 s, so a
/// Redis that is back is found within about a second; 6 attempts per
/// reconnect, after which the next request starts a new round.
fn config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_secs(1))
        .set_number_of_retries(6)
        .set_connection_timeout(Some(Duration::from_secs(2)))
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}
