//! The entry fmerge adds for a function in a handler-library template (a
//! library whose `handle` the template's `main` serves with hyper): a
//! package of its own in the generated workspace, beside the function's,
//! that calls `handler::handle` on a runtime of its own and exports it as
//! `fmerge.handle.<function>` (with `fmerge.handle.<function>.shape`, and
//! `fmerge.handle.<function>.now`, which polls it once on the calling
//! thread and leaves the rest to the runtime), so
//! that the merged binary's shim answers a call to that function by
//! calling its `handle`, without its template's server and without a
//! socket (fmerge-shim's `handles`).
//!
//! It is written only where the template's `main` builds on the crates it
//! uses (hyper 1, bytes 1, tokio 1 with its multi-threaded runtime), with
//! their versions and features as the template asks for them, so that it
//! adds no crate and no feature to the build. Which shape `handle` has is
//! decided by the compiler, not by reading its source: `async fn(Request<Bytes>)
//! -> Response<Bytes>` (its future `Send`, as the template's server needs),
//! the same without `async`, or anything else, for which the entry reports
//! shape 0 and the shim starts the template's server instead.
//!
//! The entry's ABI is fmerge-shim's `handles::Handle`, written on both
//! sides: what the shim passes and what this code reads must agree.

use anyhow::{Context as _, Result};
use cargo_metadata::{Dependency, DependencyKind, Package};
use std::path::Path;

/// The crates the entry's code uses, each at major version 1, from the
/// template's `main`'s own dependencies.
const CRATES: [&str; 3] = ["hyper", "bytes", "tokio"];

/// The package name of `function`'s entry.
pub(super) fn package_name(function: &str) -> String {
    format!("{function}-fmerge-handle")
}

/// The dependencies of the template's `main` package `main` that the entry
/// takes over, if it has them all (see the module's doc); `None` if not.
pub(super) fn takes(main: &Package) -> Option<Vec<&Dependency>> {
    let mut found = Vec::new();
    for name in CRATES {
        let d = main.dependencies.iter().find(|d| {
            d.kind == DependencyKind::Normal
                && d.target.is_none()
                && !d.optional
                && d.rename.is_none()
                && d.name == name
                && d.path.is_none()
                && d.req.comparators.first().is_some_and(|c| c.major == 1)
        })?;
        found.push(d);
    }
    let tokio = found[2];
    tokio
        .features
        .iter()
        .any(|f| f == "rt-multi-thread" || f == "full")
        .then_some(found)
}

/// Writes `text` to `path` unless it holds it already: an unchanged file
/// keeps its time, which is what tells cargo the crate is fresh.
pub(super) fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if std::fs::read(path).is_ok_and(|had| had == text.as_bytes()) {
        return Ok(());
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The entry's `lib.rs` for `function` (its package name).
pub(super) fn source(function: &str) -> String {
    let call = fmerge_contract::handle_symbol(function);
    ENTRY
        .replace("{function}", function)
        .replace("{call}", &call)
        .replace("{shape}", &format!("{call}.shape"))
        .replace("{now}", &format!("{call}.now"))
}

/// The entry's code (see the module's doc); `{function}`, `{call}`,
/// `{shape}` and `{now}` are filled in by [`source`].
const ENTRY: &str = r#"//! Written by fmerge for {function}: its library's `handle`, which its
//! template's `main` serves, called directly by the merged binary's shim.
// Of the shapes below, the compiler uses one.
#![allow(dead_code)]
use bytes::Bytes;
use hyper::{Request, Response};
use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::{OnceLock, mpsc};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Where a reply goes: the shim's context, the status, the headers as
/// `Name: value\r\n` lines, the body.
type Reply = unsafe extern "C" fn(*mut c_void, u16, *const u8, usize, *const u8, usize);
/// Where [`now`]'s outcome goes: the shim's context, 0 (a reply) or 1
/// (`handle` panicked) or 3 (no `http::Request`), then as [`Reply`].
type Done = unsafe extern "C" fn(*mut c_void, i32, u16, *const u8, usize, *const u8, usize);
type Sent = mpsc::Sender<Response<Bytes>>;
type Started = Pin<Box<dyn Future<Output = Response<Bytes>> + Send>>;

/// The runtime `handle` runs on, as the template's `#[tokio::main]` one,
/// made at the first call (on a thread acting for the function, so that
/// its workers do too).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("fmerge: a runtime for {function}'s handle")
    })
}

/// `handle`'s shape, chosen by the compiler: the first of the traits whose
/// impl holds, by autoref (async, then sync, then unknown).
struct Shape<F>(F);

