//! One request, as the server serves it: the probes, a slot, the call
//! limits (`limits`, shared with in-process calls of merged callees), the
//! body budget, then the handler on the handlers' runtime under its time
//! limit; counted and logged however it ends.

use crate::call::Call;
use crate::connections::{Conn, HttpResponse, InRequest};
use crate::limits::{self, closing, retry_later, run_within};
use crate::record::Record;
use crate::server_settings::ServerSettings;
use crate::{Bytes, Entry, Request, Response, call, dispatch, isolation};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What the server's requests share.
pub(crate) struct Server {
    pub name: &'static str,
    pub entry: Entry,
    pub settings: ServerSettings,
    /// Where handlers run (see `serve`).
    pub handlers: tokio::runtime::Handle,
    /// Set on SIGTERM/SIGINT: health and ready answer 503 from then on.
    pub draining: AtomicBool,
    pub in_flight: AtomicUsize,
    /// Bytes of request heads and bodies held in memory now
    /// (`max_buffered_bytes`).
    pub buffered: Arc<Semaphore>,
    /// Function requests being served (`max_connections`).
    pub(crate) slots: Arc<Semaphore>,
    /// Function requests waiting for a slot (as many as `max_connections`).
    pub(crate) waiting: Arc<Semaphore>,
    /// Handlers answered 504 whose task has not ended: each may block a
    /// handler thread; with as many as there are threads, `/_/ready`
    /// answers 503.
    pub(crate) abandoned: AtomicUsize,
}

/// Serves one request of `conn`, taken up (`entered`) as hyper read its
/// head (`None`: the connection layer closed the connection to make room).
pub(crate) async fn handle(
    server: &'static Server,
    mut req: hyper::Request<Incoming>,
    conn: Arc<Conn>,
    entered: Option<InRequest>,
) -> Result<HttpResponse, Infallible> {
    let Some(_in_request) = entered else {
        // Closed to make room for another client: this reply goes nowhere.
        return Ok(http_response(closing(Response::default())));
    };
    // Only these two are the runtime's: any other path, `/_/…` too, is
    // the function's, as of-watchdog passes it on.
    let path = req.uri().path();
    if path == "/_/health" || path == "/_/ready" {
        return Ok(probe(server, req.method(), path));
    }
    let arrived = tokio::time::Instant::now();
    let read_deadline = (!server.settings.read_timeout.is_zero())
        .then(|| conn.started() + server.settings.read_timeout);
    let _slot = match slot(server, read_deadline).await {
        Ok(slot) => slot,
        Err(refusal) => return Ok(http_response(refusal)),
    };
    let log = server.settings.access_log.then(|| {
        let id = call::call_id(req.headers()).map(str::to_string);
        Box::new((req.uri().clone(), id))
    });
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let caller = call::caller_of(req.headers(), server.name, req.method().as_str(), target);
    // Proven or not, the signature is the runtime's, not the handler's.
    req.headers_mut().remove(&call::CALLER_SIG_HEADER);
    // A calling request's id is taken only from a proven caller: the
    // planner reads the log's parents as call paths.
    if crate::call_log::enabled() && matches!(caller, call::EXTERNAL | call::UNVERIFIED) {
        req.headers_mut().remove(&call::REQUEST_HEADER);
    }
    // Timed from its arrival, as its reply's `X-Duration-Seconds`: one
    // clock read at each end serves both.
    let record = Record::start(
        server.name,
        caller,
        req.method().clone(),
        log,
        arrived.into_std(),
    );
    let replied = guarded(server, req, &conn, caller, arrived, read_deadline).await;
    let took = tokio::time::Instant::now() - arrived;
    let mut response = match replied {
        Some(response) => {
            record.finish_after(response.status(), response.body().len(), took);
            response
        }
        // As of-watchdog, whose request is cancelled when its client
        // closes its side: the handler abandoned, the request counted as
        // its client gone (the record's drop), the 504 sent to what is
        // left of the connection.
        None => limits::client_closed(),
    };
    let ours = response.status() == StatusCode::GATEWAY_TIMEOUT
        && response.headers().contains_key(limits::X_OPENFAAS_INTERNAL);
    conn.replied(arrived, took, server.settings.write_timeout, ours);
    // As of-watchdog times every reply it passes on.
    response
        .headers_mut()
        .insert(X_DURATION_SECONDS, seconds(took));
    Ok(http_response(response))
}

