//! `user-login`: `{"username": str, "password": str}` → `{"user_id": u64}`.
//!
//! DeathStarBench's UserService::Login checks the password against the
//! stored salted hash (`sn_store::users::login`); an unknown user and a wrong
//! password are the same 400, `incorrect username or password`. It answers
//! the user id instead of DeathStarBench's JWT: nothing in this port checks a
//! token. The password is never logged.

use fmerge_runtime::{self as rt, Bytes, Error};
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

static STORE: sn_store::Store = sn_store::Store::new();

async fn redis() -> Result<sn_store::Conn, Error> {
    STORE
        .conn(|| {
            rt::config!(
                "REDIS_URL",
                "redis://sn-redis-master.openfaas-fn.svc.cluster.local:6379"
            )
        })
        .await
}

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let user_id = sn_store::users::login(&mut conn, &req.username, &req.password).await?;
    rt::to_json(&Response { user_id })
}

rt::function!(handle);
