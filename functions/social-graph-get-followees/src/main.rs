//! `social-graph-get-followees`: `{"user_id": u64}` → `{"followees": [u64, ...]}`,
//! the members of `social-graph:followees:<user_id>` in ascending score
//! order (when they were followed).

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    user_id: u64,
}

#[derive(Serialize)]
struct Response {
    followees: Vec<u64>,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let followees: Vec<u64> = redis::cmd("ZRANGE")
        .arg(format!("social-graph:followees:{}", req.user_id))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis ZRANGE failed: {e}")))?;
    rt::to_json(&Response { followees })
}

rt::function!(handle);
