//! The two shapes of a handler, behind one entry signature.
//!
//! Every function exports the same [`Entry`](crate::Entry) (request in,
//! response out) so that the merger and `invoke` need not know which shape a
//! callee was written in. [`Handler`] adapts each shape to it.

use crate::call;
use crate::error::json_response;
use crate::{BoxResponse, Bytes, Error, Request, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use std::future::Future;

/// What an [`Entry`](crate::Entry) is called with: a whole request, or the
/// body of an in-process [`invoke`](super::invoke). A body-shaped handler
/// takes that body as it is, and no request or reply headers are built for
/// it (`invoke` reads only the reply's status and body); an HTTP-shaped
/// handler gets the request `invoke` sends over HTTP.
pub struct Input(Inner);

// The request boxed: an input sits in the state of every call until its
// handler takes it, and a request is hundreds of bytes.
enum Inner {
    Request(Box<Request>),
    Invoke { body: Bytes, caller: &'static str },
}

impl From<Request> for Input {
    fn from(request: Request) -> Input {
        Input::request(Box::new(request))
    }
}

impl Input {
    pub(crate) fn request(request: Box<Request>) -> Input {
        Input(Inner::Request(request))
    }

    /// `body` as `invoke` from `caller` sends it.
    pub(crate) fn invoke(body: Bytes, caller: &'static str) -> Input {
        Input(Inner::Invoke { body, caller })
    }

    pub(crate) fn method(&self) -> Method {
        match &self.0 {
            Inner::Request(r) => r.method().clone(),
            Inner::Invoke { .. } => Method::POST,
        }
    }

    pub(crate) fn body_len(&self) -> usize {
        match &self.0 {
            Inner::Request(r) => r.body().len(),
            Inner::Invoke { body, .. } => body.len(),
        }
    }

    /// The request's headers; none for an invoke's body.
    pub(crate) fn headers(&self) -> Option<&HeaderMap> {
        match &self.0 {
            Inner::Request(r) => Some(r.headers()),
            Inner::Invoke { .. } => None,
        }
    }

    /// The whole request: for an invoke's body, the request `invoke` sends
    /// over HTTP (its propagated headers those of the call running here).
    pub fn into_request(self) -> Request {
        match self.0 {
            Inner::Request(r) => *r,
            Inner::Invoke { body, caller } => {
                let mut request = call::post(body);
                call::mark(&mut request, caller);
                request
            }
        }
    }
}

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
    fn call(self, function: &'static str, input: Input) -> BoxResponse;
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
    fn call(self, function: &'static str, input: Input) -> BoxResponse {
        let (body, http) = match input.0 {
            Inner::Invoke { body, .. } => (body, false),
            Inner::Request(request) => {
                // A body-shaped handler is a write path: a probe or a
                // preflight must not run it.
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
                ((*request).into_body(), true)
            }
        };
        crate::boxed(move || async move {
            match self(body).await {
                Ok(body) if http => json_response(StatusCode::OK, body.into()),
                Ok(body) => Response::new(body.into()),
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
    fn call(self, function: &'static str, input: Input) -> BoxResponse {
        crate::boxed(move || async move {
            match self(input.into_request()).await {
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
    input: Input,
) -> BoxResponse {
    handler.call(function, input)
}
