//! The standalone server: the of-watchdog HTTP-mode contract, served by the
//! function itself (no proxy hop), with the same settings, health, drain on
//! SIGTERM, `max_inflight` and metrics, plus the bounds of-watchdog leaves
//! to the function: a body limit, a connection cap, and accept back-off.

use crate::call::{self, Call};
use crate::settings::{Settings, parse_duration};
use crate::{Bytes, Entry, Error, Request, Response, config, dispatch, metrics};
use bytes::BytesMut;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Semaphore, watch};

struct Server {
    name: &'static str,
    entry: Entry,
    settings: Settings,
    /// Set on SIGTERM/SIGINT: health and ready answer 503 from then on.
    draining: AtomicBool,
    in_flight: AtomicUsize,
}

/// Serves `entry` as the function `name` with the settings of the
/// environment (see [`Settings`]) until SIGTERM or SIGINT, then drains and
/// exits 0. Exits 2 with a message naming the cause if a setting is invalid
/// or the port cannot be bound.
pub fn serve(name: &'static str, entry: Entry) {
    config::set_primary(name);
    let settings = Settings::from_env().unwrap_or_else(|e| fail(name, &e));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(name, &format!("cannot start tokio: {e}")));
    let server: &'static Server = Box::leak(Box::new(Server {
        name,
        entry,
        settings,
        draining: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
    }));
    runtime.block_on(run(server));
    // Handlers abandoned by the drain's deadline must not hold the exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    std::process::exit(0)
}

async fn run(server: &'static Server) {
    let name = server.name;
    let s = &server.settings;
    let addr = SocketAddr::new(s.listen_address, s.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| {
            fail(
                name,
                &format!("cannot listen on {addr}: {e} (settings listen_address, port)"),
            )
        });
    // Installed before the first accept, explicitly: as PID 1 (a container's
    // init) the default dispositions would ignore SIGTERM and SIGINT.
    let mut term = signal(SignalKind::terminate())
        .unwrap_or_else(|e| fail(name, &format!("cannot handle SIGTERM: {e}")));
    let mut int = signal(SignalKind::interrupt())
        .unwrap_or_else(|e| fail(name, &format!("cannot handle SIGINT: {e}")));
    if s.metrics_port != 0 {
        tokio::spawn(metrics::serve(
            name,
            SocketAddr::new(s.listen_address, s.metrics_port),
        ));
    }
    let merged = dispatch::merged();
    eprintln!(
        "{name}: listening on {addr}{}; timeouts: read {:?} write {:?} exec {:?} health {:?}; max_inflight {} max_body_size {} max_connections {}",
        if merged.is_empty() {
            String::new()
        } else {
            format!(", with {} merged in-process", merged.join(", "))
        },
        s.read_timeout,
        s.write_timeout,
        s.exec_timeout,
        s.healthcheck_interval,
        s.max_inflight,
        s.max_body_size,
        s.max_connections,
    );

    // After the signal: unhealthy at once, no new connections after
    // healthcheck_interval (so that the load balancer sees the 503 first).
    let (stop_tx, mut stop) = watch::channel(false);
    tokio::spawn(async move {
        let reason = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        server.draining.store(true, Ordering::SeqCst);
        eprintln!(
            "{name}: {reason}: health answers 503; no new connections in {:?}",
            server.settings.healthcheck_interval
        );
        tokio::time::sleep(server.settings.healthcheck_interval).await;
        let _ = stop_tx.send(true);
    });

    let graceful = GracefulShutdown::new();
    let connections = Arc::new(Semaphore::new(s.max_connections));
    let mut accept_errors = 0u64;
    let mut backoff = Duration::from_millis(10);
    loop {
        let permit = tokio::select! {
            _ = stop.changed() => break,
            permit = connections.clone().acquire_owned() => permit.expect("never closed"),
        };
        let stream = tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors (EMFILE/ENFILE) or memory: the
                    // connection stays queued; retrying at once would spin.
                    if accept_errors == 0 {
                        eprintln!("{name}: accept failed: {e}; backing off up to 1s (further failures of this burst are counted, not logged)");
                    }
                    accept_errors += 1;
                    drop(permit);
                    tokio::select! {
                        _ = stop.changed() => break,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
        };
        if accept_errors > 0 {
            eprintln!("{name}: accepting again after {accept_errors} failed accepts");
            accept_errors = 0;
            backoff = Duration::from_millis(10);
        }
        let _ = stream.set_nodelay(true);
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new());
        // hyper's header timer also runs while a keep-alive connection waits
        // for its next request: it is the idle timeout too (Go's IdleTimeout
        // defaults to ReadTimeout the same way).
        builder.header_read_timeout((!s.read_timeout.is_zero()).then_some(s.read_timeout));
        let service = hyper::service::service_fn(move |req| handle(server, req));
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    let left = server.in_flight.load(Ordering::SeqCst);
    eprintln!(
        "{name}: no new connections; draining {left} requests in flight (up to write_timeout {:?})",
        s.write_timeout
    );
    match tokio::time::timeout(s.write_timeout, graceful.shutdown()).await {
        Ok(()) => eprintln!("{name}: drained; exiting"),
        Err(_) => eprintln!(
            "{name}: write_timeout reached with {} requests still in flight; exiting",
            server.in_flight.load(Ordering::SeqCst)
        ),
    }
}

