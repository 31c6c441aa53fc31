//! The two shapes of a handler, behind one entry signature.
//!
//! Every function exports the same [`Entry`](crate::Entry) (request in,
//! response out) so that the merger and `invoke` need not know which shape a
//! callee was written in. [`Handler`] adapts each shape to it.

use crate::{BoxResponse, Bytes, Error, Request, Response};
use http::{HeaderValue, Method, StatusCode, header};
use std::future::Future;

/// A function's handler. Implemented for
/// - `async fn(Bytes) -> Result<Vec<u8>, E>` ([`BodyShape`]): body in, body
///   out, replied as 200 `application/json`. `HEAD` and `OPTIONS` never run
///   it: `OPTIONS` is answered 204 with `Allow`, `HEAD` 200 with no body.
/// - `async fn(Request) -> Result<Response, E>` ([`HttpShape`]): every
///   request, whatever its method, with its path, query and headers; the
///   response's status, headers and body are sent as they are.
///
/// Either way `Err(e)` (`E: Into<Error>`) is replied with `e.status()` and
/// `{"error": "<message>"}`, and logged with the function's name.
pub trait Handler<Shape>: Send + 'static {
    fn call(self, function: &'static str, request: Request) -> BoxResponse;
}

/// Marker of body-in, body-out handlers.
pub enum BodyShape {}
/// Marker of whole-request handlers.
pub enum HttpShape {}

/// The methods a body-shaped function answers, for `OPTIONS`.
const ALLOW: &str = "OPTIONS, HEAD, GET, POST, PUT, PATCH, DELETE";

impl<F, Fut, E> Handler<BodyShape> for F
where
    F: FnOnce(Bytes) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Vec<u8>, E>> + Send + 'static,
    E: Into<Error>,
{
    fn call(self, function: &'static str, request: Request) -> BoxResponse {
        // A body-shaped handler is a write path: a probe or a preflight must
        // not run it.
        if request.method() == Method::OPTIONS {
            let mut r = Response::new(Bytes::new());
            *r.status_mut() = StatusCode::NO_CONTENT;
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(ALLOW));
            return Box::pin(std::future::ready(r));
        }
        if request.method() == Method::HEAD {
            return Box::pin(std::future::ready(json_response(
                StatusCode::OK,
                Bytes::new(),
            )));
        }
        let reply = self(request.into_body());
        Box::pin(async move {
            match reply.await {
                Ok(body) => json_response(StatusCode::OK, body.into()),
                Err(e) => e.into().into_response(function),
            }
        })
    }
}

impl<F, Fut, E> Handler<HttpShape> for F
where
    F: FnOnce(Request) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Response, E>> + Send + 'static,
    E: Into<Error>,
{
    fn call(self, function: &'static str, request: Request) -> BoxResponse {
        let reply = self(request);
        Box::pin(async move {
            match reply.await {
                Ok(response) => response,
                Err(e) => e.into().into_response(function),
            }
        })
    }
}

/// Runs `handler` (either shape) as `function` on `request`: what
/// `function!` writes inside the exported entry, and what a hand-written
/// entry (a benchmark's, say) calls.
pub fn run_handler<S, H: Handler<S>>(
    function: &'static str,
    handler: H,
    request: Request,
) -> BoxResponse {
    handler.call(function, request)
}

pub(crate) fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}
