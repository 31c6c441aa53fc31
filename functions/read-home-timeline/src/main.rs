//! `read-home-timeline`: `{"user_id": u64, "start": u64 (optional, 0),
//! "stop": u64 (optional, 10)}` → `{"posts": [post, ...]}`, newest first:
//! the posts of the users they follow and the posts that mention them (written by `write-home-timeline`).
//!
//! DeathStarBench's HomeTimelineService::ReadHomeTimeline: the post ids at ranks
//! `start..stop` of `home-timeline:<user_id>` (`ZREVRANGE`, newest
//! first), then the posts from `read-posts`. An empty page asks no one.

use fmerge_runtime as rt;

sn_store::store!();
sn_store::timeline_reader!("home-timeline");

rt::function!(handle);