type Reply = hyper::Response<Full<Bytes>>;

async fn handle(
    server: &'static Server,
    req: hyper::Request<Incoming>,
) -> Result<Reply, Infallible> {
    let path = req.uri().path();
    if path.starts_with("/_/") {
        return Ok(probe(server, req.method(), path));
    }
    let started = Instant::now();
    let method = req.method().clone();
    let caller = call::caller_of(req.headers());
    let uri = req.uri().clone();
    let call_id = server.settings.access_log.then(|| {
        req.headers()
            .get("x-call-id")
            .and_then(|v| v.to_str().ok())
            .map(|id| format!(" call_id={id}"))
            .unwrap_or_default()
    });
    let response = guarded(server, req).await;
    let status = response.status();
    metrics::finished(server.name, &caller, &method, status, started.elapsed());
    if let Some(call_id) = call_id {
        eprintln!(
            "{}: {method} {uri} {} {}B {:.4}s caller={caller}{call_id}",
            server.name,
            status.as_u16(),
            response.body().len(),
            started.elapsed().as_secs_f64()
        );
    }
    let (parts, body) = response.into_parts();
    Ok(hyper::Response::from_parts(parts, Full::new(body)))
}

/// `/_/health` and `/_/ready`, as of-watchdog answers them.
fn probe(server: &Server, method: &Method, path: &str) -> Reply {
    let s = &server.settings;
    if path != "/_/health" && path != "/_/ready" {
        return text(StatusCode::NOT_FOUND, "not found");
    }
    if method != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "");
    }
    if server.draining.load(Ordering::SeqCst) {
        return text(StatusCode::SERVICE_UNAVAILABLE, "");
    }
    if path == "/_/ready"
        && s.max_inflight > 0
        && server.in_flight.load(Ordering::SeqCst) >= s.max_inflight
    {
        return text(StatusCode::TOO_MANY_REQUESTS, "");
    }
    text(StatusCode::OK, "OK")
}

/// One function request: the in-flight limit, the body limit and read
/// timeout, then the handler under exec_timeout.
async fn guarded(server: &'static Server, req: hyper::Request<Incoming>) -> Response {
    let s = &server.settings;
    let name = server.name;
    let in_flight = server.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let _slot = Slot(&server.in_flight);
    if s.max_inflight > 0 && in_flight > s.max_inflight {
        let mut r = Response::new(Bytes::from(format!(
            "Concurrent request limit exceeded. Max concurrent requests: {}\n",
            s.max_inflight
        )));
        *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        return r;
    }
    let _gauge = metrics::started(name);
    let (parts, body) = req.into_parts();
    let body = match read_body(s, &parts.headers, body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    let request = Request::from_parts(parts, body);
    let context = Call::new(name, request.headers());
    let exec_timeout = exec_timeout(s.exec_timeout, request.headers());
    let run = context.scope(dispatch::run_guarded(name, server.entry, request));
    if exec_timeout.is_zero() {
        return run.await;
    }
    match tokio::time::timeout(exec_timeout, run).await {
        Ok(response) => response,
        Err(_) => Error::with_status(
            504,
            format!("function {name} did not finish within exec_timeout ({exec_timeout:?})"),
        )
        .into_response(name),
    }
}

/// Releases an in-flight slot when the request ends, however it ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `exec_timeout`, lowered by a request's `X-Timeout` (as of-watchdog does).
fn exec_timeout(configured: Duration, headers: &http::HeaderMap) -> Duration {
    headers
        .get("x-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_duration(v).ok())
        .filter(|d| configured.is_zero() || *d <= configured)
        .unwrap_or(configured)
}

/// Reads a body of at most `max_body_size` bytes within `read_timeout`, into
/// one buffer (no second copy). A declared length over the limit is refused
/// before a byte of the body is read.
async fn read_body(
    s: &Settings,
    headers: &http::HeaderMap,
    mut body: Incoming,
) -> Result<Bytes, Response> {
    let too_large = || {
        let mut r = Error::with_status(
            413,
            format!(
                "request body larger than max_body_size ({} bytes)",
                s.max_body_size
            ),
        )
        .into_response_quiet();
        // The rest of the body is not read: the connection cannot be reused.
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        r
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > s.max_body_size as u64) {
        return Err(too_large());
    }
    let mut buffer = BytesMut::with_capacity(declared.unwrap_or(0) as usize);
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                Error::bad_request(format!("cannot read request body: {e}")).into_response_quiet()
            })?;
            if let Ok(data) = frame.into_data() {
                if buffer.len() + data.len() > s.max_body_size {
                    return Err(too_large());
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
                let mut r = Error::with_status(
                    408,
                    format!(
                        "request body not received within read_timeout ({:?})",
                        s.read_timeout
                    ),
                )
                .into_response_quiet();
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(r);
            }
        }
    }
    Ok(buffer.freeze())
}

fn text(status: StatusCode, body: &'static str) -> Reply {
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r
}

fn fail(name: &str, why: &str) -> ! {
    eprintln!("{name}: {why}");
    std::process::exit(2)
}
