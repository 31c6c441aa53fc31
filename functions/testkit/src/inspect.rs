//! What tests read back: a test Redis's keys and values, and the replies of
//! the unmerged system to compare a merged one against.

use crate::{Deployment, Redis, post, seed_social_network};
use std::collections::BTreeMap;

impl Redis {
    /// `ZRANGE key 0 -1 WITHSCORES`: (member, score) in rank order.
    pub fn zrange(&self, key: &str) -> Vec<(String, u64)> {
        redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut self.conn())
            .expect("ZRANGE")
    }

    /// `GET key`.
    pub fn get(&self, key: &str) -> Option<String> {
        redis::cmd("GET")
            .arg(key)
            .query(&mut self.conn())
            .expect("GET")
    }

    /// `KEYS pattern`, sorted.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg(pattern)
            .query(&mut self.conn())
            .expect("KEYS");
        keys.sort();
        keys
    }
}

/// What `requests` sent to `target` got back from the unmerged system (every
/// function its own process behind the gateway) on a freshly seeded Redis,
/// and the Redis state after them ([`Redis::dump`]).
pub fn unmerged_replies(
    target: &str,
    requests: &[&str],
) -> (Vec<(u16, String)>, BTreeMap<String, String>) {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let system = Deployment::unmerged(&redis, &[], &[]);
    let replies = requests
        .iter()
        .map(|r| post(&system.url(target), r))
        .collect();
    (replies, redis.dump())
}

/// Asserts that `reply` is a 200 with the body `expected`; `context` (a
/// process's output, say) is shown when it is not.
pub fn assert_ok(reply: &(u16, String), expected: &str, context: &str) {
    assert_eq!((reply.0, reply.1.as_str()), (200, expected), "{context}");
}
