//! The runtime that every fmerge function is written against.
//!
//! A function is a binary crate that declares one async handler with
//! [`function!`]. The same crate then runs two ways:
//! - standalone, as an OpenFaaS function: [`serve`] speaks the of-watchdog
//!   HTTP contract, and [`invoke`] reaches other functions through the gateway;
//! - merged by `fmerge build`, inside another function's binary: [`invoke`]
//!   finds the callee in the dispatch table that fmerge wrote into the IR, and
//!   calls its handler in-process.
//!
//! The hooks that fmerge relies on are documented in `functions/README.md`
//! ("The merge contract"); the names live in [`hooks`].

mod config;
mod dispatch;
mod error;
pub mod hooks;
mod invoke;
mod serve;

pub use bytes::Bytes;
pub use config::{config_of, namespaced, variable_for};
pub use error::Error;
#[doc(hidden)]
pub use fmerge_contract as __contract;
pub use invoke::invoke;
pub use serve::serve;

/// What a handler returns: the response body, or an error that becomes a
/// JSON error reply.
pub type Reply = Result<Vec<u8>, Error>;

/// A handler's future, boxed so that every function's entry has one ABI.
pub type BoxReply = std::pin::Pin<Box<dyn std::future::Future<Output = Reply> + Send>>;

/// The signature of a function's exported entry (`fmerge.entry.<name>`).
pub type Entry = fn(Bytes) -> BoxReply;

/// Parses a JSON request body, or fails with a 400 that says what was wrong.
pub fn json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body)
        .map_err(|e| Error::bad_request(format!("malformed JSON request: {e}")))
}

/// Serializes a response body.
pub fn to_json<T: serde::Serialize>(value: &T) -> Reply {
    serde_json::to_vec(value).map_err(|e| Error::new(format!("cannot serialize response: {e}")))
}

/// Declares this crate's handler and makes the crate an OpenFaaS function.
///
/// `handler` is an `async fn(Bytes) -> Result<Vec<u8>, E>` where `E: Into<Error>`.
/// The macro emits the exported entry symbol `fmerge.entry.<package name>` and a
/// `main` that serves it.
#[macro_export]
macro_rules! function {
    ($handler:path) => {
        #[doc(hidden)]
        #[unsafe(export_name = concat!($crate::__contract::entry_prefix!(), env!("CARGO_PKG_NAME")))]
        pub fn __fmerge_entry(body: $crate::Bytes) -> $crate::BoxReply {
            ::std::boxed::Box::pin(async move {
                $handler(body).await.map_err(::std::convert::Into::into)
            })
        }

        fn main() {
            $crate::serve(env!("CARGO_PKG_NAME"), __fmerge_entry)
        }
    };
}

/// Reads a setting of this function: `config!("REDIS_URL", "redis://…")`.
///
/// Standalone, it reads the environment variable `REDIS_URL`. Merged into
/// another function's binary, it reads `<FUNCTION>__REDIS_URL` instead (for
/// example `SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL`), so a callee never sees the
/// caller's settings. Either way, an unset variable gives the literal default.
#[macro_export]
macro_rules! config {
    ($key:expr, $default:expr) => {
        $crate::config_of(env!("CARGO_PKG_NAME"), $key, $default)
    };
}
