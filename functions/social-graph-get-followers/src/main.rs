//! `social-graph-get-followers`: `{"user_id": u64}` → `{"followers": [u64, ...]}`,
//! the members of `social-graph:followers:<user_id>` in ascending score order.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    user_id: u64,
}

#[derive(Serialize)]
struct Response {
    followers: Vec<u64>,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let followers: Vec<u64> = redis::cmd("ZRANGE")
        .arg(format!("social-graph:followers:{}", req.user_id))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis ZRANGE failed: {e}")))?;
    rt::to_json(&Response { followers })
}

rt::function!(handle);
