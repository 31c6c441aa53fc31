//! The social graph (DeathStarBench's SocialGraphService), shared by
//! `social-graph-follow`, `-unfollow` and `-get-followers`/`-get-followees`:
//!
//! - `social-graph:followees:<user_id>`: whom the user follows, a sorted set
//!   scored by the time of the follow (ms);
//! - `social-graph:followers:<user_id>`: who follows the user, the same way;
//! - `social-graph:users`: the registered user ids (`social-graph-insert-user`).

use crate::Conn;
use fmerge_runtime::Error;

/// Which way an edge is read.
#[derive(Clone, Copy)]
pub enum Side {
    Followers,
    Followees,
}

fn key(side: Side, user_id: u64) -> String {
    match side {
        Side::Followers => format!("social-graph:followers:{user_id}"),
        Side::Followees => format!("social-graph:followees:{user_id}"),
    }
}

/// Every user on `side` of `user_id`, oldest edge first.
pub async fn all(conn: &mut Conn, side: Side, user_id: u64) -> Result<Vec<u64>, Error> {
    conn.query(redis::cmd("ZRANGE").arg(key(side, user_id)).arg(0).arg(-1))
        .await
}

/// `user` follows `followee` from `timestamp` on, both sets in one
/// transaction (`ZADD NX`, so the score stays the first follow's time);
/// false if they did already.
pub async fn follow(
    conn: &mut Conn,
    user: u64,
    followee: u64,
    timestamp: u64,
) -> Result<bool, Error> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    pipe.cmd("ZADD")
        .arg(key(Side::Followees, user))
        .arg("NX")
        .arg(timestamp)
        .arg(followee);
    pipe.cmd("ZADD")
        .arg(key(Side::Followers, followee))
        .arg("NX")
        .arg(timestamp)
        .arg(user);
    let (added, _): (u64, u64) = conn.query_pipe(&pipe).await?;
    Ok(added == 1)
}

/// `user` no longer follows `followee`, both sets in one transaction; false
/// if they did not.
pub async fn unfollow(conn: &mut Conn, user: u64, followee: u64) -> Result<bool, Error> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    pipe.cmd("ZREM")
        .arg(key(Side::Followees, user))
        .arg(followee);
    pipe.cmd("ZREM")
        .arg(key(Side::Followers, followee))
        .arg(user);
    let (removed, _): (u64, u64) = conn.query_pipe(&pipe).await?;
    Ok(removed == 1)
}
