//! The one error type of a function: a reply status plus a message, and for a
//! failed RPC, which callee failed and how; and the bounds on what of its
//! input an error carries.
//!
//! A message is at most [`MAX_MESSAGE`] bytes, and what it echoes of a
//! client's or a callee's text (a JSON value, a callee's reply) at most
//! [`MAX_ECHO`]: a hostile input cannot make a large reply or log line.
//! Internal text (a panic's payload, a store's error: [`Error::internal`])
//! is logged, never replied: the client gets a stable message.

use std::any::Any;
use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// The most bytes of a client's or a callee's text an error message echoes.
pub const MAX_ECHO: usize = 1024;
/// The most bytes of an error's message (and of its logged detail).
pub const MAX_MESSAGE: usize = 2 * MAX_ECHO;
/// What ends a text cut short.
const CUT: &str = "…";

/// `text`, cut to at most [`MAX_ECHO`] bytes (on a character boundary, then
/// [`CUT`]).
pub(crate) fn clip(text: &str) -> Cow<'_, str> {
    clip_to(text, MAX_ECHO)
}

fn clip_to(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!("{}{CUT}", &text[..text.floor_char_boundary(max)]))
}

/// `value` rendered as [`clip`] cuts it, rendering no more than that: the
/// rest of a value of any size costs nothing.
pub(crate) fn clipped(value: &dyn fmt::Display) -> String {
    struct Upto(String);
    impl fmt::Write for Upto {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let room = MAX_ECHO - self.0.len();
            if s.len() <= room {
                self.0.push_str(s);
                return Ok(());
            }
            self.0.push_str(&s[..s.floor_char_boundary(room)]);
            self.0.push_str(CUT);
            // Stops the rendering.
            Err(fmt::Error)
        }
    }
    let mut out = Upto(String::new());
    let _ = write!(out, "{value}");
    out.0
}

/// Makes the panic hook print at most [`MAX_MESSAGE`] bytes of a payload
/// (std's prints all of it, one line per panic); a shorter payload is
/// printed by the hook as before. `serve` installs it once.
pub(crate) fn bound_panic_messages() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| match payload_text(info.payload()) {
        Some(text) if text.len() > MAX_MESSAGE => {
            let thread = std::thread::current();
            let place = info
                .location()
                .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            eprintln!(
                "thread '{}' panicked{place}:\n{} ({} bytes)",
                thread.name().unwrap_or("<unnamed>"),
                clip_to(text, MAX_MESSAGE),
                text.len()
            );
        }
        _ => default(info),
    }));
}

/// A panic's payload as text, if it is (`panic!` makes a `&str` or a `String`).
fn payload_text(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: u16,
    message: String,
    /// Logged with the message, never replied ([`Error::internal`]).
    detail: Option<String>,
    callee: Option<Callee>,
}

/// A callee that answered with an error (or could not be reached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callee {
    pub function: String,
    /// The callee's HTTP status, or `None` when it was never reached.
    pub status: Option<u16>,
    /// The start of its reply (at most [`MAX_ECHO`] bytes; `invoke_request`
    /// gives the whole reply), or why it was not reached.
    pub body: String,
}

impl Error {
    /// A handler failure: replied as 500.
    pub fn new(message: impl Into<String>) -> Self {
        Error::with_status(500, message)
    }

