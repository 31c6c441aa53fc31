//! `social-graph-follow`: `{"user_id": u64, "followee_id": u64, "timestamp":
//! u64 ms (optional, else now)}` → `{"followed": bool}` (false if the user
//! followed them already).
//!
//! DeathStarBench's SocialGraphService::Follow: in one transaction,
//! `ZADD NX social-graph:followees:<user_id> <timestamp> <followee_id>` and
//! `ZADD NX social-graph:followers:<followee_id> <timestamp> <user_id>`, so
//! the score stays the time of the first follow. Following oneself is a 400.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    user_id: u64,
    followee_id: u64,
    #[serde(default)]
    timestamp: Option<u64>,
}

#[derive(Serialize)]
struct Response {
    followed: bool,
}

sn_store::store!();

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    if req.user_id == req.followee_id {
        return Err(Error::bad_request(format!(
            "user {} cannot follow themselves",
            req.user_id
        )));
    }
    let timestamp = req.timestamp.unwrap_or_else(now_ms);
    let mut conn = redis().await?;
    let (followees, _followers): (u64, u64) = redis::pipe()
        .atomic()
        .cmd("ZADD")
        .arg(format!("social-graph:followees:{}", req.user_id))
        .arg("NX")
        .arg(timestamp)
        .arg(req.followee_id)
        .cmd("ZADD")
        .arg(format!("social-graph:followers:{}", req.followee_id))
        .arg("NX")
        .arg(timestamp)
        .arg(req.user_id)
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis ZADD failed: {e}")))?;
    rt::to_json(&Response {
        followed: followees == 1,
    })
}

rt::function!(handle);
