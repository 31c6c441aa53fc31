//! `compose-creator-with-user-id`: `{"user_id": u64, "username": str}` →
//! `{"user_id": u64, "username": str}`, the creator of a post.
//! DeathStarBench's UserService::ComposeCreatorWithUserId builds it from the
//! request alone, without a lookup; so does this one (no state).

use fmerge_runtime::{self as rt, Error};
use sn_store::api::Creator;

async fn handle(creator: Creator) -> Result<Creator, Error> {
    Ok(creator)
}

rt::function!(json handle);
