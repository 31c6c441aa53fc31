//! One request, as the server serves it: the probes, the call limits
//! (`limits`, shared with in-process calls of merged callees), the body
//! budget, then the handler under its time limit; counted and logged
//! however it ends.

use crate::backstop::Watched;
use crate::call::{self, Call};
use crate::limits::within;
use crate::serve::Server;
use crate::{Bytes, Request, Response, dispatch, metrics};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::Instant;

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
    } else if path == "/_/ready" && s.limits.full(&server.in_flight) {
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
    let limits = &server.settings.limits;
    let name = server.name;
    let admitted = match limits.admit(name, &server.in_flight) {
        Ok(admitted) => admitted,
        Err(refusal) => return (*refusal, Some(record)),
    };
    let (parts, body) = req.into_parts();
    // The body's bytes count against the budget until the handler is done with them.
    let (body, _held) =
        match crate::body::read_body(server, &parts.headers, body, read_deadline).await {
            Ok(read) => read,
            Err(refusal) => return (refusal, Some(record)),
        };
    let request = Request::from_parts(parts, body);
    let limit = limits.exec_limit(Some(request.headers()));
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

/// A reply after which the connection is closed (its request was not read whole).
pub(crate) fn closing(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}
