//! The Redis connection of a socialNetwork function: one multiplexed
//! connection per function, opened on first use and shared by its requests.
//!
//! The address is not read here: each function passes a closure that calls
//! `config!` in its own crate, so that the setting is that function's
//! (`<FUNCTION>__REDIS_URL` once merged) and the literal default lives in its
//! own code, where `fmerge build --rewrite` can find it.

use fmerge_runtime::Error;
use redis::aio::MultiplexedConnection;
use tokio::sync::OnceCell;

pub use redis;

/// A function's Redis: `static STORE: Store = Store::new();`.
pub struct Store(OnceCell<MultiplexedConnection>);

impl Store {
    pub const fn new() -> Self {
        Store(OnceCell::const_new())
    }

    /// The connection, opened on the first call with the URL `url()` gives.
    pub async fn conn(&self, url: impl FnOnce() -> String) -> Result<MultiplexedConnection, Error> {
        self.0
            .get_or_try_init(|| async {
                let url = url();
                let client = redis::Client::open(url.as_str())
                    .map_err(|e| Error::new(format!("bad REDIS_URL {url}: {e}")))?;
                client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| Error::new(format!("cannot connect to Redis at {url}: {e}")))
            })
            .await
            .cloned()
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}
