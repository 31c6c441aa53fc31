//! One request, as the server serves it: the probes, the in-flight limit,
//! the body limit and budget, then the handler under `exec_timeout`; counted
//! and logged however it ends. The refusals are shared with in-process
//! calls of merged callees (`dispatch`), so that a callee's guards answer
//! the same merged or not.

use crate::backstop::Watched;
use crate::call::{self, Call};
use crate::serve::Server;
use crate::settings::parse_duration;
use crate::{Bytes, Error, Request, Response, dispatch, metrics};
use bytes::BytesMut;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;

pub(crate) type HttpResponse = hyper::Response<Full<Bytes>>;

/// The status counted for a request whose client went away before its
/// reply (nginx's "client closed request").
pub(crate) const CLIENT_CLOSED: u16 = 499;

/// Serves one request of a connection; `watched` is that connection as the
/// front's backstop sees it (`None` on the front's own connections).
pub(crate) async fn handle(
    server: &'static Server,
    req: hyper::Request<Incoming>,
    watched: Option<&Watched>,
) -> Result<HttpResponse, Infallible> {
    let path = req.uri().path();
    if path.starts_with("/_/") {
        return Ok(probe(server, req.method(), path));
    }
    let log = server.settings.access_log.then(|| {
        let id = call::call_id(req.headers()).map(str::to_string);
        Box::new((req.uri().clone(), id))
    });
    let record = Record::start(
        server.name,
        call::caller_of(req.headers()),
        req.method().clone(),
        log,
    );
    let (response, record) = guarded(server, req, record, watched).await;
    // None: the front's backstop answered and counted it.
    if let Some(record) = record {
        record.finish(response.status(), response.body().len());
    }
    let (parts, body) = response.into_parts();
    Ok(hyper::Response::from_parts(parts, Full::new(body)))
}

/// Counts (and with the access log, logs) one request of `function` when
/// it ends: with its reply's status, or [`CLIENT_CLOSED`] when it is
/// dropped first (the client disconnected, or the caller gave up).
pub(crate) struct Record {
    function: &'static str,
    caller: &'static str,
    method: Method,
    started: Instant,
    /// The URI and call id for the access log line, when it is on (boxed:
    /// a record lives in every call's state, the log is mostly off).
    log: Option<Box<(Uri, Option<String>)>>,
    done: bool,
}

impl Record {
    pub(crate) fn start(
        function: &'static str,
        caller: &'static str,
        method: Method,
        log: Option<Box<(Uri, Option<String>)>>,
    ) -> Record {
        Record {
            function,
            caller,
            method,
            started: Instant::now(),
            log,
            done: false,
        }
    }

    pub(crate) fn finish(mut self, status: StatusCode, bytes: usize) {
        self.done = true;
        self.count(status, bytes);
    }

    fn count(&self, status: StatusCode, bytes: usize) {
        let elapsed = self.started.elapsed();
        metrics::finished(self.function, self.caller, &self.method, status, elapsed);
        if let Some((uri, call_id)) = self.log.as_deref() {
            let call_id = call_id
                .as_deref()
                .map(|id| format!(" call_id={id}"))
                .unwrap_or_default();
            eprintln!(
                "{}: {} {uri} {} {bytes}B {:.4}s caller={}{call_id}",
                self.function,
                self.method,
                status.as_u16(),
                elapsed.as_secs_f64(),
                self.caller,
            );
        }
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if !self.done {
            let closed = StatusCode::from_u16(CLIENT_CLOSED).expect("a valid status");
            self.count(closed, 0);
        }
    }
}

/// `/_/health` and `/_/ready`, as of-watchdog answers them.
fn probe(server: &Server, method: &Method, path: &str) -> HttpResponse {
    let s = &server.settings;
    let (status, body) = if path != "/_/health" && path != "/_/ready" {
        (StatusCode::NOT_FOUND, "not found")
    } else if method != Method::GET {
        (StatusCode::METHOD_NOT_ALLOWED, "")
    } else if server.draining.load(Ordering::SeqCst) || (path == "/_/ready" && !dispatch::ready()) {
        (StatusCode::SERVICE_UNAVAILABLE, "")
    } else if path == "/_/ready"
        && s.max_inflight > 0
        && server.in_flight.load(Ordering::SeqCst) >= s.max_inflight
    {
        (StatusCode::TOO_MANY_REQUESTS, "")
    } else {
        (StatusCode::OK, "OK")
    };
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r
}

