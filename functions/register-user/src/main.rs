//! `register-user`: `{"first_name": str, "last_name": str, "username": str,
//! "password": str}` → `{"user_id": u64}`.
//!
//! Like DeathStarBench's UserService::RegisterUser: a new user id, the user
//! record with a salted password hash (`sn_store::users`), then
//! `social-graph-insert-user`. A taken username is a 400.
//!
//! The id has unique-id's shape, so that two runs on the same data give the
//! same ids: `MACHINE_ID << 40 | INCR user-id:counter`.

use fmerge_runtime::{self as rt, Error};
use sn_store::api::UserId;
use sn_store::users::{self, Registration};

sn_store::store!();

async fn handle(req: Registration) -> Result<UserId, Error> {
    // Checked before an id is spent on it.
    users::check_username(&req.username)?;
    let mut conn = redis().await?;
    let machine = rt::config!("MACHINE_ID", "1");
    let user_id = sn_store::ids::next(&mut conn, "user-id:counter", &machine).await?;
    users::register(&mut conn, user_id, &req).await?;
    let insert = serde_json::to_vec(&UserId { user_id })?;
    rt::invoke("social-graph-insert-user", insert).await?;
    Ok(UserId { user_id })
}

rt::function!(json handle);