trait ViaAsync {
    fn shape(&self) -> i32;
    fn start(&self, req: Request<Bytes>, tx: Sent);
    fn future(&self, req: Request<Bytes>) -> Option<Started>;
}
impl<F, Fut> ViaAsync for &&Shape<F>
where
    F: Fn(Request<Bytes>) -> Fut,
    Fut: Future<Output = Response<Bytes>> + Send + 'static,
{
    fn shape(&self) -> i32 {
        1
    }
    fn start(&self, req: Request<Bytes>, tx: Sent) {
        let reply = (self.0)(req);
        runtime().spawn(async move {
            let _ = tx.send(reply.await);
        });
    }
    fn future(&self, req: Request<Bytes>) -> Option<Started> {
        Some(Box::pin((self.0)(req)))
    }
}

trait ViaSync {
    fn shape(&self) -> i32;
    fn start(&self, req: Request<Bytes>, tx: Sent);
    fn future(&self, _req: Request<Bytes>) -> Option<Started> {
        None
    }
}
impl<F> ViaSync for &Shape<F>
where
    F: Fn(Request<Bytes>) -> Response<Bytes> + Copy + Send + 'static,
{
    fn shape(&self) -> i32 {
        2
    }
    fn start(&self, req: Request<Bytes>, tx: Sent) {
        let f = self.0;
        runtime().spawn_blocking(move || {
            let _ = tx.send(f(req));
        });
    }
}

trait Unknown {
    fn shape(&self) -> i32 {
        0
    }
    fn start(&self, _req: Request<Bytes>, _tx: Sent) {}
    fn future(&self, _req: Request<Bytes>) -> Option<Started> {
        None
    }
}
impl<F> Unknown for Shape<F> {}

/// The `n` bytes at `p`.
///
/// # Safety
/// `p` is valid for `n` bytes of reads, for as long as the slice is used.
unsafe fn bytes_at<'a>(p: *const u8, n: usize) -> &'a [u8] {
    match n {
        0 => &[],
        // SAFETY: the caller's promise.
        _ => unsafe { std::slice::from_raw_parts(p, n) },
    }
}

/// 1: `async fn handle(Request<Bytes>) -> Response<Bytes>`; 2: the same,
/// not async; 0: another shape, which [`call`] does not take.
#[unsafe(export_name = "{shape}")]
pub extern "C" fn shape() -> i32 {
    (&&&Shape(handler::handle)).shape()
}

/// The request the shim passed (method, target, `Name: value\r\n` header
/// lines, body), as the template's server would give it to `handle`.
///
/// # Safety
/// Each pointer with its length is valid for reads.
#[allow(clippy::too_many_arguments)]
unsafe fn request(
    method: *const u8,
    method_len: usize,
    target: *const u8,
    target_len: usize,
    headers: *const u8,
    headers_len: usize,
    body: *const u8,
    body_len: usize,
) -> Option<Request<Bytes>> {
    // SAFETY: the caller's promise.
    let part = |p: *const u8, n: usize| unsafe { bytes_at(p, n) };
    let mut builder = Request::builder()
        .method(part(method, method_len))
        .uri(part(target, target_len));
    for line in part(headers, headers_len).split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            builder = builder.header(&line[..colon], line[colon + 1..].trim_ascii());
        }
    }
    builder.body(Bytes::copy_from_slice(part(body, body_len))).ok()
}

/// `response` given to `give` as (status, header lines, body).
fn give_parts(response: Response<Bytes>, give: impl FnOnce(u16, &[u8], &[u8])) {
    let (parts, body) = response.into_parts();
    let mut head = Vec::new();
    for (name, value) in &parts.headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    give(parts.status.as_u16(), &head, &body);
}

