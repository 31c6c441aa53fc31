//! `get-user-id`: `{"username": str}` → `{"user_id": u64}`, from the Redis
//! string `user:<username>`; an unknown username is a 400 (DeathStarBench's
//! UserService::GetUserId).

use fmerge_runtime::{self as rt, Error};
use sn_store::api::{UserId, Username};

sn_store::store!();

async fn handle(Username { username }: Username) -> Result<UserId, Error> {
    let mut conn = redis().await?;
    let user_id = sn_store::users::user_id(&mut conn, &username).await?;
    Ok(UserId { user_id })
}

rt::function!(json handle);
