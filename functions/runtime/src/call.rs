//! Who is running, on whose behalf: the task-local context of one call.
//!
//! `serve` and in-process dispatch set it around a handler; `invoke` reads
//! it to name the caller (metrics, `X-Fmerge-Caller`) and to pass the
//! request's `X-Call-Id` and W3C `traceparent` on, as the OpenFaaS gateway
//! does. A handler that spawns a task leaves the context behind (tokio's
//! task-locals do not follow `spawn`); calls from there name the process's
//! primary function as caller and carry no ids.

use http::{HeaderMap, HeaderName, HeaderValue};

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

/// The caller named by a request's headers.
pub(crate) fn caller_of(headers: &HeaderMap) -> String {
    headers
        .get(CALLER_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .unwrap_or(EXTERNAL)
        .to_string()
}
