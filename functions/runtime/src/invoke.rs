//! Calling another function: in-process when it was merged into this binary,
//! otherwise over HTTP through the OpenFaaS gateway.

use crate::call::{self, Call};
use crate::call_log;
use crate::metrics::{self, Transport};
use crate::{Bytes, Error, Input, Request, Response, dispatch};
use futures_util::FutureExt;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use std::sync::OnceLock;
use std::time::Duration;

struct Gateway {
    base: String,
    timeout: Duration,
    /// The largest reply read (`FMERGE_INVOKE_MAX_REPLY_BYTES`): a callee
    /// that answers without end must not exhaust this process's memory.
    max_reply: usize,
    /// One pooled keep-alive client per process: a TCP handshake per call is
    /// the classic cost of naive RPC.
    client: Client<HttpConnector, Full<Bytes>>,
}

fn gateway() -> &'static Gateway {
    static GATEWAY: OnceLock<Gateway> = OnceLock::new();
    GATEWAY.get_or_init(|| {
        let settings = crate::server_settings::process();
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(256)
            .build(connector);
        Gateway {
            base: settings.gateway_url.trim_end_matches('/').to_string(),
            timeout: settings.invoke_timeout,
            max_reply: settings.invoke_max_reply,
            client,
        }
    })
}

/// Calls `function` with `payload` (POSTed as `application/json`) and
/// returns its response body.
///
/// A merged callee runs in this process (see `functions/README.md`); any
/// other is POSTed to `$GATEWAY_URL/function/<name>`. Either way a non-2xx
/// reply is an [`Error::rpc`] that names the callee and its status (a 4xx
/// stays that 4xx for this function's client).
pub fn invoke(
    function: &str,
    payload: impl Into<Bytes>,
) -> impl Future<Output = Result<Bytes, Error>> + Send + '_ {
    // `map`, not an `async` block that awaits it: that would hold the call's
    // future twice (see `send`).
    send(function, Outgoing::Body(payload.into())).map(move |reply| {
        let (parts, body) = reply?.into_parts();
        if parts.status.is_success() {
            Ok(body)
        } else {
            Err(Error::rpc_bytes(function, parts.status.as_u16(), &body))
        }
    })
}

/// Calls `function` with a whole request and returns its whole response,
/// whatever its status. The request's URI is the path and query inside the
/// function (`/`, `/items?id=1`); its method and headers are sent as they
/// are, plus `X-Fmerge-Caller` (this function) and the current request's
/// `X-Call-Id`, `traceparent` and `tracestate` unless already set.
///
/// A merged callee gets the same request in-process and its reply is the
/// one it would have sent over HTTP. `Err` only when the callee could not be
/// reached or did not answer within `$FMERGE_INVOKE_TIMEOUT_SECS`.
pub fn invoke_request(
    function: &str,
    request: Request,
) -> impl Future<Output = Result<Response, Error>> + Send + '_ {
    send(function, Outgoing::Request(Box::new(request)))
}

/// What `invoke` or `invoke_request` sends (the request boxed, as in
/// [`Input`]: this sits in the caller's state while the call runs).
enum Outgoing {
    Body(Bytes),
    Request(Box<Request>),
}

