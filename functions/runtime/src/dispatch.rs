//! In-process dispatch to merged callees.
//!
//! The table is a mutable global so that the optimizer of the runtime crate
//! cannot fold its emptiness into `invoke`; the merger replaces it with a
//! constant, after which the optimizer may fold lookups by constant name.

use crate::call::{self, Call};
use crate::hooks::{Route, Routes};
use crate::{Entry, Error, Request, Response, metrics};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

#[unsafe(export_name = fmerge_contract::routes_symbol!())]
#[used]
static mut ROUTES: Routes = Routes {
    routes: std::ptr::null(),
    len: 0,
};

/// The merged callees: empty in an unmerged binary.
fn routes() -> &'static [Route] {
    // SAFETY: nothing in Rust writes the table; the merger sets it at build
    // time to `len` valid routes (reading through the raw pointer makes no
    // reference to the `static mut`).
    unsafe {
        let table = &raw const ROUTES;
        if (*table).len == 0 {
            return &[];
        }
        std::slice::from_raw_parts((*table).routes, (*table).len)
    }
}

fn name(route: &Route) -> &'static [u8] {
    // SAFETY: the merger writes each name as `len` bytes of UTF-8 in a constant.
    unsafe { std::slice::from_raw_parts(route.name, route.len) }
}

/// The entry of a merged callee, if `function` was merged into this binary.
/// OpenFaaS's `<name>.<namespace>` form names the same function, so it is
/// dispatched in-process too (the merged callee is the one named).
pub(crate) fn lookup(function: &str) -> Option<Entry> {
    let routes = routes();
    if routes.is_empty() {
        return None;
    }
    let base = function.split_once('.').map_or(function, |(name, _)| name);
    routes
        .iter()
        .find_map(|r| (name(r) == base.as_bytes()).then_some(r.entry))
}

/// The names of the functions merged into this binary.
pub(crate) fn merged() -> Vec<String> {
    routes()
        .iter()
        .map(|r| String::from_utf8_lossy(name(r)).into_owned())
        .collect()
}

/// Runs an entry and turns a panic into a 500 reply instead of unwinding
/// into the caller or killing the connection.
pub(crate) async fn run_guarded(function: &str, entry: Entry, request: Request) -> Response {
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| entry(request))) {
        Ok(fut) => fut,
        Err(panic) => return Error::panicked(function, &*panic).into_response(function),
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(reply) => reply,
        Err(panic) => Error::panicked(function, &*panic).into_response(function),
    }
}

/// Calls a merged callee in-process, as the callee's own server would have
/// run it: under its name (logs, metrics, the call context of its own
/// invokes), counted per caller, and replied with the same status, headers
/// and body.
pub(crate) async fn call(
    function: &str,
    entry: Entry,
    request: Request,
) -> Result<Response, Error> {
    let base = function.split_once('.').map_or(function, |(name, _)| name);
    let caller = call::caller_of(request.headers());
    let method = request.method().clone();
    let context = Call::new(base, request.headers());
    let in_flight = metrics::started(base);
    let started = Instant::now();
    let response = match isolated(base) {
        Some(pool) => {
            let name = base.to_string();
            pool.spawn(context.scope(async move { run_guarded(&name, entry, request).await }))
                .await
                .map_err(|e| Error::unreachable(function, format!("it did not finish: {e}")))?
        }
        None => context.scope(run_guarded(base, entry, request)).await,
    };
    drop(in_flight);
    metrics::finished(base, &caller, &method, response.status(), started.elapsed());
    // What HTTP does to a reply to HEAD: no body.
    let mut response = response;
    if method == http::Method::HEAD {
        *response.body_mut() = crate::Bytes::new();
    }
    Ok(response)
}

/// The worker threads of a callee listed in `FMERGE_ISOLATE` (comma
/// separated names): merged, a callee that blocks its thread (a `sleep`,
/// blocking I/O) would hold up the caller's own requests, which unmerged ran
/// in another process. Run on threads of its own, it only delays itself, at
/// the cost of a hop between thread pools per call. `FMERGE_ISOLATE_THREADS`
/// sets the threads per isolated callee (default 2).
fn isolated(function: &str) -> Option<tokio::runtime::Handle> {
    static POOLS: std::sync::OnceLock<Vec<(String, tokio::runtime::Runtime)>> =
        std::sync::OnceLock::new();
    let pools = POOLS.get_or_init(|| {
        let Ok(list) = std::env::var("FMERGE_ISOLATE") else { return Vec::new() };
        let threads = match std::env::var("FMERGE_ISOLATE_THREADS") {
            Err(_) => 2,
            Ok(t) => t.trim().parse().ok().filter(|&t: &usize| t > 0).unwrap_or_else(|| {
                eprintln!("fmerge: FMERGE_ISOLATE_THREADS={t:?} is not a positive number; using 2");
                2
            }),
        };
        let merged = merged();
        list.split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .filter(|name| {
                let known = merged.iter().any(|m| m == name);
                if !known {
                    eprintln!("fmerge: FMERGE_ISOLATE names {name}, which is not merged into this binary ({}); it is ignored", merged.join(", "));
                }
                known
            })
            .filter_map(|name| {
                let pool = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name(format!("fmerge-{name}"))
                    .enable_all()
                    .build()
                    .map_err(|e| eprintln!("fmerge: cannot start the isolated threads of {name}: {e}; it runs on the caller's"))
                    .ok()?;
                Some((name.to_string(), pool))
            })
            .collect()
    });
    let base = function.split_once('.').map_or(function, |(name, _)| name);
    pools
        .iter()
        .find(|(name, _)| name == base)
        .map(|(_, pool)| pool.handle().clone())
}
