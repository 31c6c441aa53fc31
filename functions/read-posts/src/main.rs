//! `read-posts`: `{"post_ids": [u64]}` → `{"posts": [post, ...]}`, each post
//! exactly as `store-post` stored it, in request order, read with one `MGET`.
//!
//! DeathStarBench's PostStorageService::ReadPosts fails when a post is
//! missing; this one leaves it out, because `compose-post` writes the
//! timelines and the post concurrently, so a timeline may name a post a
//! moment before it is stored.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::Deserialize;

#[derive(Deserialize)]
struct Request {
    post_ids: Vec<u64>,
}

sn_store::store!();

/// The posts as they were stored (JSON already), spliced, not parsed again.
async fn handle(body: Bytes) -> rt::Reply {
    let Request { post_ids } = rt::json(&body)?;
    let mut reply = b"{\"posts\":[".to_vec();
    if !post_ids.is_empty() {
        let mut mget = redis::cmd("MGET");
        for id in &post_ids {
            mget.arg(format!("post:{id}"));
        }
        let posts: Vec<Option<Vec<u8>>> = query(&mget).await?;
        let mut first = true;
        for (id, post) in post_ids.iter().zip(posts) {
            let Some(post) = post else { continue };
            // Spliced in as is, so it must be one JSON value.
            serde_json::from_slice::<serde::de::IgnoredAny>(&post)
                .map_err(|e| Error::new(format!("post:{id} is not JSON: {e}")))?;
            if !first {
                reply.push(b',');
            }
            first = false;
            reply.extend_from_slice(&post);
        }
    }
    reply.extend_from_slice(b"]}");
    Ok(reply)
}

rt::function!(handle);
