//! `unique-id`: `{"post_type": "POST"}` → `{"unique_id": u64}`.
//!
//! DeathStarBench's UniqueIdService builds a snowflake-like id from a machine
//! id, the clock and a per-process counter. This one keeps the shape but not
//! the clock, so that two runs on the same data give the same ids:
//! `MACHINE_ID << 40 | INCR unique-id:counter`.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

/// Counters below 2^40 and machine ids below 2^13 keep every id under 2^53,
/// exact even for JavaScript clients.
const COUNTER_BITS: u32 = 40;
const MAX_MACHINE_ID: u64 = (1 << 13) - 1;

#[derive(Deserialize)]
#[allow(dead_code)] // DeathStarBench passes it; ids do not depend on it.
struct Request {
    #[serde(default)]
    post_type: Option<String>,
}

#[derive(Serialize)]
struct Response {
    unique_id: u64,
}

sn_store::store!();

fn machine_id() -> Result<u64, Error> {
    let raw = rt::config!("MACHINE_ID", "1");
    match raw.trim().parse::<u64>() {
        Ok(id) if id <= MAX_MACHINE_ID => Ok(id),
        _ => Err(Error::new(format!(
            "MACHINE_ID must be an integer in 0..={MAX_MACHINE_ID}, not {raw:?}"
        ))),
    }
}

async fn handle(body: Bytes) -> rt::Reply {
    let _: Request = rt::json(&body)?;
    let machine = machine_id()?;
    let mut conn = redis().await?;
    let counter: u64 = redis::cmd("INCR")
        .arg("unique-id:counter")
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis INCR failed: {e}")))?;
    if counter >= 1 << COUNTER_BITS {
        return Err(Error::new("unique-id:counter overflowed 40 bits"));
    }
    rt::to_json(&Response {
        unique_id: (machine << COUNTER_BITS) | counter,
    })
}

rt::function!(handle);
