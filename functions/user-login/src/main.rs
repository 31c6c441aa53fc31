//! `user-login`: `{"username": str, "password": str}` → `{"user_id": u64}`.
//!
//! DeathStarBench's UserService::Login checks the password against the
//! stored salted hash (`sn_store::users::login`); an unknown user and a wrong
//! password are the same 400, `incorrect username or password`. It answers
//! the user id instead of DeathStarBench's JWT: nothing in this port checks a
//! token. The password is never logged.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::UserId;

#[derive(Deserialize)]
struct Credentials {
    username: String,
    password: String,
}

sn_store::store!();

async fn handle(login: Credentials) -> Result<UserId, Error> {
    let mut conn = redis().await?;
    let user_id = sn_store::users::login(&mut conn, &login.username, &login.password).await?;
    Ok(UserId { user_id })
}

rt::function!(json handle);
