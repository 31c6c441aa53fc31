//! `user-login`: `{"username": str, "password": str}` → `{"user_id": u64}`.
//!
//! DeathStarBench's UserService::Login checks the password against the
//! stored salted hash (`sn_store::users::login`); an unknown user and a wrong
//! password are the same 400, `incorrect username or password`. It answers
//! the user id instead of DeathStarBench's JWT: nothing in this port checks a
//! token. The password is never logged.

use fmerge_runtime::{self as rt, Bytes};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    username: String,
    password: String,
}

#[derive(Serialize)]
struct Response {
    user_id: u64,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let user_id = sn_store::users::login(&mut conn, &req.username, &req.password).await?;
    rt::to_json(&Response { user_id })
}

rt::function!(handle);
