//! `write-home-timeline`: after a post is stored, put it on the home timeline
//! of every follower of its author (asked of `social-graph-get-followers`) and
//! of every user it mentions: `ZADD home-timeline:<id> <timestamp> <post_id>`.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::{Followers, Updated, UserId};
use std::collections::BTreeSet;

#[derive(Deserialize)]
struct Request {
    post_id: u64,
    user_id: u64,
    timestamp: u64,
    #[serde(default)]
    user_mentions_id: Vec<u64>,
}

sn_store::store!();

async fn handle(req: Request) -> Result<Updated, Error> {
    let author = serde_json::to_vec(&UserId {
        user_id: req.user_id,
    })?;
    let reply = rt::invoke("social-graph-get-followers", author).await?;
    let Followers { followers } = rt::callee_json("social-graph-get-followers", &reply)?;
    // A user who both follows the author and is mentioned gets the post once.
    let targets: BTreeSet<u64> = followers.into_iter().chain(req.user_mentions_id).collect();
    if targets.is_empty() {
        // Nothing to write (and an empty pipeline is an error to Redis).
        return Ok(Updated { updated: 0 });
    }
    let mut pipe = redis::pipe();
    for id in &targets {
        pipe.cmd("ZADD")
            .arg(format!("home-timeline:{id}"))
            .arg(req.timestamp)
            .arg(req.post_id)
            .ignore();
    }
    redis().await?.query_pipe::<()>(&pipe).await?;
    Ok(Updated {
        updated: targets.len(),
    })
}

rt::function!(json handle);
