//! `social-graph-insert-user`: `{"user_id": u64}` → `{"inserted": bool}`
//! (false if the user was there already): `SADD social-graph:users <id>`.
//! DeathStarBench's SocialGraphService::InsertUser creates the user's empty
//! follower and followee lists; Redis has no empty sorted set, so the user's
//! membership is recorded in one set instead.

use fmerge_runtime::{self as rt, Error};
use serde::Serialize;
use sn_store::api::UserId;

#[derive(Serialize)]
struct Inserted {
    inserted: bool,
}

sn_store::store!();

async fn handle(UserId { user_id }: UserId) -> Result<Inserted, Error> {
    let added: u64 = query(redis::cmd("SADD").arg("social-graph:users").arg(user_id)).await?;
    Ok(Inserted {
        inserted: added == 1,
    })
}

rt::function!(json handle);