/// `took` in seconds with six decimals (`0.001234`), to the nearest
/// microsecond: the digits written here, since formatting an `f64` costs
/// more than the rest of the reply's headers together.
fn seconds(took: Duration) -> HeaderValue {
    let mut secs = took.as_secs();
    let mut micros = (took.subsec_nanos() + 500) / 1000;
    if micros == 1_000_000 {
        // The last second of `Duration::MAX` stays in its own.
        match secs.checked_add(1) {
            Some(next) => (secs, micros) = (next, 0),
            None => micros = 999_999,
        }
    }
    // u64::MAX has 20 digits; then the point and six decimals.
    let mut text = [0u8; 27];
    let mut at = text.len();
    for _ in 0..6 {
        at -= 1;
        text[at] = b'0' + (micros % 10) as u8;
        micros /= 10;
    }
    at -= 1;
    text[at] = b'.';
    loop {
        at -= 1;
        text[at] = b'0' + (secs % 10) as u8;
        secs /= 10;
        if secs == 0 {
            break;
        }
    }
    HeaderValue::from_bytes(&text[at..]).expect("digits and a point are a header value")
}

fn http_response(response: Response) -> HttpResponse {
    let (parts, body) = response.into_parts();
    hyper::Response::from_parts(parts, Full::new(body))
}

/// One of the `max_connections` slots for a function request: at once if
/// one is free, else by `deadline` (the request's read deadline) if no more
/// than as many requests wait already; else 503 with `Retry-After`.
async fn slot(
    server: &Server,
    deadline: Option<tokio::time::Instant>,
) -> Result<OwnedSemaphorePermit, Response> {
    if let Ok(slot) = server.slots.clone().try_acquire_owned() {
        return Ok(slot);
    }
    let waited = async {
        let _waiting = server.waiting.clone().try_acquire_owned().ok()?;
        let slot = server.slots.clone().acquire_owned();
        match deadline {
            None => slot.await.ok(),
            Some(deadline) => tokio::time::timeout_at(deadline, slot).await.ok()?.ok(),
        }
    };
    waited.await.ok_or_else(|| {
        retry_later(format!(
            "every connection slot (max_connections {}) stayed taken; retry later",
            server.settings.max_connections
        ))
    })
}

const X_DURATION_SECONDS: http::HeaderName = http::HeaderName::from_static("x-duration-seconds");

/// `/_/health` and `/_/ready`, as of-watchdog answers them.
fn probe(server: &Server, method: &Method, path: &str) -> HttpResponse {
    let s = &server.settings;
    let (status, body) = if method != Method::GET {
        (StatusCode::METHOD_NOT_ALLOWED, "")
    } else if server.draining.load(Ordering::SeqCst)
        || (path == "/_/ready" && (isolation::stuck().is_some() || stalled(server)))
    {
        (StatusCode::SERVICE_UNAVAILABLE, "")
    } else if path == "/_/ready" && s.limits.full(&server.in_flight) {
        (StatusCode::TOO_MANY_REQUESTS, "")
    } else {
        (StatusCode::OK, "OK")
    };
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    if !body.is_empty() {
        // What Go's server sniffs for the text of-watchdog writes.
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
    }
    r
}

