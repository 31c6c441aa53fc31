//! `read-post`: `{"post_id": u64}` → the post, exactly as `store-post`
//! stored it under `post:<post_id>`; an unknown id is a 400
//! (DeathStarBench's PostStorageService::ReadPost, minus the cache).

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;

#[derive(Deserialize)]
struct Request {
    post_id: u64,
}

sn_store::store!();

/// The post as it was stored (JSON already), not parsed again.
async fn handle(body: rt::Bytes) -> rt::Reply {
    let Request { post_id } = rt::json(&body)?;
    let post: Option<Vec<u8>> = query(redis::cmd("GET").arg(format!("post:{post_id}"))).await?;
    post.ok_or_else(|| Error::bad_request(format!("post {post_id} not found")))
}

rt::function!(handle);
