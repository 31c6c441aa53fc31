//! An OpenFaaS function built on fmerge-runtime.
//!
//! `handle` gets the request body and returns the reply body (200,
//! `application/json`). For the whole request (method, path, query,
//! headers) and a reply with its own status and headers, write instead:
//!
//! ```ignore
//! async fn handle(req: rt::Request) -> Result<rt::Response, rt::Error> {
//!     let mut reply = rt::Response::new(req.into_body());
//!     *reply.status_mut() = rt::StatusCode::CREATED;
//!     Ok(reply)
//! }
//! ```
//!
//! - Call another function with `rt::invoke("other-function", body).await?`
//!   (or `rt::invoke_request` for a whole request and reply): over the
//!   gateway when deployed alone, in-process once merged by fmerge.
//! - Read a setting with `rt::config!("KEY", "default")`, a secret from
//!   `/var/openfaas/secrets/<name>`.
//! - The server's own settings (timeouts, max_inflight, max_body_size,
//!   metrics_port) are of-watchdog's environment variables; see
//!   docs/operating.md in fmerge.

use fmerge_runtime::{self as rt, Bytes};

async fn handle(body: Bytes) -> rt::Reply {
    Ok(body.to_vec())
}

rt::function!(handle);
