//! `compose-post`: the front of socialNetwork's write path.
//!
//! Request: `{"username", "user_id", "text", "media_ids": [u64], "media_types": [str]
//! (optional), "post_type": "POST" (optional), "timestamp": u64 (optional)}` →
//! `{"post_id": u64}`.
//!
//! Like DeathStarBench's ComposePostService it fans out twice: first
//! `unique-id`, `text-service`, `compose-creator-with-user-id` and `media`
//! concurrently, then, with the composed post, `store-post`,
//! `write-user-timeline` and `write-home-timeline` concurrently.
//! `text-service` fans out again to `url-shorten` and `user-mention`. It
//! keeps no state itself. The lengths of `media_ids` and `media_types` are
//! checked here too, so that a bad request reaches no callee.
//!
//! `timestamp` (ms) comes from the request so that two runs on the same data
//! are identical; without it the wall clock is used.

use fmerge_runtime::{self as rt, Error};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sn_store::api::{Creator, Media, MediaList, Text, UniqueId, Url, UserMention};

#[derive(Deserialize)]
struct Request {
    username: String,
    user_id: u64,
    text: String,
    #[serde(default)]
    media_ids: Vec<u64>,
    #[serde(default)]
    media_types: Option<Vec<String>>,
    #[serde(default = "default_post_type")]
    post_type: String,
    #[serde(default)]
    timestamp: Option<u64>,
}

fn default_post_type() -> String {
    "POST".into()
}

/// DeathStarBench's Post, as stored by `store-post`.
#[derive(Serialize)]
struct Post {
    post_id: u64,
    creator: Creator,
    text: String,
    user_mentions: Vec<UserMention>,
    media: Vec<Media>,
    urls: Vec<Url>,
    timestamp: u64,
    post_type: String,
}

async fn handle(req: Request) -> Result<serde_json::Value, Error> {
    if req
        .media_types
        .as_ref()
        .is_some_and(|types| types.len() != req.media_ids.len())
    {
        return Err(Error::bad_request(
            "media_ids and media_types differ in length",
        ));
    }
    let timestamp = req.timestamp.unwrap_or_else(sn_store::now_ms);

    // First fan-out: the id, the text, the creator and the media do not
    // depend on each other.
    let id_req = serde_json::to_vec(&json!({ "post_type": req.post_type }))?;
    let text_req = serde_json::to_vec(&json!({ "text": req.text }))?;
    let creator_req = serde_json::to_vec(&json!({
        "user_id": req.user_id,
        "username": req.username,
    }))?;
    let media_req = serde_json::to_vec(&json!({
        "media_ids": req.media_ids,
        "media_types": req.media_types,
    }))?;
    let (id, text, creator, media) = tokio::try_join!(
        rt::invoke("unique-id", id_req),
        rt::invoke("text-service", text_req),
        rt::invoke("compose-creator-with-user-id", creator_req),
        rt::invoke("media", media_req)
    )?;
    let UniqueId { unique_id: post_id } = rt::callee_json("unique-id", &id)?;
    let text: Text = rt::callee_json("text-service", &text)?;
    let creator: Creator = rt::callee_json("compose-creator-with-user-id", &creator)?;
    let MediaList { media } = rt::callee_json("media", &media)?;

    let user_mentions_id: Vec<u64> = text.user_mentions.iter().map(|m| m.user_id).collect();
    let author = creator.user_id;
    let post = Post {
        post_id,
        creator,
        text: text.text,
        user_mentions: text.user_mentions,
        media,
        urls: text.urls,
        timestamp,
        post_type: req.post_type,
    };

    // Second fan-out: storing the post and the two timelines are independent.
    let store_req = serde_json::to_vec(&post)?;
    let user_timeline_req = serde_json::to_vec(&json!({
        "post_id": post_id,
        "user_id": author,
        "timestamp": timestamp,
    }))?;
    let home_timeline_req = serde_json::to_vec(&json!({
        "post_id": post_id,
        "user_id": author,
        "timestamp": timestamp,
        "user_mentions_id": user_mentions_id,
    }))?;
    tokio::try_join!(
        rt::invoke("store-post", store_req),
        rt::invoke("write-user-timeline", user_timeline_req),
        rt::invoke("write-home-timeline", home_timeline_req)
    )?;
    Ok(json!({ "post_id": post_id }))
}

rt::function!(json handle);
