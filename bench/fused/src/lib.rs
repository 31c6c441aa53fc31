//! The hand-fused baseline: "the limit of merging", for `bench/run`.
//!
//! Two programs, each ONE process serving its caller with the runtime's own
//! server (`fmerge_runtime::serve`), its callees called as plain async Rust
//! functions: no dispatch table, no boxed entry per call, no HTTP.
//! - `fused-pair`: write-home-timeline + social-graph-get-followers;
//! - `fused-chain`: compose-post and the 10 functions below it.
//!
//! What a merged binary costs over this is what fmerge's dispatch costs.
//!
//! **Generated, not copied.** `build.rs` reads each member's
//! `functions/<name>/src/main.rs` and writes it, with three checked
//! mechanical rewrites (`src/rewrite.rs`), as one module of the program, so
//! the handlers stay a single source of truth: the baseline cannot measure
//! stale code, and a function that no longer fits the rewrites fails the
//! build with a message saying so.
//!
//! Same replies and Redis state as the unmerged functions on success
//! (`tests/fused.rs`). Failures differ, by design of a baseline: a callee's
//! error reaches its caller as is (not as the `Error::rpc` an HTTP or merged
//! call gives), and a callee's panic is the whole request's panic.

/// What `rt::function!(handle)` (or `(json handle)`) becomes in a fused member: the handler,
/// callable from the rest of the program as `fused_handle`, with neither the
/// `main` nor the exported `fmerge.entry.<name>` symbol that `function!`
/// emits (one program has one `main`).
#[macro_export]
macro_rules! function {
    (json $handler:path) => {
        pub(crate) async fn fused_handle(body: ::fmerge_runtime::Bytes) -> ::fmerge_runtime::Reply {
            ::fmerge_runtime::run_json($handler, &body).await
        }
    };
    ($handler:path) => {
        pub(crate) async fn fused_handle(body: ::fmerge_runtime::Bytes) -> ::fmerge_runtime::Reply {
            $handler(body).await.map_err(::std::convert::Into::into)
        }
    };
}

/// What `rt::config!(KEY, DEFAULT)` becomes in a fused member: the plain
/// variable `KEY`, else the default, exactly what the function reads when it
/// runs standalone. (`rt::config!` here would call `config_of("fmerge-fused",
/// …)`, and since `fmerge-fused` is not the group's caller that `serve`
/// sets, it would read `FMERGE_FUSED__KEY`.)
#[macro_export]
macro_rules! config {
    ($key:expr, $default:expr) => {
        ::std::env::var($key).unwrap_or_else(|_| ::std::string::String::from($default))
    };
}

pub mod groups;
#[cfg(test)]
mod rewrite;
