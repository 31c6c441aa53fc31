//! `compose-creator-with-user-id`: `{"user_id": u64, "username": str}` →
//! `{"user_id": u64, "username": str}`, the creator of a post.
//! DeathStarBench's UserService::ComposeCreatorWithUserId builds it from the
//! request alone, without a lookup; so does this one (no state).

use fmerge_runtime::{self as rt, Bytes};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize)]
struct Creator {
    user_id: u64,
    username: String,
}

async fn handle(body: Bytes) -> rt::Reply {
    let creator: Creator = rt::json(&body)?;
    rt::to_json(&creator)
}

rt::function!(handle);
