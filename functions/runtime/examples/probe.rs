//! A function for the runtime's own tests (`tests/conformance.rs`,
//! `tests/limits.rs`): an HTTP-shaped handler that routes on its path.
//!
//! - `/sleep?ms=N`: waits N ms, then 200 `slept`.
//! - `/block?ms=N`: blocks its thread N ms (`std::thread::sleep`, as a
//!   careless handler would), then 200 `blocked`.
//! - `/big?kb=N`: replies N KiB.
//! - `/echo?status=S`: replies status S (default 200) with a JSON echo of
//!   the method, path, query, headers and body, and the header `x-echo: 1`.
//! - `/invoke?target=F&path=P`: `invoke_request(F, GET P)` (P with `?`
//!   and `=` written `%3F`, `%3D`); replies with F's reply as it came.
//! - `/fanout?target=F`: invokes F's `/sleep?ms=20` twice at once
//!   (`try_join`), then once more; replies `done`.
//! - `/json`: parses the body as a JSON array of numbers (`rt::json`),
//!   replies how many.
//! - `/panic`: panics with the body as its payload.
//!
//! Its function name (the package's) is `fmerge-runtime`.

use fmerge_runtime::{self as rt, Bytes, Error, Request, Response, StatusCode};
use std::collections::BTreeMap;
use std::time::Duration;

fn query(request: &Request, key: &str) -> Option<String> {
    request.uri().query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.to_string())
    })
}

async fn handle(request: Request) -> Result<Response, Error> {
    match request.uri().path() {
        "/sleep" => {
            let ms: u64 = query(&request, "ms").unwrap_or_default().parse()?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(Response::new(Bytes::from_static(b"slept")))
        }
        "/block" => {
            let ms: u64 = query(&request, "ms").unwrap_or_default().parse()?;
            std::thread::sleep(Duration::from_millis(ms));
            Ok(Response::new(Bytes::from_static(b"blocked")))
        }
        "/big" => {
            let kb: usize = query(&request, "kb").unwrap_or_default().parse()?;
            Ok(Response::new(Bytes::from(vec![b'b'; kb << 10])))
        }
        "/echo" => {
            let status: u16 = query(&request, "status").map_or(Ok(200), |s| s.parse())?;
            let headers: BTreeMap<String, String> = request
                .headers()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
                .collect();
            let echo = serde_json::json!({
                "method": request.method().as_str(),
                "path": request.uri().path(),
                "query": request.uri().query(),
                "headers": headers,
                "body": String::from_utf8_lossy(request.body()),
            });
            let mut response = Response::new(Bytes::from(echo.to_string()));
            *response.status_mut() = StatusCode::from_u16(status).map_err(|e| e.to_string())?;
            response
                .headers_mut()
                .insert("x-echo", rt::HeaderValue::from_static("1"));
            response.headers_mut().insert(
                rt::header::CONTENT_TYPE,
                rt::HeaderValue::from_static("application/json"),
            );
            Ok(response)
        }
        "/invoke" => {
            let target = query(&request, "target").ok_or("no target")?;
            let path = query(&request, "path")
                .unwrap_or_else(|| "/".into())
                .replace("%3F", "?")
                .replace("%3D", "=");
            let mut call = Request::new(Bytes::new());
            *call.uri_mut() = path.parse::<rt::Uri>().map_err(|e| e.to_string())?;
            rt::invoke_request(&target, call).await
        }
        "/fanout" => {
            let target = query(&request, "target").ok_or("no target")?;
            let sleep = || {
                let mut call = Request::new(Bytes::new());
                *call.uri_mut() = rt::Uri::from_static("/sleep?ms=20");
                rt::invoke_request(&target, call)
            };
            futures_util::future::try_join(sleep(), sleep()).await?;
            sleep().await?;
            Ok(Response::new(Bytes::from_static(b"done")))
        }
        "/json" => {
            let numbers: Vec<u64> = rt::json(request.body())?;
            Ok(Response::new(Bytes::from(numbers.len().to_string())))
        }
        "/panic" => panic!("{}", String::from_utf8_lossy(request.body())),
        other => Err(Error::with_status(404, format!("no route {other}"))),
    }
}

rt::function!(handle);
