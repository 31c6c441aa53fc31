//! `compose-creator-with-username`: `{"username": str}` →
//! `{"user_id": u64, "username": str}`, the creator of a post, its id read
//! from the Redis string `user:<username>`; an unknown username is a 400.
//! DeathStarBench's UserService::ComposeCreatorWithUsername reads the id
//! itself too, rather than asking GetUserId.

use fmerge_runtime::{self as rt, Error};
use sn_store::api::{Creator, Username};

sn_store::store!();

async fn handle(Username { username }: Username) -> Result<Creator, Error> {
    let mut conn = redis().await?;
    let user_id = sn_store::users::user_id(&mut conn, &username).await?;
    Ok(Creator { user_id, username })
}

rt::function!(json handle);
