//! The runtime that every fmerge function is written against.
//!
//! A function is a binary crate that declares one async handler with
//! [`function!`]. The same crate then runs two ways:
//! - standalone, as an OpenFaaS function: [`serve`] speaks the of-watchdog
//!   HTTP contract (same settings, health, drain, metrics; see
//!   `docs/operating.md`), and [`invoke`] reaches other functions through the
//!   gateway;
//! - merged by `fmerge build`, inside another function's binary: [`invoke`]
//!   finds the callee in the dispatch table that fmerge wrote into the IR, and
//!   calls its handler in-process.
//!
//! A handler has one of two shapes (see [`Handler`]): body in, body out, or
//! the whole HTTP [`Request`] in and a whole [`Response`] out.
//!
//! The hooks that fmerge relies on are documented in `functions/README.md`
//! ("The merge contract"); the names live in [`hooks`].

mod body;
mod call;
mod call_log;
mod callees;
mod connections;
mod dispatch;
mod error;
mod function_config;
mod handler;
pub mod hooks;
mod invoke;
mod isolation;
mod json;
mod limits;
mod metrics;
mod metrics_port;
mod process_metrics;
mod record;
mod request;
mod serve;
mod server_settings;

pub use bytes::Bytes;
pub use error::{Error, MAX_ECHO, MAX_MESSAGE};
#[doc(hidden)]
pub use fmerge_contract as __contract;
pub use function_config::{config_of, namespaced, variable_for};
pub use handler::{BodyShape, Handler, HttpShape, Input, run_handler};
pub use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
pub use invoke::{invoke, invoke_request};
pub use serve::serve;
pub use server_settings::{CallLimits, Row as SettingsRow, ServerSettings, parse_duration};

/// What a body-shaped handler returns: the response body, or an error that
/// becomes a JSON error reply.
pub type Reply = Result<Vec<u8>, Error>;

/// A whole HTTP request, as an HTTP-shaped handler sees it and as
/// [`invoke_request`] sends it: method, URI (path and query), headers, body.
pub type Request = http::Request<Bytes>;

/// A whole HTTP response: status, headers, body.
pub type Response = http::Response<Bytes>;

/// A body-shaped handler's future, boxed (for hand-written handlers that
/// name their future's type).
pub type BoxReply = std::pin::Pin<Box<dyn std::future::Future<Output = Reply> + Send>>;

/// An entry's future, boxed so that every function's entry has one ABI.
pub type BoxResponse = std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>>;

/// `Box::pin` of the future `make` builds, allocated first. `Box::pin(f)`
/// builds `f` before allocating (it must drop `f` if the allocation fails),
/// then copies its whole size into the box: the largest state it will ever
/// be in, kilobytes for a handler. Built in its box, only what it starts
/// with is written.
pub(crate) fn boxed<F>(make: impl FnOnce() -> F) -> std::pin::Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

/// The signature of a function's exported entry (`fmerge.entry.<name>`): the
/// whole request in (or an in-process `invoke`'s body, see [`Input`]), the
/// whole response out (errors already turned into their reply), the same
/// for an HTTP request and an in-process call.
pub type Entry = fn(Input) -> BoxResponse;

/// Parses a JSON request body, or fails with a 400 that says what was wrong
/// (with at most [`MAX_ECHO`] bytes of the body).
pub fn json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    json::parse(body).map_err(|e| Error::bad_request(format!("malformed JSON request: {e}")))
}

/// Parses the reply of `callee` (from [`invoke`]), or fails with a 500
/// `<callee> sent an unexpected reply: <serde's message>` (with at most
/// [`MAX_ECHO`] bytes of the reply).
pub fn callee_json<T: serde::de::DeserializeOwned>(callee: &str, body: &[u8]) -> Result<T, Error> {
    json::parse(body).map_err(|e| Error::new(format!("{callee} sent an unexpected reply: {e}")))
}

/// Runs a JSON-shaped handler (see [`function!`]) on a request body: the
/// body parsed with [`json`], the handler's value serialized with [`to_json`].
pub async fn run_json<T, U, F, Fut>(handler: F, body: &[u8]) -> Reply
where
    T: serde::de::DeserializeOwned,
    U: serde::Serialize,
    F: FnOnce(T) -> Fut,
    Fut: std::future::Future<Output = Result<U, Error>>,
{
    to_json(&handler(json(body)?).await?)
}

/// Serializes a response body.
pub fn to_json<T: serde::Serialize>(value: &T) -> Reply {
    serde_json::to_vec(value).map_err(|e| Error::new(format!("cannot serialize response: {e}")))
}

/// Declares this crate's handler and makes the crate an OpenFaaS function.
///
/// `handler` is either
/// - an `async fn(Bytes) -> Result<Vec<u8>, E>`: the body in, a 200
///   `application/json` body out; or
/// - an `async fn(Request) -> Result<Response, E>`: the whole request in,
///   status, headers and body out,
///
/// where `E: Into<Error>`. The macro emits the exported entry symbol
/// `fmerge.entry.<package name>` and a `main` that serves it.
///
/// `function!(json handler)` takes an `async fn(T) -> Result<U, Error>` with
/// `T: Deserialize` and `U: Serialize`: the body is parsed into `T` (a 400
/// that says what was wrong if it is not), and `U` is the JSON reply.
#[macro_export]
macro_rules! function {
    (json $handler:path) => {
        async fn __fmerge_json(body: $crate::Bytes) -> $crate::Reply {
            $crate::run_json($handler, &body).await
        }

        $crate::function!(__fmerge_json);
    };
    ($handler:path) => {
        #[doc(hidden)]
        #[unsafe(export_name = concat!($crate::__contract::entry_prefix!(), env!("CARGO_PKG_NAME")))]
        pub fn __fmerge_entry(input: $crate::Input) -> $crate::BoxResponse {
            $crate::run_handler(env!("CARGO_PKG_NAME"), $handler, input)
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
