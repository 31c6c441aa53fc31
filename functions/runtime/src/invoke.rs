//! Calling another function: in-process when it was merged into this binary,
//! otherwise over HTTP through the OpenFaaS gateway.

use crate::{Bytes, Error, dispatch};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use std::sync::OnceLock;
use std::time::Duration;

const DEFAULT_GATEWAY: &str = "http://gateway.openfaas:8080";

struct Gateway {
    base: String,
    timeout: Duration,
    /// One pooled keep-alive client per process: a TCP handshake per call is
    /// the classic cost of naive RPC.
    client: Client<HttpConnector, Full<Bytes>>,
}

fn gateway() -> &'static Gateway {
    static GATEWAY: OnceLock<Gateway> = OnceLock::new();
    GATEWAY.get_or_init(|| {
        let base = std::env::var("GATEWAY_URL").unwrap_or_else(|_| DEFAULT_GATEWAY.into());
        let secs = std::env::var("FMERGE_INVOKE_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(30);
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(256)
            .build(connector);
        Gateway {
            base: base.trim_end_matches('/').to_string(),
            timeout: Duration::from_secs(secs),
            client,
        }
    })
}

/// Calls `function` with `payload` and returns its response body.
///
/// A merged callee runs in this process (see `functions/README.md`); any
/// other is POSTed to `$GATEWAY_URL/function/<name>`. Either way a failure is
/// an [`Error`] that names the callee and its HTTP status.
pub async fn invoke(function: &str, payload: impl Into<Bytes>) -> Result<Bytes, Error> {
    let payload = payload.into();
    if let Some(entry) = dispatch::lookup(function) {
        return dispatch::call(function, entry, payload).await;
    }
    over_http(function, payload).await
}

async fn over_http(function: &str, payload: Bytes) -> Result<Bytes, Error> {
    let gw = gateway();
    let url = format!("{}/function/{function}", gw.base);
    let request = hyper::Request::post(&url)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(payload))
        .map_err(|e| Error::unreachable(function, format!("bad gateway URL {url}: {e}")))?;
    let call = async {
        let response = gw
            .client
            .request(request)
            .await
            .map_err(|e| Error::unreachable(function, format!("{url}: {}", error_chain(&e))))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| Error::unreachable(function, format!("{url}: reply cut short: {e}")))?
            .to_bytes();
        if status.is_success() {
            Ok(body)
        } else {
            Err(Error::rpc(
                function,
                status.as_u16(),
                String::from_utf8_lossy(&body),
            ))
        }
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

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
