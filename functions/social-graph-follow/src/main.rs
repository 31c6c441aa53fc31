//! `social-graph-follow`: `{"user_id": u64, "followee_id": u64, "timestamp":
//! u64 ms (optional, else now)}` → `{"followed": bool}` (false if the user
//! followed them already).
//!
//! DeathStarBench's SocialGraphService::Follow: in one transaction,
//! `ZADD NX social-graph:followees:<user_id> <timestamp> <followee_id>` and
//! `ZADD NX social-graph:followers:<followee_id> <timestamp> <user_id>`, so
//! the score stays the time of the first follow. Following oneself is a 400.

use fmerge_runtime::{self as rt, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    user_id: u64,
    followee_id: u64,
    timestamp: Option<u64>,
}

#[derive(Serialize)]
struct Response {
    followed: bool,
}

sn_store::store!();

async fn handle(req: Request) -> Result<Response, Error> {
    let (user, followee) = (req.user_id, req.followee_id);
    if user == followee {
        return Err(Error::bad_request(format!(
            "user {user} cannot follow themselves"
        )));
    }
    let timestamp = req.timestamp.unwrap_or_else(sn_store::now_ms);
    let mut conn = redis().await?;
    let followed = sn_store::social_graph::follow(&mut conn, user, followee, timestamp).await?;
    Ok(Response { followed })
}

rt::function!(json handle);
