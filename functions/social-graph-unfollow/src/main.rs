//! `social-graph-unfollow`: `{"user_id": u64, "followee_id": u64}` →
//! `{"unfollowed": bool}` (false if the user did not follow them).
//!
//! DeathStarBench's SocialGraphService::Unfollow: in one transaction,
//! `ZREM social-graph:followees:<user_id> <followee_id>` and
//! `ZREM social-graph:followers:<followee_id> <user_id>`.

use fmerge_runtime::{self as rt, Error};
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

async fn handle(req: Request) -> Result<Response, Error> {
    let (user, followee) = (req.user_id, req.followee_id);
    let mut conn = redis().await?;
    let unfollowed = sn_store::social_graph::unfollow(&mut conn, user, followee).await?;
    Ok(Response { unfollowed })
}

rt::function!(json handle);
