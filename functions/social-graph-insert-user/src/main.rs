//! `social-graph-insert-user`: `{"user_id": u64}` → `{"inserted": bool}`
//! (false if the user was there already): `SADD social-graph:users <id>`.
//! DeathStarBench's SocialGraphService::InsertUser creates the user's empty
//! follower and followee lists; Redis has no empty sorted set, so the user's
//! membership is recorded in one set instead.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    user_id: u64,
}

#[derive(Serialize)]
struct Response {
    inserted: bool,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let added: u64 = redis::cmd("SADD")
        .arg("social-graph:users")
        .arg(req.user_id)
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis SADD failed: {e}")))?;
    rt::to_json(&Response {
        inserted: added == 1,
    })
}

rt::function!(handle);
