//! The metrics port: `GET /metrics`, and the call log (`/calls`), served on a
//! thread of its own, so that a slow scrape or a large call log never delays
//! the connection layer, with of-watchdog's bounds on it: 500 ms to read a
//! request and to write a reply; and a cap on open connections, kept as the
//! function's port keeps it (see [`crate::connections`]): idle clients make
//! room for a scrape.

use crate::connections::{self, Connections, InRequest, Limits};
use crate::{Bytes, call, call_log, metrics};
use http_body_util::Full;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::{Method, StatusCode};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

/// How long a request may take to arrive, a keep-alive connection may sit
/// idle, and a reply may take to be written: of-watchdog's `ReadTimeout`
/// and `WriteTimeout` on its metrics server.
pub(crate) const METRICS_TIMEOUT: Duration = Duration::from_millis(500);

/// Open connections to the metrics port; past it, the one idle longest is
/// closed for a new one.
pub(crate) const METRICS_CONNECTIONS: usize = 32;

/// The name `POST /calls` must be signed for (`X-Fmerge-Caller: /calls`
/// with its `X-Fmerge-Caller-Sig`): a name no function has, so that no
/// signature an `invoke` sent can be replayed to take the call log.
pub(crate) const TAKE_CALLS: &str = "/calls";

/// Starts serving the metrics port `addr` on a thread of its own, until the
/// process exits, and returns once that port listens. A port that is taken
/// is logged and the function goes on serving without metrics.
///
/// Waiting matters: the function's port starts accepting after this, so
/// that once health answers a scrape is never refused (a thread left to
/// bind on its own was, on a loaded machine, still unscheduled then).
pub(crate) fn start(name: &'static str, addr: SocketAddr) {
    let (listening, bound) = std::sync::mpsc::channel::<()>();
    let started = std::thread::Builder::new()
        .name(format!("{name}-metrics"))
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(serve(name, addr, listening)),
                Err(e) => eprintln!("{name}: metrics are off: cannot start tokio: {e}"),
            }
        });
    match started {
        // Blocks the start only for a bind. The thread drops `listening`
        // once it listens or has given up (a panic drops it too), so this
        // never waits longer.
        Ok(_) => {
            let _ = bound.recv();
        }
        Err(e) => eprintln!("{name}: metrics are off: cannot start their thread: {e}"),
    }
}

async fn serve(name: &'static str, addr: SocketAddr, listening: std::sync::mpsc::Sender<()>) {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "{name}: metrics are off: cannot listen on {addr}: {e}\nfix: set metrics_port to a free port, or 0 to turn metrics off"
            );
            return;
        }
    };
    eprintln!("{name}: metrics on http://{addr}/metrics");
    drop(listening);
    let connections: &'static Connections = Box::leak(Box::new(Connections::new(Limits {
        max_connections: METRICS_CONNECTIONS,
        header_timeout: Some(METRICS_TIMEOUT),
        write_timeout: METRICS_TIMEOUT,
        budget: None,
    })));
    // Served until the process exits.
    let (_never, stop) = tokio::sync::watch::channel(false);
    connections::serve(connections, listener, stop, name, |conn| {
        move |req| {
            let entered = InRequest::enter(&conn);
            async move {
                let _entered = entered;
                Ok::<_, Infallible>(answer(&req))
            }
        }
    })
    .await;
}

fn reply(status: StatusCode, body: Bytes) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(body));
    *r.status_mut() = status;
    r
}

fn answer(req: &hyper::Request<hyper::body::Incoming>) -> hyper::Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            // OpenMetrics to whoever names it (Prometheus asks for it
            // first), else Prometheus text 0.0.4, what of-watchdog serves.
            let openmetrics = req
                .headers()
                .get(ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("application/openmetrics-text"));
            let (text, content_type) = match openmetrics {
                true => (metrics::encode(), OPENMETRICS),
                false => (prometheus_text(&metrics::encode()), PROMETHEUS_TEXT),
            };
            let mut r = reply(StatusCode::OK, Bytes::from(text));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            r
        }
        // Read, the call log stays (it says no more than the metrics do);
        // taken out, only by a holder of the application's key.
        (&Method::GET, "/calls") => calls(call_log::read(false)),
        (&Method::POST, "/calls") if call::signed(req.headers(), TAKE_CALLS, "POST", "/calls") => {
            calls(call_log::read(true))
        }
        (&Method::POST, "/calls") => reply(
            StatusCode::FORBIDDEN,
            Bytes::from_static(
                b"taking the call log out needs the application's key\nfix: sign X-Fmerge-Caller: /calls with it (X-Fmerge-Caller-Sig, see docs/operating.md), or read it with GET /calls\n",
            ),
        ),
        _ => reply(StatusCode::NOT_FOUND, Bytes::new()),
    }
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// OpenMetrics text (what `prometheus_client` writes) as Prometheus text
/// 0.0.4: a counter's family is named as its samples (`_total`), and
/// `# UNIT` lines, which 0.0.4 does not have, are left out. `# EOF` stays,
/// a comment to 0.0.4's readers: it ends each pod's text in the scrapes
/// `fmerge plan` reads concatenated.
fn prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help = None;
    for line in openmetrics.lines() {
        if let Some(described) = line.strip_prefix("# HELP ") {
            help = described.split_once(' ');
        } else if let Some(typed) = line.strip_prefix("# TYPE ") {
            let (name, kind) = typed.split_once(' ').unwrap_or((typed, "untyped"));
            let total = if kind == "counter" { "_total" } else { "" };
            if let Some((_, text)) = help.take() {
                out.push_str(&format!("# HELP {name}{total} {text}\n"));
            }
            out.push_str(&format!("# TYPE {name}{total} {kind}\n"));
        } else if !line.starts_with('#') || line == "# EOF" {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn calls(text: Option<String>) -> hyper::Response<Full<Bytes>> {
    match text {
        Some(text) => reply(StatusCode::OK, Bytes::from(text)),
        None => reply(
            StatusCode::NOT_FOUND,
            Bytes::from_static(
                b"the call log is off\nfix: set FMERGE_CALL_LOG to a number of records to keep\n",
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn openmetrics_becomes_prometheus_text() {
        let openmetrics = "# HELP http_requests Requests.\n# TYPE http_requests counter\n\
            http_requests_total{code=\"200\"} 4\n# HELP up Up.\n# TYPE up gauge\n# UNIT up x\nup 1\n# EOF\n";
        assert_eq!(
            super::prometheus_text(openmetrics),
            "# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\n\
             http_requests_total{code=\"200\"} 4\n# HELP up Up.\n# TYPE up gauge\nup 1\n# EOF\n"
        );
    }
}
