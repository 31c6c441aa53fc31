//! `write-home-timeline`: after a post is stored, put it on the home timeline
//! of every follower of its author (asked of `social-graph-get-followers`) and
//! of every user it mentions: `ZADD home-timeline:<id> <timestamp> <post_id>`.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Deserialize)]
struct Request {
    post_id: u64,
    user_id: u64,
    timestamp: u64,
    #[serde(default)]
    user_mentions_id: Vec<u64>,
}

#[derive(Deserialize)]
struct Followers {
    followers: Vec<u64>,
}

#[derive(Serialize)]
struct Response {
    updated: usize,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let reply = rt::invoke(
        "social-graph-get-followers",
        serde_json::to_vec(&serde_json::json!({ "user_id": req.user_id }))?,
    )
    .await?;
    let Followers { followers } = serde_json::from_slice(&reply).map_err(|e| {
        Error::new(format!(
            "social-graph-get-followers sent an unexpected reply: {e}"
        ))
    })?;
    // A user who both follows the author and is mentioned gets the post once.
    let targets: BTreeSet<u64> = followers.into_iter().chain(req.user_mentions_id).collect();
    if targets.is_empty() {
        // Nothing to write (and an empty pipeline is an error to Redis).
        return rt::to_json(&Response { updated: 0 });
    }
    let mut pipe = redis::pipe();
    for id in &targets {
        pipe.cmd("ZADD")
            .arg(format!("home-timeline:{id}"))
            .arg(req.timestamp)
            .arg(req.post_id)
            .ignore();
    }
    let mut conn = redis().await?;
    pipe.query_async::<()>(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis ZADD failed: {e}")))?;
    rt::to_json(&Response {
        updated: targets.len(),
    })
}

rt::function!(handle);
