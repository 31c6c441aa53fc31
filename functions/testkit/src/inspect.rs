//! What tests read back: a test Redis's keys and values, and the replies of
//! the unmerged system to compare a merged one against.

use crate::{Deployment, HttpReply, Redis, post, seed_social_network};
use std::collections::BTreeMap;

/// A member of a sorted set, with its score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub member: String,
    pub score: u64,
}

impl Scored {
    /// `member` (as text) with `score`, for tests to compare against.
    pub fn new(member: impl ToString, score: u64) -> Scored {
        Scored {
            member: member.to_string(),
            score,
        }
    }
}

/// The unmerged system's replies, and the Redis state after them.
pub struct Unmerged {
    pub replies: Vec<HttpReply>,
    /// [`Redis::dump`].
    pub state: BTreeMap<String, String>,
}

impl Redis {
    /// `ZRANGE key 0 -1 WITHSCORES`: the members in rank order.
    pub fn zrange(&self, key: &str) -> Vec<Scored> {
        let pairs: Vec<(String, u64)> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut self.conn())
            .expect("ZRANGE");
        pairs
            .into_iter()
            .map(|(member, score)| Scored { member, score })
            .collect()
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
/// and the Redis state after them.
pub fn unmerged_replies(target: &str, requests: &[&str]) -> Unmerged {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let system = Deployment::unmerged(&redis, &[], &[]);
    let replies = requests
        .iter()
        .map(|r| post(&system.url(target), r))
        .collect();
    Unmerged {
        replies,
        state: redis.dump(),
    }
}

/// Asserts that `reply` is a 200 with the body `expected`; `context` (a
/// process's output, say) is shown when it is not.
pub fn assert_ok(reply: &HttpReply, expected: &str, context: &str) {
    assert_eq!(
        (reply.status, reply.body.as_str()),
        (200, expected),
        "{context}"
    );
}
