//! write-home-timeline: puts a new post on the home timeline of each of its
//! author's followers, which it asks social-graph-get-followers for through
//! the gateway.
#![allow(non_snake_case)] // The crate keeps its team's CamelCase name.

use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Post {
    post_id: i64,
    user_id: i64,
    timestamp: i64,
}

#[derive(Serialize)]
struct FollowersQuery {
    user_id: i64,
}

#[derive(Deserialize)]
struct Followers {
    followers: Vec<i64>,
}

fn main() {
    let input = FaasRpc::get_arg_from_caller();
    let post: Post = serde_json::from_str(&input).unwrap();
    let query = serde_json::to_string(&FollowersQuery {
        user_id: post.user_id,
    })
    .unwrap();
    let reply = FaasRpc::make_rpc("social-graph-get-followers", query);
    let followers: Followers = serde_json::from_str(&reply).unwrap();
    let mut redis = RedisStore::connect();
    for follower in &followers.followers {
        redis::cmd("ZADD")
            .arg(format!("home-timeline:{follower}"))
            .arg(post.timestamp)
            .arg(post.post_id)
            .exec(&mut redis)
            .unwrap();
    }
    FaasRpc::send_return_value_to_caller(format!("{{\"updated\":{}}}", followers.followers.len()));
}
