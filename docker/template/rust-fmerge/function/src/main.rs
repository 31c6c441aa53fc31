//! An OpenFaaS function: `handle` gets the request body and returns the reply.
//!
//! - Call another function with `rt::invoke("other-function", body).await?`:
//!   over the gateway when deployed alone, in-process once merged by fmerge.
//! - Read a setting with `rt::config!("KEY", "default")`, a secret from
//!   `/var/openfaas/secrets/<name>`.

use fmerge_runtime::{self as rt, Bytes};

async fn handle(body: Bytes) -> rt::Reply {
    Ok(body.to_vec())
}

rt::function!(handle);
