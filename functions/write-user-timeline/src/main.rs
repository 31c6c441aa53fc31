//! `write-user-timeline`: `{"post_id": u64, "user_id": u64, "timestamp": u64}`
//! → `{"updated": 1}`: `ZADD user-timeline:<user_id> <timestamp> <post_id>`,
//! the author's own timeline (DeathStarBench's
//! UserTimelineService::WriteUserTimeline).

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::Updated;

#[derive(Deserialize)]
struct Request {
    post_id: u64,
    user_id: u64,
    timestamp: u64,
}

sn_store::store!();

async fn handle(req: Request) -> Result<Updated, Error> {
    let key = format!("user-timeline:{}", req.user_id);
    query::<()>(
        redis::cmd("ZADD")
            .arg(key)
            .arg(req.timestamp)
            .arg(req.post_id),
    )
    .await?;
    Ok(Updated { updated: 1 })
}

rt::function!(json handle);
