//! `store-post`: a composed post (the JSON that `compose-post` builds, with at
//! least `"post_id": u64`) → `SET post:<post_id> <the request body>` →
//! `{"post_id": u64}`. Like DeathStarBench's PostStorageService::StorePost,
//! minus the cache.

use fmerge_runtime::{self as rt, Bytes};
use serde::{Deserialize, Serialize};

/// Only the id is read; the rest of the post is stored as it came.
#[derive(Deserialize, Serialize)]
struct PostId {
    post_id: u64,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let post: PostId = rt::json(&body)?;
    let key = format!("post:{}", post.post_id);
    query::<()>(redis::cmd("SET").arg(key).arg(&body[..])).await?;
    rt::to_json(&post)
}

rt::function!(handle);
