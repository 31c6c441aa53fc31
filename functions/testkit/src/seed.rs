//! A socialNetwork data set made through the functions themselves: users
//! (`register-user-with-id`), a follow graph (`social-graph-follow`) and
//! posts (`compose-post`), all POSTed to a gateway. The `seed` binary runs
//! it from the command line; the tests run it on a [`crate::Deployment`].
//!
//! The data is a function of the options alone (a seeded generator):
//! user `i` (1..=users) is `user<i>` with id `i` and password
//! [`seed_password`]`(i)`; each user follows `degree` others; post `j` is by
//! a random user, mentions another on every third post and links a URL on
//! every second. With `concurrency` 1 the post ids are the same on every run
//! too; with more, which post gets which id depends on timing.

use crate::http::{HttpReply, try_post};
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How much to seed.
#[derive(Clone, Debug)]
pub struct SeedOptions {
    pub users: u64,
    /// Followees per user (at most `users - 1`).
    pub degree: u64,
    pub posts: u64,
    /// The generator's seed: another seed, another graph and other posts.
    pub seed: u64,
    /// Requests in flight at once.
    pub concurrency: usize,
}

/// What was seeded, and how long it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeded {
    pub users: u64,
    pub follows: u64,
    pub posts: u64,
    pub took: Duration,
}

/// The username of seeded user `i`.
pub fn seed_username(i: u64) -> String {
    format!("user{i}")
}

/// The password of seeded user `i` (test data; never printed).
pub fn seed_password(i: u64) -> String {
    format!("pw-{i}-seeded")
}

/// One user following another, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Follow {
    pub follower: u64,
    pub followee: u64,
}

/// The follow graph: each user following `degree` distinct others.
pub fn follow_graph(opts: &SeedOptions) -> Vec<Follow> {
    let n = opts.users;
    let degree = opts.degree.min(n.saturating_sub(1));
    let mut rng = SplitMix(opts.seed ^ 0xF011_0500);
    let mut edges = Vec::with_capacity((n * degree) as usize);
    for user in 1..=n {
        let mut chosen = HashSet::new();
        if degree * 2 < n {
            // Sparse: draw until enough distinct others (expected < 2 draws each).
            while (chosen.len() as u64) < degree {
                let other = 1 + rng.next() % n;
                if other != user && chosen.insert(other) {
                    edges.push(Follow {
                        follower: user,
                        followee: other,
                    });
                }
            }
        } else {
            // Dense: a partial shuffle of everyone else.
            let mut others: Vec<u64> = (1..=n).filter(|&o| o != user).collect();
            for k in 0..degree as usize {
                let pick = k + (rng.next() % (others.len() - k) as u64) as usize;
                others.swap(k, pick);
                edges.push(Follow {
                    follower: user,
                    followee: others[k],
                });
            }
        }
    }
    edges
}

/// Seeds through the gateway at `gateway` (`http://host:port`): every user,
/// then every follow, then every post. Stops at the first failed request,
/// with an error naming the function, the status and the reply.
pub fn seed(gateway: &str, opts: &SeedOptions) -> Result<Seeded, String> {
    if opts.users == 0 && (opts.degree > 0 || opts.posts > 0) {
        return Err("follows and posts need users: pass --users 1 or more".into());
    }
    let started = Instant::now();
    let users: Vec<String> = (1..=opts.users)
        .map(|i| {
            format!(
                r#"{{"first_name":"First{i}","last_name":"Last{i}","username":"{}","password":"{}","user_id":{i}}}"#,
                seed_username(i),
                seed_password(i)
            )
        })
        .collect();
    run(gateway, "register-user-with-id", &users, opts.concurrency)?;

    let follows: Vec<String> = follow_graph(opts)
        .iter()
        .enumerate()
        .map(|(k, follow)| {
            format!(
                r#"{{"user_id":{},"followee_id":{},"timestamp":{}}}"#,
                follow.follower,
                follow.followee,
                1_600_000_000_000u64 + k as u64
            )
        })
        .collect();
    run(gateway, "social-graph-follow", &follows, opts.concurrency)?;

    let mut rng = SplitMix(opts.seed ^ 0x9057);
    let posts: Vec<String> = (0..opts.posts)
        .map(|j| {
            let author = 1 + rng.next() % opts.users;
            let mut text = format!("post {j} by {}", seed_username(author));
            if j % 3 == 0 {
                text += &format!(" hi @{}", seed_username(1 + rng.next() % opts.users));
            }
            if j % 2 == 0 {
                text += &format!(" https://example.com/p/{j}?from={author}");
            }
            format!(
                r#"{{"username":"{}","user_id":{author},"text":"{text}","media_ids":[{j}],"media_types":["png"],"post_type":"POST","timestamp":{}}}"#,
                seed_username(author),
                1_700_000_000_000u64 + j * 1000
            )
        })
        .collect();
    run(gateway, "compose-post", &posts, opts.concurrency)?;

    Ok(Seeded {
        users: users.len() as u64,
        follows: follows.len() as u64,
        posts: posts.len() as u64,
        took: started.elapsed(),
    })
}

/// POSTs every body to `function`, `concurrency` at a time.
fn run(gateway: &str, function: &str, bodies: &[String], concurrency: usize) -> Result<(), String> {
    let url = format!("{}/function/{function}", gateway.trim_end_matches('/'));
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..concurrency.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(body) = bodies.get(i) else { return };
                    let why = match try_post(&url, body) {
                        Ok(HttpReply { status: 200, .. }) => continue,
                        Ok(HttpReply { status, body }) => format!("answered HTTP {status}: {body}"),
                        Err(e) => format!("could not be reached: {e}"),
                    };
                    let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                    failed.get_or_insert(format!(
                        "{function} (request {} of {}) {why}",
                        i + 1,
                        bodies.len()
                    ));
                    // Stop the other workers too.
                    next.store(bodies.len(), Ordering::Relaxed);
                    return;
                }
            });
        }
    });
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// SplitMix64: a small seeded generator, so that a seed names one data set.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(users: u64, degree: u64) -> SeedOptions {
        SeedOptions {
            users,
            degree,
            posts: 0,
            seed: 7,
            concurrency: 1,
        }
    }

    #[test]
    fn each_user_follows_degree_distinct_others() {
        for (users, degree) in [(50, 3), (10, 9), (10, 20), (1, 5), (6, 4)] {
            let edges = follow_graph(&opts(users, degree));
            let degree = degree.min(users - 1);
            assert_eq!(edges.len() as u64, users * degree, "{users} {degree}");
            for user in 1..=users {
                let mine: HashSet<u64> = edges
                    .iter()
                    .filter(|e| e.follower == user)
                    .map(|e| e.followee)
                    .collect();
                assert_eq!(mine.len() as u64, degree);
                assert!(mine.iter().all(|&t| t != user && (1..=users).contains(&t)));
            }
        }
        assert_eq!(follow_graph(&opts(50, 3)), follow_graph(&opts(50, 3)));
        let other = SeedOptions {
            seed: 8,
            ..opts(50, 3)
        };
        assert_ne!(follow_graph(&opts(50, 3)), follow_graph(&other));
    }
}
