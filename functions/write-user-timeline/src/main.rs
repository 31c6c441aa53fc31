//! `write-user-timeline`: `{"post_id": u64, "user_id": u64, "timestamp": u64}`
//! → `{"updated": 1}`: `ZADD user-timeline:<user_id> <timestamp> <post_id>`,
//! the author's own timeline (DeathStarBench's
//! UserTimelineService::WriteUserTimeline).

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    post_id: u64,
    user_id: u64,
    timestamp: u64,
}

#[derive(Serialize)]
struct Response {
    updated: usize,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    redis::cmd("ZADD")
        .arg(format!("user-timeline:{}", req.user_id))
        .arg(req.timestamp)
        .arg(req.post_id)
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis ZADD failed: {e}")))?;
    rt::to_json(&Response { updated: 1 })
}

rt::function!(handle);
