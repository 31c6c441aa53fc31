//! `social-graph-follow-with-username`: `{"username": str, "followee_username":
//! str, "timestamp": u64 ms (optional)}` → social-graph-follow's reply, `{"followed": bool}`.
//!
//! DeathStarBench's SocialGraphService::FollowWithUsername: both user ids
//! from `get-user-id`, asked concurrently, then `social-graph-follow`.
//! An unknown username fails in `get-user-id` (a 400 there).

sn_store::by_usernames!("social-graph-follow", timestamp: Option<u64>);

fmerge_runtime::function!(handle);
