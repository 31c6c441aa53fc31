//! `read-home-timeline`: `{"user_id": u64, "start": u64 (optional, 0),
//! "stop": u64 (optional, 10)}` → `{"posts": [post, ...]}`, newest first:
//! the posts of the users they follow and the posts that mention them (written by `write-home-timeline`).
//!
//! DeathStarBench's HomeTimelineService::ReadHomeTimeline: the post ids at ranks
//! `start..stop` of `home-timeline:<user_id>` (`ZREVRANGE`, newest
//! first), then the posts from `read-posts`. An empty page asks no one.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::Deserialize;

#[derive(Deserialize)]
struct Request {
    user_id: u64,
    #[serde(default)]
    start: u64,
    #[serde(default = "default_stop")]
    stop: u64,
}

fn default_stop() -> u64 {
    10
}

static STORE: sn_store::Store = sn_store::Store::new();

async fn redis() -> Result<sn_store::Conn, Error> {
    STORE
        .conn(|| {
            rt::config!(
                "REDIS_URL",
                "redis://sn-redis-master.openfaas-fn.svc.cluster.local:6379"
            )
        })
        .await
}

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    if req.stop <= req.start {
        return rt::to_json(&serde_json::json!({ "posts": [] }));
    }
    let mut conn = redis().await?;
    let post_ids: Vec<u64> = redis::cmd("ZREVRANGE")
        .arg(format!("home-timeline:{}", req.user_id))
        .arg(req.start)
        .arg(req.stop - 1)
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis ZREVRANGE failed: {e}")))?;
    if post_ids.is_empty() {
        return rt::to_json(&serde_json::json!({ "posts": [] }));
    }
    let reply = rt::invoke(
        "read-posts",
        serde_json::to_vec(&serde_json::json!({ "post_ids": post_ids }))?,
    )
    .await?;
    Ok(reply.to_vec())
}

rt::function!(handle);