/// One function request: the in-flight limit, the body limit and budget
/// within read timeout, then the handler under exec_timeout. Gives `record`
/// back unless the backstop took it.
async fn guarded(
    server: &'static Server,
    req: hyper::Request<Incoming>,
    record: Record,
    watched: Option<&Watched>,
) -> (Response, Option<Record>) {
    let s = &server.settings;
    let name = server.name;
    let Some(slot) = Slot::enter(&server.in_flight, s.max_inflight) else {
        return (too_many(s.max_inflight), Some(record));
    };
    let admitted = Admitted {
        _slot: slot,
        _gauge: metrics::started(name),
    };
    let (parts, body) = req.into_parts();
    // The body's bytes count against the budget until the handler is done with them.
    let (body, _held) = match read_body(server, &parts.headers, body).await {
        Ok(read) => read,
        Err(refusal) => return (refusal, Some(record)),
    };
    let request = Request::from_parts(parts, body);
    let limit = exec_timeout(s.exec_timeout, request.headers());
    let deadline = deadline_after(limit);
    let context = Call::new(name, request.headers(), deadline);
    // Boxed once here: the handler's future is large, and each await below
    // would otherwise copy it into its own state.
    let run =
        crate::boxed(|| context.scope(dispatch::run_guarded(name, server.entry, request.into())));
    match watched {
        None => (within(name, limit, deadline, run).await, Some(record)),
        Some(watched) => {
            let running = watched.running(limit, record, admitted);
            let response = within(name, limit, deadline, run).await;
            (response, running.done())
        }
    }
}

/// When a call limited to `limit` (zero: no limit) and starting now ends.
pub(crate) fn deadline_after(limit: Duration) -> Option<tokio::time::Instant> {
    (!limit.is_zero()).then(|| tokio::time::Instant::now() + limit)
}

/// Runs a handler's future until `deadline` (`None`: no timer here), the
/// end of its `limit`; past it the reply is 504 and the future is dropped.
pub(crate) async fn within(
    function: &str,
    limit: Duration,
    deadline: Option<tokio::time::Instant>,
    run: impl Future<Output = Response>,
) -> Response {
    let Some(deadline) = deadline else {
        return run.await;
    };
    match tokio::time::timeout_at(deadline, run).await {
        Ok(response) => response,
        Err(_) => timed_out(function, limit),
    }
}

/// Awaits a handler's task (on an isolated callee's threads) as [`within`]
/// runs a future. Past its deadline the reply is 504 and the task is
/// abandoned; so it is when the caller of this future goes away (a client
/// that disconnected, a caller that timed out), as of-watchdog abandons its
/// upstream.
pub(crate) async fn run_within(
    function: &str,
    limit: Duration,
    deadline: Option<tokio::time::Instant>,
    task: JoinHandle<Response>,
) -> Response {
    let mut task = AbortOnDrop(task);
    let joined = match deadline {
        None => Ok((&mut task.0).await),
        Some(deadline) => tokio::time::timeout_at(deadline, &mut task.0).await,
    };
    match joined {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            Error::new(format!("function {function} did not finish: {e}")).into_response(function)
        }
        Err(_) => timed_out(function, limit),
    }
}

struct AbortOnDrop(JoinHandle<Response>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A request counted in flight, released however the request ends.
pub(crate) struct Slot<'a>(&'a AtomicUsize);

/// A request past `max_inflight`, counted in flight until it is answered:
/// by its handler, or by the front's backstop, which frees the slot even
/// while the abandoned handler still blocks (as of-watchdog's limit counts
/// its own requests, not its upstream's).
pub(crate) struct Admitted {
    _slot: Slot<'static>,
    _gauge: metrics::InFlight,
}

