//! `unique-id`: `{"post_type": "POST"}` → `{"unique_id": u64}`.
//!
//! DeathStarBench's UniqueIdService builds a snowflake-like id from a machine
//! id, the clock and a per-process counter. This one keeps the shape but not
//! the clock, so that two runs on the same data give the same ids:
//! `MACHINE_ID << 40 | INCR unique-id:counter`.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::UniqueId;

#[derive(Deserialize)]
#[allow(dead_code)] // DeathStarBench passes it; ids do not depend on it.
struct Request {
    post_type: Option<String>,
}

sn_store::store!();

async fn handle(_: Request) -> Result<UniqueId, Error> {
    let mut conn = redis().await?;
    let machine = rt::config!("MACHINE_ID", "1");
    let unique_id = sn_store::ids::next(&mut conn, "unique-id:counter", &machine).await?;
    Ok(UniqueId { unique_id })
}

rt::function!(json handle);
