//! `read-user-timeline`: `{"user_id": u64, "start": u64 (optional, 0),
//! "stop": u64 (optional, 10)}` → `{"posts": [post, ...]}`, newest first:
//! the user's own posts (written by `write-user-timeline`).
//!
//! DeathStarBench's UserTimelineService::ReadUserTimeline: the post ids at ranks
//! `start..stop` of `user-timeline:<user_id>` (`ZREVRANGE`, newest
//! first), then the posts from `read-posts`. An empty page asks no one.

use fmerge_runtime as rt;

sn_store::store!();
sn_store::timeline_reader!("user-timeline");

rt::function!(handle);