impl<'a> Slot<'a> {
    /// Enters unless `limit` (0: none) requests are in flight already:
    /// then the reply is [`too_many`].
    pub(crate) fn enter(count: &'a AtomicUsize, limit: usize) -> Option<Slot<'a>> {
        let slot = Slot(count);
        let now = count.fetch_add(1, Ordering::SeqCst) + 1;
        (limit == 0 || now <= limit).then_some(slot)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

const X_TIMEOUT: http::HeaderName = http::HeaderName::from_static("x-timeout");

/// `exec_timeout`, lowered by a request's `X-Timeout` (as of-watchdog does).
/// It can only lower it: zero, or anything that is not a duration, is
/// ignored (of-watchdog lets `X-Timeout: 0` lift the limit).
pub(crate) fn exec_timeout(configured: Duration, headers: &http::HeaderMap) -> Duration {
    headers
        .get(&X_TIMEOUT)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_duration(v).ok())
        .filter(|d| !d.is_zero() && (configured.is_zero() || *d < configured))
        .unwrap_or(configured)
}

/// 429 beyond `max_inflight`, worded as of-watchdog words it.
pub(crate) fn too_many(limit: usize) -> Response {
    let mut r = Response::new(Bytes::from(format!(
        "Concurrent request limit exceeded. Max concurrent requests: {limit}\n"
    )));
    *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// 413 for a body over `max_body_size`.
pub(crate) fn too_large(limit: usize) -> Response {
    Error::with_status(
        413,
        format!("request body larger than max_body_size ({limit} bytes)"),
    )
    .into_response_quiet()
}

/// 504 for a handler still running at `exec_timeout`.
pub(crate) fn timed_out(function: &str, limit: Duration) -> Response {
    Error::with_status(
        504,
        format!("function {function} did not finish within exec_timeout ({limit:?})"),
    )
    .into_response(function)
}

/// A reply after which the connection is closed (its request was not read whole).
fn closing(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// The budget is counted in KiB, so that one request's share fits a `u32`.
const BUDGET_UNIT: usize = 1024;

/// Takes `bytes` more of the body budget into `held`; false when the
/// budget has not that much left (the reply is then [`over_budget`]).
fn hold(server: &Server, held: &mut Option<OwnedSemaphorePermit>, bytes: usize) -> bool {
    if server.settings.max_buffered_bytes == 0 || bytes == 0 {
        return true;
    }
    let units = u32::try_from(bytes.div_ceil(BUDGET_UNIT)).unwrap_or(u32::MAX);
    let Ok(permit) = server.buffered.clone().try_acquire_many_owned(units) else {
        return false;
    };
    match held {
        Some(h) => h.merge(permit),
        None => *held = Some(permit),
    }
    true
}

/// 503 for a body past `max_buffered_bytes`.
fn over_budget(server: &Server) -> Response {
    let mut r = Error::with_status(
        503,
        format!(
            "the request bodies in memory would exceed max_buffered_bytes ({} bytes); retry later",
            server.settings.max_buffered_bytes
        ),
    )
    .into_response_quiet();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    closing(r)
}

/// The budget's size in its units, for the semaphore.
pub(crate) fn budget_units(max_buffered_bytes: usize) -> usize {
    (max_buffered_bytes / BUDGET_UNIT).max(1)
}

/// Reads a body of at most `max_body_size` bytes within `read_timeout`, into
/// one buffer (no second copy), holding its size of the body budget. A
/// declared length over the limit, or over what is left of the budget, is
/// refused before a byte of the body is read.
async fn read_body(
    server: &Server,
    headers: &http::HeaderMap,
    mut body: Incoming,
) -> Result<(Bytes, Option<OwnedSemaphorePermit>), Response> {
    let s = &server.settings;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > s.max_body_size as u64) {
        return Err(closing(too_large(s.max_body_size)));
    }
    let declared = declared.map(|n| n as usize);
    let mut held = None;
    if !hold(server, &mut held, declared.unwrap_or(0)) {
        return Err(over_budget(server));
    }
    let mut buffer = BytesMut::with_capacity(declared.unwrap_or(0));
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                Error::bad_request(format!("cannot read request body: {e}")).into_response_quiet()
            })?;
            if let Ok(data) = frame.into_data() {
                let total = buffer.len() + data.len();
                if total > s.max_body_size {
                    return Err(closing(too_large(s.max_body_size)));
                }
                if total > declared.unwrap_or(0) && !hold(server, &mut held, data.len()) {
                    return Err(over_budget(server));
                }
                buffer.extend_from_slice(&data);
            }
        }
        Ok(())
    };
    if s.read_timeout.is_zero() {
        read.await?;
    } else {
        match tokio::time::timeout(s.read_timeout, read).await {
            Ok(result) => result?,
            Err(_) => {
                let r = Error::with_status(
                    408,
                    format!(
                        "request body not received within read_timeout ({:?})",
                        s.read_timeout
                    ),
                )
                .into_response_quiet();
                return Err(closing(r));
            }
        }
    }
    Ok((buffer.freeze(), held))
}