/// One function request that arrived at `arrived`: the in-flight limit,
/// the body limit and budget by the request's read deadline, then the
/// handler on the handlers' runtime until `exec_timeout` from its arrival
/// (as of-watchdog counts it), abandoned past it or when the client goes
/// (`None` once it has closed its side).
async fn guarded(
    server: &'static Server,
    req: hyper::Request<Incoming>,
    conn: &Conn,
    caller: &'static str,
    arrived: tokio::time::Instant,
    read_deadline: Option<tokio::time::Instant>,
) -> Option<Response> {
    let limits = &server.settings.limits;
    let name = server.name;
    let _admitted = match limits.admit(name, &server.in_flight) {
        Ok(admitted) => admitted,
        Err(refusal) => return Some(*refusal),
    };
    let limit = limits.exec_limit(Some(req.headers()));
    let deadline = (!limit.is_zero()).then(|| arrived + limit);
    let (parts, body) = req.into_parts();
    // The body's bytes count against the budget until the handler is done
    // with them. A body still arriving at the deadline gets the 504, as
    // of-watchdog's (its function waits for the body).
    let by = read_deadline.into_iter().chain(deadline).min();
    let read = crate::body::read_body(&server.settings, &server.buffered, &parts.headers, body, by);
    let (body, _held) = match read.await {
        Ok(read) => read,
        Err(_) if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) => {
            return Some(crate::limits::timed_out(name, limit));
        }
        Err(refusal) => return Some(refusal),
    };
    let request = Request::from_parts(parts, body);
    let context = Call::new(name, request.headers(), deadline);
    let run =
        crate::boxed(|| context.scope(dispatch::run_guarded(name, server.entry, request.into())));
    let gone = Arc::new(AtomicBool::new(false));
    let ended = Ended {
        server,
        gone: gone.clone(),
    };
    let task = server.handlers.spawn(async move {
        let _ended = ended;
        // Timed here, on the handler's thread: the hand-offs between the
        // connection's thread and this one are the serving's, which an
        // in-process call does not make.
        let started = std::time::Instant::now();
        let reply = run.await;
        crate::metrics::handled(name, caller, started.elapsed());
        reply
    });
    let response = tokio::select! {
        biased;
        response = run_within(name, limit, deadline, task) => response,
        () = conn.client_closed() => return None,
    };
    if deadline.is_some_and(|d| tokio::time::Instant::now() >= d)
        && !gone.swap(true, Ordering::AcqRel)
    {
        // Answered 504 with its task still there (see `Ended`).
        server.abandoned.fetch_add(1, Ordering::Relaxed);
    }
    Some(response)
}

/// Whether every handler thread may be held by a handler answered 504
/// that has not ended (blocked, or spinning).
fn stalled(server: &Server) -> bool {
    server.abandoned.load(Ordering::Relaxed) >= server.handlers.metrics().num_workers()
}

/// Dropped when a handler's task ends (its future returned, or dropped once
/// aborted). Of the task's end and the connection layer's 504, the later one
/// finds `gone` set: a 504 that comes first counts the task abandoned, and its
/// end uncounts it.
struct Ended {
    server: &'static Server,
    gone: Arc<AtomicBool>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        if self.gone.swap(true, Ordering::AcqRel) {
            self.server.abandoned.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn durations_are_written_as_seconds_with_six_decimals() {
        for (nanos, text) in [
            (0, "0.000000"),
            (1_234_499, "0.001234"),
            (1_234_501, "0.001235"),
            (999_999_600, "1.000000"),
            (12_000_000_000, "12.000000"),
            (3_600_250_000_000, "3600.250000"),
        ] {
            let took = Duration::from_nanos(nanos);
            assert_eq!(super::seconds(took), text, "{took:?}");
            // What `{:.6}` writes, away from a tie.
            assert_eq!(format!("{:.6}", took.as_secs_f64()), text, "{took:?}");
        }
        let most = super::seconds(Duration::new(u64::MAX, 999_999_999));
        assert_eq!(most, "18446744073709551615.999999");
    }
}
