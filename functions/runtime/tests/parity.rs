//! A merged callee is indistinguishable from the same callee over HTTP: the
//! same handler, registered in the dispatch table the way `fmerge` fills it
//! (the table written directly, as `benches/dispatch.rs` does) and served by
//! the real `serve` behind the nginx gateway, answers every `invoke_request`
//! with the same status, headers and body, sees the same method, path,
//! query, caller and call id, and `invoke` maps its errors the same way
//! (called from inside a handler too: the running request's ids go along).
//!
//! Run: `cargo test --release -p fmerge-runtime --test parity`.

mod support;

use fmerge_runtime::{
    BoxResponse, Bytes, Error, HeaderValue, Input, Method, Request, Response, StatusCode, invoke,
    invoke_request,
};
use fmerge_testkit::{Gateway, free_port};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::merge_locally;

async fn echo(request: Request) -> Result<Response, Error> {
    if request.body().as_ref() == b"refuse" {
        return Err(Error::bad_request("refused on purpose"));
    }
    let param = |name: &str| {
        request
            .uri()
            .query()
            .and_then(|q| q.split('&').find_map(|p| p.strip_prefix(name)))
            .map(str::to_string)
    };
    // `/relay?to=<function>`: `invoke` it with this body, from this handler.
    if request.uri().path() == "/relay" {
        let to = param("to=").unwrap_or_default();
        let reply = invoke(&to, request.body().clone()).await?;
        return Ok(Response::new(reply));
    }
    // Hostile inputs: a bad JSON value, a panic with the body as payload.
    if request.uri().path() == "/json" {
        let numbers: Vec<u64> = fmerge_runtime::json(request.body())?;
        return Ok(Response::new(Bytes::from(numbers.len().to_string())));
    }
    if request.uri().path() == "/panic" {
        panic!("{}", String::from_utf8_lossy(request.body()));
    }
    if request.body().starts_with(b"fail:") {
        let mut response = Response::new(request.body().clone());
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        return Ok(response);
    }
    let status = param("status=").map_or(Ok(200), |s| s.parse::<u16>())?;
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let seen = json!({
        "method": request.method().as_str(),
        "path": request.uri().path(),
        "query": request.uri().query(),
        "caller": header("x-fmerge-caller"),
        "call_id": header("x-call-id"),
        "content_type": header("content-type"),
        "body": String::from_utf8_lossy(request.body()),
    });
    let mut response = Response::new(Bytes::from(seen.to_string()));
    *response.status_mut() = StatusCode::from_u16(status).map_err(|e| e.to_string())?;
    response
        .headers_mut()
        .insert("x-echo", HeaderValue::from_static("1"));
    Ok(response)
}

fn echo_entry(input: Input) -> BoxResponse {
    fmerge_runtime::run_handler("echo", echo, input)
}

/// The served twin of `echo`, by a name that goes through the gateway.
const HTTP: &str = "echo-http.staging";

fn request(method: Method, uri: &str, body: &'static str) -> Request {
    let mut r = Request::new(Bytes::from_static(body.as_bytes()));
    *r.method_mut() = method;
    *r.uri_mut() = uri.parse().unwrap();
    r.headers_mut()
        .insert("x-call-id", HeaderValue::from_static("parity-1"));
    r
}

