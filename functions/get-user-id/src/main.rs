//! `get-user-id`: `{"username": str}` → `{"user_id": u64}`, from the Redis
//! string `user:<username>`; an unknown username is a 400 (DeathStarBench's
//! UserService::GetUserId).

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    username: String,
}

#[derive(Serialize)]
struct Response {
    user_id: u64,
}

sn_store::store!();

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let mut conn = redis().await?;
    let id: Option<String> = redis::cmd("GET")
        .arg(format!("user:{}", req.username))
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis GET failed: {e}")))?;
    let Some(id) = id else {
        return Err(Error::bad_request(format!(
            "user {} is not registered",
            req.username
        )));
    };
    let user_id = id
        .parse()
        .map_err(|_| Error::new(format!("user:{} holds {id:?}, not a user id", req.username)))?;
    rt::to_json(&Response { user_id })
}

rt::function!(handle);
