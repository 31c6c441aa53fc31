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
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

pub(crate) type HttpResponse = hyper::Response<Full<Bytes>>;

/// The status counted for a request whose client went away before its
/// reply (nginx's "client closed request").
pub(crate) const CLIENT_CLOSED: u16 = 499;

/// A connection handed to the handlers' runtime, as its requests see it.
pub(crate) struct Conn<'a> {
    /// The connection as the front's backstop sees it.
    pub watched: &'a Watched,
    /// On its first request only: when the front handed it over, where
    /// that request's `exec_timeout` starts (as of-watchdog's starts when
    /// the request arrives, not when a handler thread is free).
    pub handed: Option<tokio::time::Instant>,
}

/// Serves one request of a connection; `conn` is `None` on the front's own
/// connections.
pub(crate) async fn handle(
    server: &'static Server,
    req: hyper::Request<Incoming>,
    conn: Option<Conn<'_>>,
) -> Result<HttpResponse, Infallible> {
    let Some(conn) = conn else {
        return Ok(serve_one(server, req, None, None).await);
    };
    let read_deadline = conn.watched.clock.headers_read();
    let reply = serve_one(server, req, Some(&conn), read_deadline).await;
    conn.watched.clock.replied();
    Ok(reply)
}

async fn serve_one(
    server: &'static Server,
    req: hyper::Request<Incoming>,
    conn: Option<&Conn<'_>>,
    read_deadline: Option<tokio::time::Instant>,
) -> HttpResponse {
    let path = req.uri().path();
    if path.starts_with("/_/") {
        return probe(server, req.method(), path);
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
    let (response, record) = guarded(server, req, record, conn, read_deadline).await;
    // None: the front's backstop answered and counted it.
    if let Some(record) = record {
        record.finish(response.status(), response.body().len());
    }
    let (parts, body) = response.into_parts();
    hyper::Response::from_parts(parts, Full::new(body))
}

/// The URI and call id for the access log line, when it is on (boxed: a
/// record lives in every call's state, the log is mostly off).
pub(crate) type LogLine = Box<(Uri, Option<String>)>;

/// Counts (and with the access log, logs) one request of `function` when
/// it ends: with its reply's status, or [`CLIENT_CLOSED`] when it is
/// dropped first (the client disconnected, or the caller gave up).
pub(crate) struct Record {
    function: &'static str,
    caller: &'static str,
    method: Method,
    started: Instant,
    log: Option<LogLine>,
    done: bool,
}

impl Record {
    pub(crate) fn start(
        function: &'static str,
        caller: &'static str,
        method: Method,
        log: Option<LogLine>,
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

    /// The record of a request that arrived `at`, before it was started.
    pub(crate) fn since(mut self, at: Instant) -> Record {
        self.started = at;
        self
    }

    /// Drops the record uncounted: another took over the request.
    pub(crate) fn forget(mut self) {
        self.done = true;
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
/// by the request's read deadline, then the handler under exec_timeout.
/// Gives `record` back unless the backstop took it.
async fn guarded(
    server: &'static Server,
    req: hyper::Request<Incoming>,
    record: Record,
    conn: Option<&Conn<'_>>,
    read_deadline: Option<tokio::time::Instant>,
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
    let (body, _held) =
        match crate::body::read_body(server, &parts.headers, body, read_deadline).await {
            Ok(read) => read,
            Err(refusal) => return (refusal, Some(record)),
        };
    let request = Request::from_parts(parts, body);
    let limit = exec_timeout(s.exec_timeout, request.headers());
    let started = conn.and_then(|c| c.handed);
    let deadline =
        (!limit.is_zero()).then(|| started.unwrap_or_else(tokio::time::Instant::now) + limit);
    let context = Call::new(name, request.headers(), deadline);
    // Boxed once here: the handler's future is large, and each await below
    // would otherwise copy it into its own state.
    let run =
        crate::boxed(|| context.scope(dispatch::run_guarded(name, server.entry, request.into())));
    match conn {
        None => (within(name, limit, deadline, run).await, Some(record)),
        Some(conn) => {
            let running =
                conn.watched
                    .running(deadline.map(|d| d.into_std()), limit, record, admitted);
            // None: the front answered this request while it waited for a
            // thread, and closed the connection (this reply goes nowhere).
            let Some(running) = running else {
                return (Response::default(), None);
            };
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
pub(crate) fn closing(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}
