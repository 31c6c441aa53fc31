//! The fused programs behave like the real functions: the same requests,
//! sent to the unmerged deployment (each function its own process behind the
//! nginx gateway) and to the fused binary, give identical reply bodies and
//! identical Redis state, and the fused binary never sends a member's call
//! through the gateway. Everything on 127.0.0.1.
//!
//! Run: `cargo test --release -p fmerge-fused` (needs `redis-server` and
//! `nginx`; `bash .ci/run` installs them).

use fmerge_testkit::{
    COMPOSE_POST_TREE, Deployment, FUNCTIONS, Function, HttpReply, PAIR_REQUESTS, Redis,
    SAMPLE_POSTS, Unmerged, free_port, post, seed_social_network, unmerged_replies,
};

/// The fused binary `bin` serves `caller` behind the gateway, beside every
/// other function unmerged, so that a call that wrongly left the process
/// would still succeed and show in the gateway's log. Asserts that none of
/// `members` (but the caller) was asked through the gateway.
/// What the requests got back, and the Redis state after them, as
/// [`unmerged_replies`] gives them.
fn fused(bin: &str, members: &[&str], requests: &[&str]) -> Unmerged {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let port = free_port();
    let system = Deployment::unmerged(&redis, &[(members[0], port)], &[]);
    // Only the plain REDIS_URL leads to this Redis, as for the functions
    // standalone; the names a merged or misconfigured build would read lead
    // to a closed local port instead, so a wrong read fails here, fast.
    let closed = format!("redis://127.0.0.1:{}/", free_port());
    let mut env: Vec<(String, String)> = FUNCTIONS
        .iter()
        .chain(&["fmerge-fused"])
        .map(|f| (fmerge_testkit::namespaced(f, "REDIS_URL"), closed.clone()))
        .collect();
    env.push(("REDIS_URL".into(), redis.url()));
    env.push(("GATEWAY_URL".into(), system.gateway.url()));
    let program = Function::start(bin, members[0], port, env);

    let replies = requests
        .iter()
        .map(|r| post(&system.url(members[0]), r))
        .collect();
    let gateway = &system.gateway;
    assert_eq!(
        gateway.requests_for(members[0]),
        requests.len(),
        "{}",
        gateway.access_log()
    );
    for callee in &members[1..] {
        assert_eq!(
            gateway.requests_for(callee),
            0,
            "{callee} went over HTTP\n{}",
            program.output()
        );
    }
    Unmerged {
        replies,
        state: redis.dump(),
    }
}

/// Sends `requests` to the unmerged deployment of `members` and to the fused
/// binary `bin`; asserts both give the same replies and leave the same Redis
/// state, and returns the fused binary's, for each test's own checks.
fn answers_like_unmerged(bin: &str, members: &[&str], requests: &[&str]) -> Unmerged {
    let unmerged = unmerged_replies(members[0], requests);
    let fused = fused(bin, members, requests);
    assert_eq!(fused.replies, unmerged.replies);
    assert_eq!(fused.state, unmerged.state);
    fused
}

const PAIR: &[&str] = &["write-home-timeline", "social-graph-get-followers"];

#[test]
fn the_fused_pair_answers_like_the_unmerged_pair() {
    let Unmerged { replies, state } =
        answers_like_unmerged(env!("CARGO_BIN_EXE_fused-pair"), PAIR, PAIR_REQUESTS);
    assert_eq!(replies[0], HttpReply::new(200, r#"{"updated":4}"#));
    assert_eq!(replies[3].status, 400, "malformed JSON is still a 400");
    assert!(
        state.keys().any(|k| k.starts_with("home-timeline:")),
        "{state:?}"
    );
}

#[test]
fn the_fused_chain_answers_like_the_unmerged_chain() {
    let chain = COMPOSE_POST_TREE;
    let Unmerged { replies, state } =
        answers_like_unmerged(env!("CARGO_BIN_EXE_fused-chain"), chain, SAMPLE_POSTS);
    assert!(replies.iter().all(|r| r.status == 200), "{replies:?}");
    // Every member wrote what it writes: posts, short URLs, timelines, the id counter.
    for prefix in ["post:", "short-url:", "home-timeline:", "unique-id:counter"] {
        assert!(
            state.keys().any(|k| k.starts_with(prefix)),
            "no {prefix} key: {state:?}"
        );
    }
}
