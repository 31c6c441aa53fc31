//! `social-graph-follow-with-username`: `{"username": str, "followee_username":
//! str, "timestamp": u64 ms (optional)}` → social-graph-follow's reply, `{"followed": bool}`.
//!
//! DeathStarBench's SocialGraphService::FollowWithUsername: both user ids
//! from `get-user-id`, asked concurrently, then `social-graph-follow`.
//! An unknown username fails in `get-user-id` (a 400 there).

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Request {
    username: String,
    followee_username: String,
    #[serde(default)]
    timestamp: Option<u64>,
}

#[derive(Deserialize)]
struct UserId {
    user_id: u64,
}

fn user_id(body: &[u8]) -> Result<u64, Error> {
    serde_json::from_slice::<UserId>(body)
        .map(|r| r.user_id)
        .map_err(|e| Error::new(format!("get-user-id sent an unexpected reply: {e}")))
}

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let (user, followee) = tokio::try_join!(
        rt::invoke(
            "get-user-id",
            serde_json::to_vec(&json!({ "username": req.username }))?
        ),
        rt::invoke(
            "get-user-id",
            serde_json::to_vec(&json!({ "username": req.followee_username }))?
        )
    )?;
    let request = json!({
        "user_id": user_id(&user)?,
        "followee_id": user_id(&followee)?, "timestamp": req.timestamp,
    });
    let reply = rt::invoke("social-graph-follow", serde_json::to_vec(&request)?).await?;
    Ok(reply.to_vec())
}

rt::function!(handle);
