//! Who is running, on whose behalf: the task-local context of one call.
//!
//! `serve` and in-process dispatch set it around a handler; `invoke` reads
//! it to name the caller (metrics, `X-Fmerge-Caller`) and to pass the
//! request's `X-Call-Id` and W3C `traceparent` on, as the OpenFaaS gateway
//! does. A handler that spawns a task leaves the context behind (tokio's
//! task-locals do not follow `spawn`); calls from there name the process's
//! primary function as caller and carry no ids.

use http::{HeaderMap, HeaderName, HeaderValue};
use std::sync::Mutex;

/// The header `invoke` sets on an outgoing call: the calling function.
pub const CALLER_HEADER: &str = "x-fmerge-caller";
/// The caller label of a request that came with no `X-Fmerge-Caller`.
pub const EXTERNAL: &str = "external";

/// The headers passed from a request to the calls it makes.
pub(crate) const PROPAGATED: [&str; 3] = ["x-call-id", "traceparent", "tracestate"];

#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub function: String,
    pub propagated: Vec<(HeaderName, HeaderValue)>,
}

tokio::task_local! {
    static CURRENT: Call;
}

impl Call {
    pub fn new(function: &str, headers: &HeaderMap) -> Call {
        let propagated = PROPAGATED
            .iter()
            .filter_map(|name| {
                let value = headers.get(*name)?;
                Some((HeaderName::from_static(name), value.clone()))
            })
            .collect();
        Call {
            function: function.to_string(),
            propagated,
        }
    }

    /// Runs `fut` as this call.
    pub async fn scope<F: std::future::Future>(self, fut: F) -> F::Output {
        CURRENT.scope(self, fut).await
    }

    /// The call running on this task, if any.
    pub fn current() -> Option<Call> {
        CURRENT.try_with(Call::clone).ok()
    }
}

/// The caller named by a request's headers. Any client can send the header,
/// so it is only a label: a name of letters, digits, `-`, `_` and `.` (at
/// most 63), and at most [`MAX_CALLERS`] distinct ones per process (the
/// rest are `other`), so that a client cannot grow the metrics without bound.
pub(crate) fn caller_of(headers: &HeaderMap) -> String {
    let Some(name) = headers.get(CALLER_HEADER).and_then(|v| v.to_str().ok()) else {
        return EXTERNAL.to_string();
    };
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if !valid {
        return OTHER.to_string();
    }
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.iter().any(|s| s == name) {
        return name.to_string();
    }
    if seen.len() >= MAX_CALLERS {
        return OTHER.to_string();
    }
    seen.push(name.to_string());
    name.to_string()
}

/// The request's `X-Call-Id`, if it is one that may be logged and passed
/// on: at most 128 of `A-Z a-z 0-9 . _ : / + = -`.
pub(crate) fn call_id(headers: &HeaderMap) -> Option<&str> {
    let id = headers.get("x-call-id")?.to_str().ok()?;
    let valid = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/+=-".contains(&b));
    valid.then_some(id)
}

/// Distinct callers counted under their own name.
pub const MAX_CALLERS: usize = 64;
/// The caller label beyond [`MAX_CALLERS`], or of a malformed header.
pub const OTHER: &str = "other";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_are_bounded_labels() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(CALLER_HEADER, v.parse().unwrap());
            caller_of(&h)
        };
        assert_eq!(caller_of(&HeaderMap::new()), EXTERNAL);
        assert_eq!(with("write-home-timeline"), "write-home-timeline");
        assert_eq!(with("a b"), OTHER);
        for i in 0..100 {
            with(&format!("caller-{i}"));
        }
        assert_eq!(with("caller-99"), OTHER);
        assert_eq!(with("write-home-timeline"), "write-home-timeline");
    }
}