#[test]
fn a_merged_callee_answers_exactly_as_it_does_over_http() {
    // In-process: "echo" in the table.
    // Once, before any `invoke`: the only test here.
    merge_locally("echo", echo_entry);
    // Over HTTP: the same entry served as "echo-http" behind nginx, reached
    // as `echo-http.staging`, another namespace's: by its bare name,
    // this process (which serves it, with a merged callee) would call it
    // in-process, as a merged binary calls back the function it serves.
    let port = free_port();
    let gateway = Gateway::start(&[("echo-http", port), (HTTP, port)]);
    // SAFETY: no other thread reads the environment yet.
    unsafe {
        std::env::set_var("port", port.to_string());
        std::env::set_var("listen_address", "127.0.0.1");
        std::env::set_var("metrics_port", "0");
        std::env::set_var("GATEWAY_URL", gateway.url());
    }
    std::thread::spawn(|| fmerge_runtime::serve("echo-http", echo_entry));
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "serve did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cases = [
            (Method::POST, "/", "hello"),
            (Method::POST, "/?status=201", "made"),
            (Method::GET, "/items?id=1&status=404", ""),
            (Method::DELETE, "/x?status=418", ""),
            (Method::PUT, "/refuse", "refuse"),
            (Method::HEAD, "/h", ""),
            (Method::OPTIONS, "/", ""),
        ];
        for (method, uri, body) in cases {
            let merged = invoke_request("echo", request(method.clone(), uri, body))
                .await
                .unwrap();
            let http = invoke_request(HTTP, request(method.clone(), uri, body))
                .await
                .unwrap();
            let what = format!("{method} {uri}");
            assert_eq!(merged.status(), http.status(), "{what}");
            assert_eq!(merged.headers(), http.headers(), "{what}");
            if method == Method::HEAD {
                assert!(merged.body().is_empty() && http.body().is_empty(), "{what}");
                continue;
            }
            let (m, h): (Value, Value) = (
                serde_json::from_slice(merged.body()).unwrap(),
                serde_json::from_slice(http.body()).unwrap(),
            );
            assert_eq!(m, h, "{what}");
            if uri != "/refuse" {
                assert_eq!(m["method"], method.as_str(), "{what}");
                assert_eq!(m["caller"], "echo-http", "{what}");
                assert_eq!(m["call_id"], "parity-1", "{what}");
            }
        }
        // `invoke`: the callee's 400 stays a 400, with the same body, both ways.
        let merged = invoke("echo", "refuse").await.unwrap_err();
        let http = invoke(HTTP, "refuse").await.unwrap_err();
        assert_eq!(merged.status(), 400);
        assert_eq!(http.status(), 400);
        assert_eq!(merged.callee().unwrap().status, Some(400));
        assert_eq!(merged.callee().unwrap().body, http.callee().unwrap().body);
        assert_eq!(
            invoke("echo", "x").await.unwrap(),
            invoke(HTTP, "x").await.unwrap()
        );
        // Hostile inputs get the same short reply, byte for byte, both ways:
        // a 512 KiB bad JSON string, a panic with a 512 KiB payload, a 512
        // KiB error reply of a callee read by `invoke` (the gateway takes
        // bodies up to 1 MiB).
        let huge: &'static str = Box::leak(format!("\"{}\"", "a".repeat(512 << 10)).into());
        // The names differ: the same entry is served as `echo` and `echo-http`.
        let text = |r: &Response| {
            String::from_utf8_lossy(r.body())
                .replace(HTTP, "echo")
                .replace("echo-http", "echo")
        };
        for (uri, status) in [("/json", 400), ("/panic", 500)] {
            let merged = invoke_request("echo", request(Method::POST, uri, huge))
                .await
                .unwrap();
            let http = invoke_request(HTTP, request(Method::POST, uri, huge))
                .await
                .unwrap();
            assert_eq!(merged.status(), status, "{uri}");
            assert_eq!(merged.status(), http.status(), "{uri}");
            assert_eq!(merged.headers(), http.headers(), "{uri}");
            assert_eq!(text(&merged), text(&http), "{uri}");
            assert!(
                merged.body().len() < 1200,
                "{uri}: {} bytes",
                merged.body().len()
            );
        }
        let fail: &'static str = Box::leak(format!("fail:{}", "f".repeat(512 << 10)).into());
        let relay = |to: &str| request(Method::POST, &format!("/relay?to={to}"), fail);
        let merged = invoke_request(HTTP, relay("echo")).await.unwrap();
        let http = invoke_request(HTTP, relay(HTTP)).await.unwrap();
        assert_eq!(merged.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(merged.status(), http.status());
        assert_eq!(text(&merged), text(&http));
        assert!(
            text(&merged).starts_with(r#"{"error":"function echo answered HTTP 500: fail:fff"#),
            "{}",
            text(&merged)
        );
        assert!(merged.body().len() < 1200, "{} bytes", merged.body().len());
        // `invoke` from inside a handler (echo-http, reached over HTTP with
        // a call id): the callee in-process gets the request the HTTP hop
        // gives it, its caller and the running request's call id included.
        let relay = |to: &str| request(Method::POST, &format!("/relay?to={to}"), "relayed");
        let merged = invoke_request(HTTP, relay("echo")).await.unwrap();
        let http = invoke_request(HTTP, relay(HTTP)).await.unwrap();
        assert_eq!(
            (merged.status(), http.status()),
            (StatusCode::OK, StatusCode::OK)
        );
        let (m, h): (Value, Value) = (
            serde_json::from_slice(merged.body()).unwrap(),
            serde_json::from_slice(http.body()).unwrap(),
        );
        assert_eq!(m, h);
        assert_eq!(m["method"], "POST", "{m}");
        assert_eq!(m["caller"], "echo-http", "{m}");
        assert_eq!(m["call_id"], "parity-1", "{m}");
        assert_eq!(m["content_type"], "application/json", "{m}");
        assert_eq!(m["body"], "relayed", "{m}");
        // By its bare name, from its own handler, the served function is
        // called back in-process, and answers the same.
        let back = invoke_request(HTTP, relay("echo-http")).await.unwrap();
        let b: Value = serde_json::from_slice(back.body()).unwrap();
        assert_eq!(b, h);
    });
    assert_eq!(
        gateway.requests_for("echo-http"),
        0,
        "{}",
        gateway.access_log()
    );
    assert!(gateway.requests_for(HTTP) > 0, "{}", gateway.access_log());
}
