//! `register-user`: `{"first_name": str, "last_name": str, "username": str,
//! "password": str}` → `{"user_id": u64}`.
//!
//! Like DeathStarBench's UserService::RegisterUser: a new user id, the user
//! record with a salted password hash (`sn_store::users`), then
//! `social-graph-insert-user`. A taken username is a 400.
//!
//! The id has unique-id's shape, so that two runs on the same data give the
//! same ids: `MACHINE_ID << 40 | INCR user-id:counter`.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};
use sn_store::users::{self, Profile};

const COUNTER_BITS: u32 = 40;
const MAX_MACHINE_ID: u64 = (1 << 13) - 1;

#[derive(Deserialize)]
struct Request {
    first_name: String,
    last_name: String,
    username: String,
    password: String,
}

#[derive(Serialize)]
struct Response {
    user_id: u64,
}

sn_store::store!();

fn machine_id() -> Result<u64, Error> {
    let raw = rt::config!("MACHINE_ID", "1");
    match raw.trim().parse::<u64>() {
        Ok(id) if id <= MAX_MACHINE_ID => Ok(id),
        _ => Err(Error::new(format!(
            "MACHINE_ID must be an integer in 0..={MAX_MACHINE_ID}, not {raw:?}"
        ))),
    }
}

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    // Checked before an id is spent on it.
    users::check_username(&req.username)?;
    let machine = machine_id()?;
    let mut conn = redis().await?;
    let counter: u64 = redis::cmd("INCR")
        .arg("user-id:counter")
        .query_async(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis INCR failed: {e}")))?;
    if counter >= 1 << COUNTER_BITS {
        return Err(Error::new("user-id:counter overflowed 40 bits"));
    }
    let user_id = (machine << COUNTER_BITS) | counter;
    let profile = Profile {
        user_id,
        username: &req.username,
        first_name: &req.first_name,
        last_name: &req.last_name,
    };
    users::register(&mut conn, &profile, &req.password).await?;
    rt::invoke(
        "social-graph-insert-user",
        serde_json::to_vec(&serde_json::json!({ "user_id": user_id }))?,
    )
    .await?;
    rt::to_json(&Response { user_id })
}

rt::function!(handle);
