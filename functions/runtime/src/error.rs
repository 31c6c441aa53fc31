//! The one error type of a function: a reply status plus a message, and for a
//! failed RPC, which callee failed and how.

use std::any::Any;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: u16,
    message: String,
    callee: Option<Callee>,
}

/// A callee that answered with an error (or could not be reached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callee {
    pub function: String,
    /// The callee's HTTP status, or `None` when it was never reached.
    pub status: Option<u16>,
    pub body: String,
}

impl Error {
    /// A handler failure: replied as 500.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            status: 500,
            message: message.into(),
            callee: None,
        }
    }

    /// A request the handler cannot accept: replied as 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Error {
            status: 400,
            message: message.into(),
            callee: None,
        }
    }

    /// A reply with any status (4xx: the client's fault, 5xx: ours).
    pub fn with_status(status: u16, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
            callee: None,
        }
    }

    /// A callee answered with an error status. A 4xx stays that 4xx (the
    /// request was refused, and the caller's client should know it); any
    /// other status is a failure of this function: 500.
    pub fn rpc(function: &str, status: u16, body: impl Into<String>) -> Self {
        let body = body.into();
        Error {
            status: if (400..500).contains(&status) {
                status
            } else {
                500
            },
            message: format!(
                "function {function} answered HTTP {status}: {}",
                body.trim()
            ),
            callee: Some(Callee {
                function: function.into(),
                status: Some(status),
                body,
            }),
        }
    }

    /// A callee could not be reached at all.
    pub fn unreachable(function: &str, why: impl fmt::Display) -> Self {
        let body = why.to_string();
        Error {
            status: 502,
            message: format!("function {function} could not be reached: {body}"),
            callee: Some(Callee {
                function: function.into(),
                status: None,
                body,
            }),
        }
    }

    pub(crate) fn panicked(function: &str, panic: &(dyn Any + Send)) -> Self {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic payload".into());
        Error::new(format!("function {function} panicked: {what}"))
    }

    /// The HTTP status this error is replied with.
    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The failed callee, for an error that came from [`crate::invoke`].
    pub fn callee(&self) -> Option<&Callee> {
        self.callee.as_ref()
    }

    /// The JSON body of the error reply: `{"error": "..."}`.
    pub fn to_json(&self) -> String {
        serde_json::json!({ "error": self.message }).to_string()
    }

    /// The reply of `function` failing with this error (logged with its name).
    pub fn into_response(self, function: &str) -> crate::Response {
        eprintln!("{function}: {}", self.message);
        self.into_response_quiet()
    }

    /// The reply, not logged (a refused request is the client's doing).
    pub(crate) fn into_response_quiet(self) -> crate::Response {
        let status = http::StatusCode::from_u16(self.status)
            .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        crate::handler::json_response(status, self.to_json().into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

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
    fn a_panic_payload_becomes_the_message() {
        let e = Error::panicked("user-mention", &"mentioned user @mallory is not registered");
        assert_eq!(
            e.message(),
            "function user-mention panicked: mentioned user @mallory is not registered"
        );
        assert_eq!(
            e.to_json(),
            r#"{"error":"function user-mention panicked: mentioned user @mallory is not registered"}"#
        );
    }
}
