//! `register-user-with-id`: `{"first_name": str, "last_name": str,
//! "username": str, "password": str, "user_id": u64}` → `{"user_id": u64}`.
//!
//! DeathStarBench's UserService::RegisterUserWithId: `register-user` with
//! the id given (the seeder uses it), then `social-graph-insert-user`.
//! A taken username is a 400.

use fmerge_runtime::{self as rt, Bytes};
use serde::{Deserialize, Serialize};
use sn_store::users::{self, Profile};

#[derive(Deserialize)]
struct Request {
    first_name: String,
    last_name: String,
    username: String,
    password: String,
    user_id: u64,
}

#[derive(Serialize)]
struct Response {
    user_id: u64,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let profile = Profile {
        user_id: req.user_id,
        username: &req.username,
        first_name: &req.first_name,
        last_name: &req.last_name,
    };
    let mut conn = redis().await?;
    users::register(&mut conn, &profile, &req.password).await?;
    rt::invoke(
        "social-graph-insert-user",
        serde_json::to_vec(&serde_json::json!({ "user_id": req.user_id }))?,
    )
    .await?;
    rt::to_json(&Response {
        user_id: req.user_id,
    })
}

rt::function!(handle);
