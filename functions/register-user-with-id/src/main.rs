//! `register-user-with-id`: `{"first_name": str, "last_name": str,
//! "username": str, "password": str, "user_id": u64}` → `{"user_id": u64}`.
//!
//! DeathStarBench's UserService::RegisterUserWithId: `register-user` with
//! the id given (the seeder uses it), then `social-graph-insert-user`.
//! A taken username is a 400.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::UserId;
use sn_store::users::{self, Profile};

#[derive(Deserialize)]
struct Request {
    first_name: String,
    last_name: String,
    username: String,
    password: String,
    user_id: u64,
}

sn_store::store!();

async fn handle(req: Request) -> Result<UserId, Error> {
    let user_id = req.user_id;
    let profile = Profile {
        user_id,
        username: &req.username,
        first_name: &req.first_name,
        last_name: &req.last_name,
    };
    let mut conn = redis().await?;
    users::register(&mut conn, &profile, &req.password).await?;
    let insert = serde_json::to_vec(&UserId { user_id })?;
    rt::invoke("social-graph-insert-user", insert).await?;
    Ok(UserId { user_id })
}

rt::function!(json handle);
