//! `read-post`: `{"post_id": u64}` → the post, exactly as `store-post`
//! stored it under `post:<post_id>`; an unknown id is a 400
//! (DeathStarBench's PostStorageService::ReadPost, minus the cache).

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::Deserialize;

#[derive(Deserialize)]
struct Request {
    post_id: u64,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let post: Option<Vec<u8>> = redis::cmd("GET")
        .arg(format!("post:{}", req.post_id))
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis GET failed: {e}")))?;
    post.ok_or_else(|| Error::bad_request(format!("post {} not found", req.post_id)))
}

rt::function!(handle);
