//! The limits each call is held to ([`CallLimits`]: `max_inflight`,
//! `max_body_size`, `exec_timeout`), enforced one way for an HTTP request
//! (`request`) and an in-process call of a merged callee (`dispatch`), so
//! that a callee's limits answer the same merged or not: the admission,
//! the body check, the time limit a request's headers leave, the run under
//! it, and the refusals.

use crate::{Bytes, CallLimits, Error, Response, metrics, parse_duration};
use hyper::StatusCode;
use hyper::header::{self, HeaderValue};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;

/// A call counted in flight, released however the call ends.
pub(crate) struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    /// Enters unless `limit` (0: none) calls are in flight already. A call
    /// refused is never counted, not even for an instant: another call
    /// checking meanwhile would be refused for it.
    fn enter(count: &'a AtomicUsize, limit: usize) -> Option<Slot<'a>> {
        count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                (limit == 0 || now < limit).then_some(now + 1)
            })
            .ok()
            .map(|_| Slot(count))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A call within `max_inflight`, counted in flight (and in the
/// `http_requests_in_flight` gauge) until it is answered: by its handler,
/// or with 504 at its deadline, which frees the slot even while the
/// abandoned handler still blocks (as of-watchdog's limit counts its own
/// requests, not its upstream's).
pub(crate) struct Admitted {
    _slot: Slot<'static>,
    _gauge: metrics::InFlight,
}

/// A call's reply when a limit refuses it: boxed, as it is rare and a
/// reply is large (the state of every call would carry its size).
pub(crate) type Refusal = Box<Response>;

impl CallLimits {
    /// Admits a call of `function` unless `max_inflight` calls counted in
    /// `in_flight` are running: then the reply is [`too_many`].
    pub(crate) fn admit(
        &self,
        function: &'static str,
        in_flight: &'static AtomicUsize,
    ) -> Result<Admitted, Refusal> {
        match Slot::enter(in_flight, self.max_inflight) {
            None => Err(Box::new(too_many(self.max_inflight))),
            Some(slot) => Ok(Admitted {
                _slot: slot,
                _gauge: metrics::started(function),
            }),
        }
    }

    /// Whether `max_inflight` calls counted in `in_flight` are running
    /// (`/_/ready` answers 429 then).
    pub(crate) fn full(&self, in_flight: &AtomicUsize) -> bool {
        self.max_inflight > 0 && in_flight.load(Ordering::SeqCst) >= self.max_inflight
    }

    /// A body of `len` bytes (declared, or arrived so far), unless it is
    /// over `max_body_size`: then the reply is 413.
    pub(crate) fn body_fits(&self, len: u64) -> Result<(), Refusal> {
        if len > self.max_body_size as u64 {
            return Err(Box::new(too_large(self.max_body_size)));
        }
        Ok(())
    }

    /// The time limit of a call with `headers` (none: an `invoke`'s body):
    /// `exec_timeout`, lowered by a request's `X-Timeout` (as of-watchdog
    /// does). It can only lower it: zero, or anything that is not a
    /// duration, is ignored (of-watchdog lets `X-Timeout: 0` lift it).
    pub(crate) fn exec_limit(&self, headers: Option<&http::HeaderMap>) -> Duration {
        let configured = self.exec_timeout;
        headers
            .and_then(|headers| headers.get(&X_TIMEOUT))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_duration(v).ok())
            .filter(|d| !d.is_zero() && (configured.is_zero() || *d < configured))
            .unwrap_or(configured)
    }
}

const X_TIMEOUT: http::HeaderName = http::HeaderName::from_static("x-timeout");

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

/// 429 beyond `max_inflight`, worded as of-watchdog words it.
fn too_many(limit: usize) -> Response {
    let mut r = Response::new(Bytes::from(format!(
        "Concurrent request limit exceeded. Max concurrent requests: {limit}\n"
    )));
    *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    internal(r)
}

/// `X-OpenFaaS-Internal`, as of-watchdog marks the replies it makes
/// itself (not the function's), so that a client can tell them apart.
pub(crate) const X_OPENFAAS_INTERNAL: http::HeaderName =
    http::HeaderName::from_static("x-openfaas-internal");

fn internal(mut r: Response) -> Response {
    r.headers_mut().insert(
        X_OPENFAAS_INTERNAL,
        HeaderValue::from_static("fmerge-runtime"),
    );
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
    internal(
        Error::with_status(
            504,
            format!("function {function} did not finish within exec_timeout ({limit:?})"),
        )
        .into_response(function),
    )
}

/// 504 for a request whose client closed its side of the connection
/// before its reply, as of-watchdog answers it.
pub(crate) fn client_closed() -> Response {
    internal(
        Error::with_status(
            504,
            "the client closed its side of the connection before the reply",
        )
        .into_response_quiet(),
    )
}

/// 503 with `Retry-After`, the connection closed: a request refused for
/// want of room that may be found later.
pub(crate) fn retry_later(message: String) -> Response {
    let mut r = Error::with_status(503, message).into_response_quiet();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    closing(r)
}

/// A reply after which the connection is closed (its request was not read whole).
pub(crate) fn closing(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}
