//! `user-mention`: `{"usernames": ["bob", …]}` →
//! `{"user_mentions": [{"user_id": u64, "username": "bob"}, …]}` in request
//! order, each id read from the Redis string `user:<username>`.
//!
//! **Deliberate fault:** a username that is not registered makes this handler
//! PANIC (DeathStarBench answers an error there). It is on purpose, and the
//! only panic in these functions: the test suite uses it to check that a
//! panicking function fails one request with an error reply, standalone or
//! merged into another binary, and that the next request still succeeds.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::{UserMention, UserMentions};

#[derive(Deserialize)]
struct Request {
    usernames: Vec<String>,
}

sn_store::store!();

async fn handle(req: Request) -> Result<UserMentions, Error> {
    let mut user_mentions = Vec::with_capacity(req.usernames.len());
    if req.usernames.is_empty() {
        return Ok(UserMentions { user_mentions });
    }
    let mut mget = redis::cmd("MGET");
    for name in &req.usernames {
        mget.arg(format!("user:{name}"));
    }
    let ids: Vec<Option<String>> = query(&mget).await?;
    for (username, id) in req.usernames.into_iter().zip(ids) {
        // The deliberate fault (see the module docs): panic, not an Err.
        let Some(id) = id else {
            panic!("mentioned user @{username} is not registered")
        };
        let user_id = id
            .parse()
            .map_err(|_| Error::new(format!("user:{username} holds {id:?}, not a user id")))?;
        user_mentions.push(UserMention { user_id, username });
    }
    Ok(UserMentions { user_mentions })
}

rt::function!(json handle);
