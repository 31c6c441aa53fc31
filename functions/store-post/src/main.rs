//! `store-post`: a composed post (the JSON that `compose-post` builds, with at
//! least `"post_id": u64`) → `SET post:<post_id> <the request body>` →
//! `{"post_id": u64}`. Like DeathStarBench's PostStorageService::StorePost,
//! minus the cache.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

/// Only the id is read; the rest of the post is stored as it came.
#[derive(Deserialize, Serialize)]
struct PostId {
    post_id: u64,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let post: PostId = rt::json(&body)?;
    let mut conn = redis().await?;
    redis::cmd("SET")
        .arg(format!("post:{}", post.post_id))
        .arg(&body[..])
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis SET failed: {e}")))?;
    rt::to_json(&post)
}

rt::function!(handle);
