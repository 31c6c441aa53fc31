//! `register-user-with-id`: `{"first_name": str, "last_name": str,
//! "username": str, "password": str, "user_id": u64}` → `{"user_id": u64}`.
//!
//! DeathStarBench's UserService::RegisterUserWithId: `register-user` with
//! the id given (the seeder uses it), then `social-graph-insert-user`.
//! A taken username is a 400.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::UserId;
use sn_store::users::{self, Registration};

#[derive(Deserialize)]
struct Request {
    #[serde(flatten)]
    user: Registration,
    user_id: u64,
}

sn_store::store!();

async fn handle(req: Request) -> Result<UserId, Error> {
    let user_id = req.user_id;
    let mut conn = redis().await?;
    users::register(&mut conn, user_id, &req.user).await?;
    let insert = serde_json::to_vec(&UserId { user_id })?;
    rt::invoke("social-graph-insert-user", insert).await?;
    Ok(UserId { user_id })
}

rt::function!(json handle);
