//! End-to-end tests of the unmerged socialNetwork: a real redis-server, a real
//! nginx as the OpenFaaS gateway, and every function as its own process, all
//! on 127.0.0.1. Each test has its own Redis, gateway and processes.
//!
//! These test the runtime (serve, invoke, config) with the functions built
//! on it, not fmerge, so they live with the runtime.
//!
//! Run: `cargo test --release -p fmerge-runtime --test unmerged`
//! (needs `redis-server` and `nginx`; `bash .ci/run` installs them).

mod support;

use fmerge_testkit::{
    COMPOSE_POST_TREE, Deployment, FUNCTIONS, Function, HttpReply, Redis, SAMPLE_POSTS, Scored,
    Stub, free_port, post, seed_social_network, unmerged_replies,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{Answers, error_of, failure};

/// What the first id of machine 1 is: `1 << 40 | 1`.
const FIRST_POST_ID: u64 = (1 << 40) | 1;

#[test]
fn the_pair_writes_every_follower_and_mention_timeline() {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let system = Deployment::unmerged(&redis, &[], &[]);

    // Followers come back in score order, not member order.
    system.ok(
        "social-graph-get-followers",
        r#"{"user_id": 1}"#,
        r#"{"followers":[4,2,5]}"#,
    );
    system.ok(
        "social-graph-get-followers",
        r#"{"user_id": 99}"#,
        r#"{"followers":[]}"#,
    );

    // Mentions 5 (also a follower) and 3 (not a follower): 4 distinct timelines.
    let request =
        r#"{"post_id": 100, "user_id": 1, "timestamp": 1700000000, "user_mentions_id": [5, 3]}"#;
    system.ok("write-home-timeline", request, r#"{"updated":4}"#);
    for user in [2, 3, 4, 5] {
        assert_eq!(
            redis.zrange(&format!("home-timeline:{user}")),
            [Scored::new("100", 1700000000)],
            "user {user}"
        );
    }
    assert!(
        redis.keys("home-timeline:1").is_empty(),
        "the author's own timeline is not written"
    );
    assert_eq!(system.gateway.requests_for("write-home-timeline"), 1);
    assert_eq!(system.gateway.requests_for("social-graph-get-followers"), 3);

    // A user without followers: only the mentions.
    let request =
        r#"{"post_id": 101, "user_id": 99, "timestamp": 1700000001, "user_mentions_id": [2]}"#;
    system.ok("write-home-timeline", request, r#"{"updated":1}"#);
    assert_eq!(
        redis.zrange("home-timeline:2"),
        [
            Scored::new("100", 1700000000),
            Scored::new("101", 1700000001)
        ]
    );

    // No followers and no mentions: no timeline to write, and no error.
    let request =
        r#"{"post_id": 102, "user_id": 98, "timestamp": 1700000002, "user_mentions_id": []}"#;
    system.ok("write-home-timeline", request, r#"{"updated":0}"#);
}

#[test]
fn compose_post_runs_the_whole_call_tree() {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let system = Deployment::unmerged(&redis, &[], &[]);

    let HttpReply { status, body } = post(&system.url("compose-post"), SAMPLE_POSTS[0]);
    assert_eq!(status, 200, "{body}\n{}", system.outputs());
    assert_eq!(body, format!(r#"{{"post_id":{FIRST_POST_ID}}}"#));

    // url-shorten: the code comes from the C library, the mapping is in Redis.
    let url = "https://example.com/a?x=1";
    let code = shortcode::short_code(url);
    let short = format!("http://short-url/{code}");
    assert_eq!(
        redis.get(&format!("short-url:{code}")).as_deref(),
        Some(url)
    );

    // store-post: the composed post, byte for byte.
    let expected = json!({
        "post_id": FIRST_POST_ID,
        "creator": {"user_id": 1, "username": "alice"},
        "text": format!("hello @bob, see {short}"),
        "user_mentions": [{"user_id": 2, "username": "bob"}],
        "media": [{"media_id": 11, "media_type": "png"}],
        "urls": [{"shortened_url": short, "expanded_url": url}],
        "timestamp": 1700000000000u64,
        "post_type": "POST",
    });
    let stored = redis
        .get(&format!("post:{FIRST_POST_ID}"))
        .expect("post stored");
    assert_eq!(serde_json::from_str::<Value>(&stored).unwrap(), expected);
    assert!(stored.starts_with(&format!(
        r#"{{"post_id":{FIRST_POST_ID},"creator":{{"user_id":1,"username":"alice"}},"text":"#
    )));

    // write-home-timeline: alice's followers 4, 2, 5 (bob also mentioned).
    for user in [2, 4, 5] {
        assert_eq!(
            redis.zrange(&format!("home-timeline:{user}")),
            [Scored::new(FIRST_POST_ID, 1700000000000)]
        );
    }
    assert_eq!(redis.keys("home-timeline:*").len(), 3);
    // write-user-timeline: the author's own timeline.
    assert_eq!(
        redis.zrange("user-timeline:1"),
        [Scored::new(FIRST_POST_ID, 1700000000000)]
    );
    assert_eq!(redis.keys("user-timeline:*"), ["user-timeline:1"]);

    // Every function of the tree answered exactly one request, and no other
    // function was asked anything.
    for function in FUNCTIONS {
        let expected = usize::from(COMPOSE_POST_TREE.contains(function));
        assert_eq!(
            system.gateway.requests_for(function),
            expected,
            "{function}\n{}",
            system.gateway.access_log()
        );
    }

    // The next post gets the next id; mentions of a non-follower reach them.
    let HttpReply { status, body } = post(&system.url("compose-post"), SAMPLE_POSTS[1]);
    assert_eq!(
        (status, body),
        (200, format!(r#"{{"post_id":{}}}"#, FIRST_POST_ID + 1))
    );
    assert_eq!(
        redis.zrange("home-timeline:3"),
        [Scored::new(FIRST_POST_ID + 1, 1700000001000)]
    );
    assert_eq!(redis.keys("short-url:*").len(), 3);
}

#[test]
fn compose_post_fans_out_concurrently_in_both_stages() {
    let redis = Redis::start();
    let delay = Duration::from_millis(700);
    let unique = Stub::start(200, r#"{"unique_id": 42}"#, delay);
    let text = Stub::start(
        200,
        r#"{"text": "composed", "user_mentions": [{"user_id": 7, "username": "g"}], "urls": []}"#,
        delay,
    );
    let store = Stub::start(200, r#"{"post_id": 42}"#, delay);
    let timeline = Stub::start(200, r#"{"updated": 1}"#, delay);
    let overrides = [
        ("unique-id", unique.port()),
        ("text-service", text.port()),
        ("store-post", store.port()),
        ("write-home-timeline", timeline.port()),
    ];
    let system = Deployment::unmerged(&redis, &overrides, &[]);

    let request =
        r#"{"username": "g", "user_id": 3, "text": "raw", "media_ids": [], "timestamp": 5}"#;
    let started = Instant::now();
    let HttpReply { status, body } = post(&system.url("compose-post"), request);
    let took = started.elapsed();
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"post_id":42}"#),
        "{}",
        system.outputs()
    );
    // Two stages of two 700 ms callees: 1.4 s if each stage runs its two
    // concurrently, 2.8 s if one after the other.
    assert!(took >= 2 * delay, "took {took:?}: callees did not all run?");
    assert!(
        took < 3 * delay,
        "took {took:?}: the callees of a stage did not run concurrently"
    );

    // What each callee was asked.
    assert_eq!(unique.requests(), [r#"{"post_type":"POST"}"#]);
    assert_eq!(text.requests(), [r#"{"text":"raw"}"#]);
    assert_eq!(
        store.requests(),
        [
            r#"{"post_id":42,"creator":{"user_id":3,"username":"g"},"text":"composed","user_mentions":[{"user_id":7,"username":"g"}],"media":[],"urls":[],"timestamp":5,"post_type":"POST"}"#
        ]
    );
    let asked: Value = serde_json::from_str(&timeline.requests()[0]).unwrap();
    assert_eq!(
        asked,
        json!({"post_id": 42, "user_id": 3, "timestamp": 5, "user_mentions_id": [7]})
    );
}

#[test]
fn text_service_asks_url_shorten_and_user_mention_concurrently() {
    let redis = Redis::start();
    let delay = Duration::from_millis(700);
    let urls = Stub::start(
        200,
        r#"{"urls": [{"shortened_url": "http://short-url/s", "expanded_url": "https://a.b/c"}]}"#,
        delay,
    );
    let mentions = Stub::start(
        200,
        r#"{"user_mentions": [{"user_id": 9, "username": "zed"}]}"#,
        delay,
    );
    let system = Deployment::unmerged(
        &redis,
        &[
            ("url-shorten", urls.port()),
            ("user-mention", mentions.port()),
        ],
        &[],
    );

    let started = Instant::now();
    let HttpReply { status, body } = post(
        &system.url("text-service"),
        r#"{"text": "hi @zed: https://a.b/c now"}"#,
    );
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}\n{}", system.outputs());
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        reply,
        json!({
            "text": "hi @zed: http://short-url/s now",
            "user_mentions": [{"user_id": 9, "username": "zed"}],
            "urls": [{"shortened_url": "http://short-url/s", "expanded_url": "https://a.b/c"}],
        })
    );
    assert!(
        took >= delay && took < 2 * delay,
        "took {took:?}: not concurrent"
    );
    assert_eq!(urls.requests(), [r#"{"urls":["https://a.b/c"]}"#]);
    assert_eq!(mentions.requests(), [r#"{"usernames":["zed"]}"#]);
}

#[test]
fn a_callee_that_is_down_fails_the_caller_fast_with_its_name() {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    // Routed, but nothing listens there.
    let closed = free_port();
    let system = Deployment::unmerged(&redis, &[("social-graph-get-followers", closed)], &[]);

    let request = r#"{"post_id": 1, "user_id": 1, "timestamp": 1, "user_mentions_id": [2]}"#;
    let started = Instant::now();
    let error = failure(&system.url("write-home-timeline"), request, 500);
    let took = started.elapsed();
    assert!(
        error.contains("function social-graph-get-followers answered HTTP 502"),
        "{error}"
    );
    assert!(
        error.contains("Can't reach service for: social-graph-get-followers"),
        "{error}"
    );
    // The runtime's invoke timeout is 30 s: this must not be what ended it.
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(
        redis.keys("home-timeline:*").is_empty(),
        "nothing written on failure"
    );

    // Two levels down: compose-post names the callee that failed and why.
    let error = failure(&system.url("compose-post"), SAMPLE_POSTS[0], 500);
    assert!(
        error.starts_with("function write-home-timeline answered HTTP 500"),
        "{error}"
    );
    assert!(error.contains("social-graph-get-followers"), "{error}");
    assert_eq!(system.gateway.requests_for("social-graph-get-followers"), 2);
}

#[test]
fn malformed_requests_are_a_400_that_says_why() {
    let redis = Redis::start();
    let system = Deployment::unmerged(&redis, &[], &[]);
    for function in FUNCTIONS {
        let HttpReply { status, body } = post(&system.url(function), "{not json");
        assert_eq!(status, 400, "{function}: {body}");
        let error = error_of(&body);
        assert!(
            error.starts_with("malformed JSON request: "),
            "{function}: {error}"
        );
        // Well-formed JSON of the wrong shape is malformed too.
        let HttpReply { status, body } = post(&system.url(function), r#""not an object""#);
        assert_eq!(status, 400, "{function}: {body}");
        assert!(
            error_of(&body).starts_with("malformed JSON request: "),
            "{function}: {body}"
        );
    }
    system.refused("compose-post",
        r#"{"username": "a", "user_id": 1, "text": "", "media_ids": [1, 2], "media_types": ["png"]}"#,
        "media_ids and media_types differ in length",
    );
    // A caller never got as far as a callee, so Redis is untouched.
    assert!(redis.keys("*").is_empty(), "{:?}", redis.keys("*"));
    assert_eq!(system.gateway.requests_for("unique-id"), 2);
}

#[test]
fn a_panicking_user_mention_fails_one_request_and_the_next_succeeds() {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let mut system = Deployment::unmerged(&redis, &[], &[]);

    // Directly: the panic is an error reply, not a dropped connection.
    assert_eq!(
        failure(
            &system.url("user-mention"),
            r#"{"usernames": ["bob", "nobody"]}"#,
            500
        ),
        "function user-mention panicked"
    );
    // The payload is logged, not replied.
    assert!(
        system
            .function("user-mention")
            .output()
            .contains("function user-mention panicked: mentioned user @nobody is not registered"),
        "{}",
        system.outputs()
    );
    system.ok(
        "user-mention",
        r#"{"usernames": ["bob"]}"#,
        r#"{"user_mentions":[{"user_id":2,"username":"bob"}]}"#,
    );

    // Through the tree: compose-post fails, names the chain, stores nothing.
    let request = r#"{"username": "alice", "user_id": 1, "text": "hey @nobody", "media_ids": [], "timestamp": 9}"#;
    let error = failure(&system.url("compose-post"), request, 500);
    assert!(
        error.starts_with("function text-service answered HTTP 500"),
        "{error}"
    );
    assert!(
        error.contains("function user-mention panicked") && !error.contains("@nobody"),
        "{error}"
    );
    assert!(redis.keys("post:*").is_empty() && redis.keys("home-timeline:*").is_empty());

    // The process survived, and the next request succeeds.
    assert!(system.function("user-mention").is_running());
    let HttpReply { status, body } = post(&system.url("compose-post"), SAMPLE_POSTS[0]);
    assert_eq!(status, 200, "{body}\n{}", system.outputs());
    assert_eq!(redis.keys("post:*").len(), 1);
    assert!(
        system
            .function("user-mention")
            .output()
            .contains("mentioned user @nobody is not registered")
    );
}

#[test]
fn two_runs_on_the_same_data_give_identical_replies_and_state() {
    let run = || unmerged_replies("compose-post", SAMPLE_POSTS);
    let (first, second) = (run(), run());
    assert!(
        first.replies.iter().all(|r| r.status == 200),
        "{:?}",
        first.replies
    );
    assert_eq!(first.replies, second.replies);
    assert_eq!(first.state, second.state);
    // The state is non-trivial: posts, timelines, short URLs, the counter.
    let kinds = |prefix: &str| first.state.keys().filter(|k| k.starts_with(prefix)).count();
    assert_eq!(
        (kinds("post:"), kinds("short-url:")),
        (SAMPLE_POSTS.len(), 3)
    );
    assert!(kinds("home-timeline:") >= 4);
    assert_eq!(
        first.state["unique-id:counter"],
        SAMPLE_POSTS.len().to_string()
    );
}

#[test]
fn no_gateway_or_a_hanging_callee_is_a_502_that_names_the_callee() {
    let redis = Redis::start();
    let env = fmerge_testkit::redis_env(&redis.url(), FUNCTIONS);

    // No gateway at all: GATEWAY_URL points at a closed port.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let lonely = Function::start(
        fmerge_testkit::function_binary("write-home-timeline"),
        "write-home-timeline",
        free_port(),
        env.iter()
            .cloned()
            .chain([("GATEWAY_URL".to_string(), closed)]),
    );
    let started = Instant::now();
    let error = failure(
        &lonely.url(),
        r#"{"post_id": 1, "user_id": 1, "timestamp": 1}"#,
        502,
    );
    assert!(
        error.starts_with("function social-graph-get-followers could not be reached: "),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));

    // A callee that never answers: the invoke timeout ends the wait.
    let hanging = Stub::start(200, r#"{"followers": []}"#, Duration::from_secs(10));
    let system = Deployment::unmerged(
        &redis,
        &[("social-graph-get-followers", hanging.port())],
        &[("FMERGE_INVOKE_TIMEOUT_SECS", "1")],
    );
    let started = Instant::now();
    let error = failure(
        &system.url("write-home-timeline"),
        r#"{"post_id": 1, "user_id": 1, "timestamp": 1}"#,
        502,
    );
    let took = started.elapsed();
    assert!(
        error.starts_with("function social-graph-get-followers could not be reached: "),
        "{error}"
    );
    assert!(error.contains("no reply within 1s"), "{error}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(4),
        "took {took:?}"
    );
    assert_eq!(hanging.requests().len(), 1);
    assert!(redis.keys("*").is_empty());
}