/// Sends `outgoing` to `function`, in-process or over HTTP, and counts it.
/// A body for a merged callee goes as it is (see [`crate::Input`]): no
/// headers are built for it.
///
/// (Not an `async fn`, which would keep its arguments twice in its state:
/// every caller's state carries that state, and copies it as it is built.
/// Nothing runs before the future is polled.)
#[allow(clippy::manual_async_fn)] // on purpose: see the line above
fn send(
    function: &str,
    outgoing: Outgoing,
) -> impl Future<Output = Result<Response, Error>> + Send + '_ {
    async move {
        let caller = Call::caller();
        let call_number = Call::number();
        let started = std::time::Instant::now();
        let input = match outgoing {
            Outgoing::Body(body) => Input::invoke(body, caller),
            Outgoing::Request(mut request) => {
                call::mark(&mut request, caller);
                Input::request(request)
            }
        };
        let (transport, reply) = match dispatch::lookup(function) {
            Some(callee) => (
                Transport::InProcess,
                Ok(dispatch::call(callee, input).await),
            ),
            // Boxed: the HTTP client's future is kilobytes, and every caller's
            // state would otherwise carry (and copy) it, in-process calls too.
            None => (
                Transport::Gateway,
                Box::pin(over_http(function, input.into_request())).await,
            ),
        };
        let ended = std::time::Instant::now();
        metrics::invoked(caller, function, transport, ended - started);
        if call_log::enabled() {
            call_log::record(
                call_number,
                Call::parent(),
                caller,
                function,
                started,
                ended,
            );
        }
        reply
    }
}

/// Headers that belong to one HTTP connection or its server, not to a
/// function's reply (`X-Duration-Seconds` is the server's timing, which
/// of-watchdog adds too): dropped from replies that came over HTTP, so
/// that a reply looks the same whether its callee was merged or not.
const CONNECTION_HEADERS: [http::HeaderName; 7] = [
    http::HeaderName::from_static("x-duration-seconds"),
    http::header::CONNECTION,
    http::header::CONTENT_LENGTH,
    http::header::TRANSFER_ENCODING,
    http::header::DATE,
    http::header::SERVER,
    http::HeaderName::from_static("keep-alive"),
];

async fn over_http(function: &str, request: Request) -> Result<Response, Error> {
    let gw = gateway();
    let (mut parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .filter(|p| *p != "/")
        .unwrap_or("");
    let url = format!("{}/function/{function}{path}", gw.base);
    // Signed for the callee (its bare name, as it knows itself) and the
    // request line it will see.
    let signature = parts
        .headers
        .get(&call::CALLER_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|caller| {
            call::signature(&call::Signed {
                caller,
                callee: function.split_once('.').map_or(function, |(name, _)| name),
                method: parts.method.as_str(),
                target: path,
            })
        });
    if let Some(sig) = signature {
        parts.headers.insert(call::CALLER_SIG_HEADER, sig);
    }
    parts.uri = url
        .parse()
        .map_err(|e| Error::unreachable(function, format!("bad gateway URL {url}: {e}")))?;
    let request = hyper::Request::from_parts(parts, Full::new(body));
    let call = async {
        let response = gw
            .client
            .request(request)
            .await
            .map_err(|e| Error::unreachable(function, format!("{url}: {}", error_chain(&e))))?;
        let (mut parts, body) = response.into_parts();
        let too_large = || {
            Error::unreachable(
                function,
                format!(
                    "{url}: reply larger than {} bytes (FMERGE_INVOKE_MAX_REPLY_BYTES)",
                    gw.max_reply
                ),
            )
        };
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > gw.max_reply as u64) {
            return Err(too_large());
        }
        let body = Limited::new(body, gw.max_reply)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<LengthLimitError>() {
                    too_large()
                } else {
                    Error::unreachable(function, format!("{url}: reply cut short: {e}"))
                }
            })?
            .to_bytes();
        for name in &CONNECTION_HEADERS {
            parts.headers.remove(name);
        }
        Ok(Response::from_parts(parts, body))
    };
    match tokio::time::timeout(gw.timeout, call).await {
        Ok(result) => result,
        Err(_) => Err(Error::unreachable(
            function,
            format!(
                "{url}: no reply within {}s (FMERGE_INVOKE_TIMEOUT_SECS)",
                gw.timeout.as_secs()
            ),
        )),
    }
}

/// `e` and its sources, `: `-separated.
fn error_chain(e: &dyn std::error::Error) -> String {
    let chain = std::iter::successors(Some(e), |e| e.source());
    let texts: Vec<String> = chain.map(|e| e.to_string()).collect();
    texts.join(": ")
}
