//! `social-graph-unfollow-with-username`: `{"username": str, "followee_username":
//! str}` → social-graph-unfollow's reply, `{"unfollowed": bool}`.
//!
//! DeathStarBench's SocialGraphService::UnfollowWithUsername: both user ids
//! from `get-user-id`, asked concurrently, then `social-graph-unfollow`.
//! An unknown username fails in `get-user-id` (a 400 there).

sn_store::by_usernames!("social-graph-unfollow");

fmerge_runtime::function!(handle);