    /// A request the handler cannot accept: replied as 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Error::with_status(400, message)
    }

    /// A reply with any status (4xx: the client's fault, 5xx: ours).
    pub fn with_status(status: u16, message: impl Into<String>) -> Self {
        Error {
            status,
            message: bounded(message.into()),
            detail: None,
            callee: None,
        }
    }

    /// A failure whose text is not for the client (a store's error, which
    /// may name hosts or hold data): replied as 500 with `message`, logged
    /// with `detail` too.
    pub fn internal(message: impl Into<String>, detail: impl fmt::Display) -> Self {
        Error {
            detail: Some(clip_to(&clipped(&detail), MAX_MESSAGE).into_owned()),
            ..Error::new(message)
        }
    }

    /// A callee answered with an error status. A 4xx stays that 4xx (the
    /// request was refused, and the caller's client should know it); any
    /// other status is a failure of this function: 500. The message, and
    /// the body kept in [`Error::callee`], hold at most [`MAX_ECHO`] bytes
    /// of `body`.
    pub fn rpc(function: &str, status: u16, body: impl Into<String>) -> Self {
        Error::rpc_bytes(function, status, body.into().as_bytes())
    }

    /// [`Error::rpc`] of a reply's bytes, reading no more of them than it keeps.
    pub(crate) fn rpc_bytes(function: &str, status: u16, body: &[u8]) -> Self {
        // A character cut by the prefix is past what `clip` keeps.
        let start = &body[..body.len().min(MAX_ECHO + 4)];
        let body = clip(&String::from_utf8_lossy(start)).into_owned();
        let ours = Some(status).filter(|s| (400..500).contains(s));
        let reply = body.trim();
        let message = format!("function {function} answered HTTP {status}: {reply}");
        Error::with_status(ours.unwrap_or(500), message).with_callee(function, Some(status), body)
    }

    /// A callee could not be reached at all.
    pub fn unreachable(function: &str, why: impl fmt::Display) -> Self {
        let body = clip(&why.to_string()).into_owned();
        let message = format!("function {function} could not be reached: {body}");
        Error::with_status(502, message).with_callee(function, None, body)
    }

    /// This error as `function`'s, which answered `status` and `body`.
    fn with_callee(self, function: &str, status: Option<u16>, body: String) -> Self {
        let callee = Callee {
            function: function.into(),
            status,
            body,
        };
        Error {
            callee: Some(callee),
            ..self
        }
    }

    /// A handler's panic: replied as 500 `function <name> panicked`, its
    /// payload logged.
    pub(crate) fn panicked(function: &str, panic: &(dyn Any + Send)) -> Self {
        let what = payload_text(panic).unwrap_or("a non-string panic payload");
        Error::internal(format!("function {function} panicked"), what)
    }

    /// The HTTP status this error is replied with.
    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The failed callee, for an error that came from `invoke`.
    pub fn callee(&self) -> Option<&Callee> {
        self.callee.as_ref()
    }

    /// The JSON body of the error reply: `{"error": "..."}`.
    pub fn to_json(&self) -> String {
        serde_json::json!({ "error": self.message }).to_string()
    }

    /// The reply of `function` failing with this error (logged with its
    /// name, and the detail of an [`Error::internal`]).
    pub fn into_response(self, function: &str) -> crate::Response {
        match &self.detail {
            Some(detail) => eprintln!("{function}: {}: {detail}", self.message),
            None => eprintln!("{function}: {}", self.message),
        }
        self.into_response_quiet()
    }

    /// The reply, not logged (a refused request is the client's doing).
    pub(crate) fn into_response_quiet(self) -> crate::Response {
        let status = http::StatusCode::from_u16(self.status)
            .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        json_response(status, self.to_json().into())
    }
}

/// A reply of `status` with a JSON `body`.
pub(crate) fn json_response(status: http::StatusCode, body: bytes::Bytes) -> crate::Response {
    let mut r = crate::Response::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `message` cut to [`MAX_MESSAGE`] bytes.
fn bounded(message: String) -> String {
    match clip_to(&message, MAX_MESSAGE) {
        Cow::Borrowed(_) => message,
        Cow::Owned(cut) => cut,
    }
}

macro_rules! from_display {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self { Error::new(e.to_string()) }
        }
    )*};
}
from_display!(
    String,
    &str,
    serde_json::Error,
    std::io::Error,
    std::num::ParseIntError
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rpc_error_names_the_callee_and_its_status_and_keeps_a_4xx() {
        let inner = Error::bad_request("malformed JSON request: EOF");
        let e = Error::rpc(
            "social-graph-get-followers",
            inner.status(),
            inner.to_json(),
        );
        assert_eq!(e.status(), 400);
        assert_eq!(Error::rpc("x", 503, "busy").status(), 500);
        assert_eq!(
            e.message(),
            r#"function social-graph-get-followers answered HTTP 400: {"error":"malformed JSON request: EOF"}"#
        );
        assert_eq!(e.callee().unwrap().status, Some(400));
        assert_eq!(Error::unreachable("x", "refused").status(), 502);
    }

    #[test]
    fn a_panic_payload_is_logged_and_the_client_gets_a_stable_message() {
        let e = Error::panicked("user-mention", &"mentioned user @mallory is not registered");
        assert_eq!(e.message(), "function user-mention panicked");
        assert_eq!(e.to_json(), r#"{"error":"function user-mention panicked"}"#);
        assert_eq!(
            e.detail.as_deref(),
            Some("mentioned user @mallory is not registered")
        );
        let huge = "p".repeat(8 << 20);
        let e = Error::panicked("x", &huge);
        assert_eq!(e.to_json(), r#"{"error":"function x panicked"}"#);
        assert!(e.detail.unwrap().len() <= MAX_ECHO + CUT.len());
    }

    #[test]
    fn a_huge_callee_reply_or_message_is_echoed_at_most_max_echo_bytes() {
        let reply = format!(r#"{{"error":"{}"}}"#, "é".repeat(4 << 20));
        let e = Error::rpc("b", 500, reply.clone());
        assert!(e.message().len() <= MAX_ECHO + 64, "{}", e.message().len());
        assert!(
            e.message()
                .starts_with(r#"function b answered HTTP 500: {"error":"éé"#)
        );
        assert!(e.message().ends_with(CUT));
        assert_eq!(e.callee().unwrap().body.len(), e.message().len() - 30);
        assert_eq!(Error::rpc_bytes("b", 500, reply.as_bytes()), e);
        let e = Error::bad_request("x".repeat(1 << 20));
        assert_eq!(e.message().len(), MAX_MESSAGE + CUT.len());
        assert_eq!(clipped(&"y".repeat(5000)), clip(&"y".repeat(5000)));
        assert_eq!(clipped(&"short"), "short");
    }
}