/// Calls `handle` with the request (method, target, `Name: value\r\n`
/// header lines, body), waiting at most `limit_ms` (0: no limit); on its
/// reply, calls `reply` with it and returns 0. 1: `handle` panicked (its
/// task ended without a reply); 2: past the limit (it goes on, as it would
/// behind its server); 3: the request does not make an `http::Request`.
///
/// # Safety
/// Each pointer with its length is valid for reads; `reply` is called once
/// at most, with `ctx`, before this returns.
#[unsafe(export_name = "{call}")]
pub unsafe extern "C" fn call(
    method: *const u8,
    method_len: usize,
    target: *const u8,
    target_len: usize,
    headers: *const u8,
    headers_len: usize,
    body: *const u8,
    body_len: usize,
    limit_ms: u64,
    ctx: *mut c_void,
    reply: Reply,
) -> i32 {
    // SAFETY: the caller's promise.
    let req = unsafe {
        request(method, method_len, target, target_len, headers, headers_len, body, body_len)
    };
    let Some(req) = req else {
        return 3;
    };
    let (tx, rx) = mpsc::channel();
    (&&&Shape(handler::handle)).start(req, tx);
    let got = match limit_ms {
        0 => rx.recv().map_err(|_| 1),
        ms => rx.recv_timeout(Duration::from_millis(ms)).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => 2,
            mpsc::RecvTimeoutError::Disconnected => 1,
        }),
    };
    match got {
        Ok(response) => {
            give_parts(response, |status, head, body| {
                // SAFETY: the caller's promise.
                unsafe { reply(ctx, status, head.as_ptr(), head.len(), body.as_ptr(), body.len()) }
            });
            0
        }
        Err(code) => code,
    }
}

/// The shim's context, sent to the runtime with the rest of `handle`.
struct Ctx(*mut c_void);
// SAFETY: the shim's promise: `done` may be called with it from any thread.
unsafe impl Send for Ctx {}

/// Gives `got` (a reply, or 1: `handle` panicked) to `done`, once.
///
/// # Safety
/// `ctx` and `done` are the shim's, not yet given an outcome.
unsafe fn finish(ctx: *mut c_void, done: Done, got: Result<Response<Bytes>, i32>) {
    match got {
        Ok(response) => give_parts(response, |status, head, body| {
            // SAFETY: the caller's promise.
            unsafe { done(ctx, 0, status, head.as_ptr(), head.len(), body.as_ptr(), body.len()) }
        }),
        // SAFETY: the caller's promise.
        Err(code) => unsafe { done(ctx, code, 0, std::ptr::null(), 0, std::ptr::null(), 0) },
    }
}

/// Polls an async `handle` once on the calling thread, inside its runtime's
/// context: 0 when that poll ended it (its reply, or its panic, given to
/// `done` before returning); 1 when it waits, and the rest runs on its
/// runtime, which gives the outcome to `done`, once, from one of its
/// threads; 2 for a `handle` that is not async (nothing done: the shim
/// uses [`call`]). The limit is the shim's to keep.
///
/// # Safety
/// Each pointer with its length is valid for reads during the call;
/// `done` may be called with `ctx` from any thread.
#[unsafe(export_name = "{now}")]
pub unsafe extern "C" fn now(
    method: *const u8,
    method_len: usize,
    target: *const u8,
    target_len: usize,
    headers: *const u8,
    headers_len: usize,
    body: *const u8,
    body_len: usize,
    ctx: *mut c_void,
    done: Done,
) -> i32 {
    if (&&&Shape(handler::handle)).shape() != 1 {
        return 2;
    }
    // SAFETY: the caller's promise.
    let req = unsafe {
        request(method, method_len, target, target_len, headers, headers_len, body, body_len)
    };
    let Some(req) = req else {
        // SAFETY: the caller's promise.
        unsafe { finish(ctx, done, Err(3)) };
        return 0;
    };
    let runtime = runtime();
    let _entered = runtime.enter();
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut reply = (&&&Shape(handler::handle)).future(req)?;
        match reply.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(response) => Some(Ok(response)),
            Poll::Pending => Some(Err(reply)),
        }
    }));
    match first {
        Ok(None) => 2,
        // SAFETY: the caller's promise, for each.
        Ok(Some(Ok(response))) => {
            unsafe { finish(ctx, done, Ok(response)) };
            0
        }
        Err(_) => {
            unsafe { finish(ctx, done, Err(1)) };
            0
        }
        Ok(Some(Err(reply))) => {
            let ctx = Ctx(ctx);
            // One task, not `handle`'s and another awaiting it: each task
            // spawned from outside the runtime wakes a worker of its own.
            runtime.spawn(async move {
                let ctx = ctx;
                let got = Unwinding(reply).await;
                // SAFETY: the caller's promise; this is the one outcome.
                unsafe { finish(ctx.0, done, got) };
            });
            1
        }
    }
}

/// `handle`'s future, its panic caught: `Err(1)` once it panicked (then
/// never polled again), as a task's `JoinError` would say it.
struct Unwinding(Started);

impl Future for Unwinding {
    type Output = Result<Response<Bytes>, i32>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let reply = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reply.poll(cx))) {
            Ok(Poll::Ready(response)) => Poll::Ready(Ok(response)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(1)),
        }
    }
}
"#;
