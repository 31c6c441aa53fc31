//! The standalone server: the OpenFaaS (of-watchdog, HTTP mode) contract.

use crate::{Bytes, Entry, config, dispatch};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;

/// Serves `entry` as the function `name` on `$port` (default 8080):
/// `GET /_/health` and `GET /_/ready` answer 200, every other request calls
/// the handler with its body. Never returns unless binding fails.
pub fn serve(name: &'static str, entry: Entry) {
    config::set_primary(name);
    let port: u16 = match std::env::var("port").map(|p| p.parse()) {
        Ok(Ok(p)) => p,
        Ok(Err(_)) => fail(name, "env `port` is not a port number"),
        Err(_) => 8080,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(name, &format!("cannot start tokio: {e}")));
    runtime.block_on(async move {
        let addr = SocketAddr::from(([0, 0, 0, 0], port));
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| fail(name, &format!("cannot listen on {addr}: {e}")));
        let merged = dispatch::merged();
        if merged.is_empty() {
            eprintln!("{name}: listening on {addr}");
        } else {
            eprintln!(
                "{name}: listening on {addr}, with {} merged in-process",
                merged.join(", ")
            );
        }
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(conn) => conn,
                Err(e) => {
                    eprintln!("{name}: accept failed: {e}");
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| handle(name, entry, req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

async fn handle(
    name: &'static str,
    entry: Entry,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    if parts.uri.path().starts_with("/_/") {
        return Ok(match (parts.method, parts.uri.path()) {
            (Method::GET, "/_/health" | "/_/ready") => reply(StatusCode::OK, "OK"),
            _ => reply(StatusCode::NOT_FOUND, "not found"),
        });
    }
    let body = match body.collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return Ok(reply(
                StatusCode::BAD_REQUEST,
                format!("cannot read request body: {e}"),
            ));
        }
    };
    Ok(match dispatch::run_guarded(name, entry, body).await {
        Ok(bytes) => json(StatusCode::OK, bytes),
        Err(e) => {
            eprintln!("{name}: {e}");
            let status =
                StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            json(status, e.to_json())
        }
    })
}

fn reply(status: StatusCode, text: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(text.into()));
    *r.status_mut() = status;
    r
}

fn json(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = reply(status, body);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn fail(name: &str, why: &str) -> ! {
    eprintln!("{name}: {why}");
    std::process::exit(2)
}
