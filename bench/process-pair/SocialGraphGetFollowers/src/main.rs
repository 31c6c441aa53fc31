//! social-graph-get-followers: the followers of a user, read from Redis; it
//! calls no other function.
#![allow(non_snake_case)] // The crate keeps its team's CamelCase name.

use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Query {
    user_id: i64,
}

#[derive(Serialize)]
struct Followers {
    followers: Vec<i64>,
}

fn main() {
    let input = FaasRpc::get_arg_from_caller();
    let query: Query = serde_json::from_str(&input).unwrap();
    let mut redis = RedisStore::connect();
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("social-graph:followers:{}", query.user_id))
        .arg(0)
        .arg(-1)
        .query(&mut redis)
        .unwrap();
    let followers = members.iter().map(|m| m.parse().unwrap()).collect();
    let out = serde_json::to_string(&Followers { followers }).unwrap();
    FaasRpc::send_return_value_to_caller(out);
}
