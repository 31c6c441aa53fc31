//! `social-graph-unfollow`: `{"user_id": u64, "followee_id": u64}` →
//! `{"unfollowed": bool}` (false if the user did not follow them).
//!
//! DeathStarBench's SocialGraphService::Unfollow: in one transaction,
//! `ZREM social-graph:followees:<user_id> <followee_id>` and
//! `ZREM social-graph:followers:<followee_id> <user_id>`.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    user_id: u64,
    followee_id: u64,
}

#[derive(Serialize)]
struct Response {
    unfollowed: bool,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let (followees, _followers): (u64, u64) = redis::pipe()
        .atomic()
        .cmd("ZREM")
        .arg(format!("social-graph:followees:{}", req.user_id))
        .arg(req.followee_id)
        .cmd("ZREM")
        .arg(format!("social-graph:followers:{}", req.followee_id))
        .arg(req.user_id)
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis ZREM failed: {e}")))?;
    rt::to_json(&Response {
        unfollowed: followees == 1,
    })
}

rt::function!(handle);
