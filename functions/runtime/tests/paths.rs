//! End-to-end tests of every socialNetwork path but compose-post's (which
//! `unmerged.rs` covers): register, login, user ids, follow and unfollow by
//! id and by username, the read paths, and the seeder. Unmerged: each
//! function its own process behind a real nginx gateway, on a real Redis,
//! all on 127.0.0.1.
//!
//! Run: `cargo test --release -p fmerge-runtime --test paths`
//! (needs `redis-server` and `nginx`; `bash .ci/run` installs them).

mod support;

use fmerge_testkit::{
    Deployment, HttpReply, Redis, SAMPLE_POSTS, Scored, SeedOptions, post, seed, seed_password,
    seed_social_network, seed_username,
};
use serde_json::{Value, json};
use support::{Answers, error_of};

/// The first id `register-user` gives on machine 1: `1 << 40 | 1`.
const FIRST_USER_ID: u64 = (1 << 40) | 1;

/// A failure caused by a callee's 400. Until callee statuses pass through
/// `invoke`, the caller answers it as a 500 naming the callee; either way
/// the message says why.
fn callee_refused(status: u16, body: &str, why: &str) {
    assert!(matches!(status, 400 | 500), "{status} {body}");
    assert!(error_of(body).contains(why), "{body}");
}

#[test]
fn register_then_log_in_and_look_users_up() {
    let redis = Redis::start();
    let system = Deployment::unmerged(&redis, &[], &[]);

    let alice = r#"{"first_name": "Alice", "last_name": "Liddell", "username": "alice", "password": "wonder land"}"#;
    system.ok(
        "register-user",
        alice,
        &format!(r#"{{"user_id":{FIRST_USER_ID}}}"#),
    );
    // A taken username: a 400, and no social-graph entry for it.
    system.refused("register-user", alice, "user alice already exists");
    let bad = r#"{"first_name": "", "last_name": "", "username": "no spaces", "password": "x"}"#;
    let HttpReply { status, body } = post(&system.url("register-user"), bad);
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).contains("is not valid"), "{body}");
    system.ok("register-user-with-id",
        r#"{"first_name": "Bob", "last_name": "B", "username": "bob", "password": "hunter2", "user_id": 2}"#,
        r#"{"user_id":2}"#,
    );
    system.refused("register-user-with-id",
        r#"{"first_name": "", "last_name": "", "username": "bob", "password": "other", "user_id": 3}"#,
        "user bob already exists",
    );

    // The records: the id, and a salted hash, never the password itself.
    assert_eq!(redis.get("user:alice"), Some(FIRST_USER_ID.to_string()));
    assert_eq!(redis.get("user:bob").as_deref(), Some("2"));
    let profile: std::collections::BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg("user-profile:alice")
        .query(&mut redis.conn())
        .unwrap();
    assert_eq!(profile["user_id"], FIRST_USER_ID.to_string());
    assert_eq!(
        (
            profile["first_name"].as_str(),
            profile["last_name"].as_str()
        ),
        ("Alice", "Liddell")
    );
    assert_eq!(profile["salt"].len(), 32, "16 random bytes, hex");
    assert_eq!(profile["password_hash"].len(), 64, "SHA-256, hex");
    let bob_salt: String = redis::cmd("HGET")
        .arg("user-profile:bob")
        .arg("salt")
        .query(&mut redis.conn())
        .unwrap();
    assert_ne!(profile["salt"], bob_salt, "a salt per user");
    let dump = format!("{:?}", redis.dump());
    for password in ["wonder land", "hunter2"] {
        assert!(!dump.contains(password), "a password is stored in clear");
        assert!(
            !system.outputs().contains(password),
            "a password was logged"
        );
    }
    // register-user asked social-graph-insert-user, for the two that succeeded.
    let mut graph: Vec<u64> = redis::cmd("SMEMBERS")
        .arg("social-graph:users")
        .query(&mut redis.conn())
        .unwrap();
    graph.sort();
    assert_eq!(graph, [2, FIRST_USER_ID]);
    assert_eq!(system.gateway.requests_for("social-graph-insert-user"), 2);
    system.ok(
        "social-graph-insert-user",
        r#"{"user_id": 2}"#,
        r#"{"inserted":false}"#,
    );

    // Login: the right password gives the id; a wrong one or an unknown user
    // the same 400, which does not tell them apart.
    system.ok(
        "user-login",
        r#"{"username": "alice", "password": "wonder land"}"#,
        &format!(r#"{{"user_id":{FIRST_USER_ID}}}"#),
    );
    system.ok(
        "user-login",
        r#"{"username": "bob", "password": "hunter2"}"#,
        r#"{"user_id":2}"#,
    );
    for wrong in [
        r#"{"username": "alice", "password": "wonder lan"}"#,
        r#"{"username": "alice", "password": "hunter2"}"#,
        r#"{"username": "nobody", "password": "hunter2"}"#,
    ] {
        let HttpReply { status, body } = post(&system.url("user-login"), wrong);
        assert_eq!(
            (status, error_of(&body).as_str()),
            (400, "incorrect username or password"),
            "{wrong}"
        );
    }

    // Ids by username, and the creator of a post by username or id.
    system.ok(
        "get-user-id",
        r#"{"username": "alice"}"#,
        &format!(r#"{{"user_id":{FIRST_USER_ID}}}"#),
    );
    system.refused(
        "get-user-id",
        r#"{"username": "nobody"}"#,
        "user nobody is not registered",
    );
    system.ok(
        "compose-creator-with-username",
        r#"{"username": "bob"}"#,
        r#"{"user_id":2,"username":"bob"}"#,
    );
    system.refused(
        "compose-creator-with-username",
        r#"{"username": "nobody"}"#,
        "user nobody is not registered",
    );
    system.ok(
        "compose-creator-with-user-id",
        r#"{"user_id": 7, "username": "g"}"#,
        r#"{"user_id":7,"username":"g"}"#,
    );

    // A registered user can be mentioned in a post.
    let HttpReply { status, body } = post(
        &system.url("user-mention"),
        r#"{"usernames": ["bob", "alice"]}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"user_mentions": [
            {"user_id": 2, "username": "bob"},
            {"user_id": FIRST_USER_ID, "username": "alice"},
        ]})
    );
}

#[test]
fn follow_and_unfollow_by_id_and_by_username() {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let system = Deployment::unmerged(&redis, &[], &[]);

    // By id: dave (4) follows carol (3) at 100; again is a no-op that keeps
    // the first time.
    let follow = r#"{"user_id": 4, "followee_id": 3, "timestamp": 100}"#;
    system.ok("social-graph-follow", follow, r#"{"followed":true}"#);
    system.ok(
        "social-graph-follow",
        r#"{"user_id": 4, "followee_id": 3, "timestamp": 999}"#,
        r#"{"followed":false}"#,
    );
    assert_eq!(
        redis.zrange("social-graph:followers:3"),
        [Scored::new("1", 1), Scored::new("4", 100)]
    );
    assert_eq!(
        redis.zrange("social-graph:followees:4"),
        [Scored::new("3", 100)]
    );
    system.ok(
        "social-graph-get-followers",
        r#"{"user_id": 3}"#,
        r#"{"followers":[1,4]}"#,
    );
    system.ok(
        "social-graph-get-followees",
        r#"{"user_id": 4}"#,
        r#"{"followees":[3]}"#,
    );
    system.refused(
        "social-graph-follow",
        r#"{"user_id": 4, "followee_id": 4}"#,
        "user 4 cannot follow themselves",
    );

    // By username: erin (5) follows carol (3) at 200, then dave (4), with
    // the ids asked of get-user-id.
    system.ok(
        "social-graph-follow-with-username",
        r#"{"username": "erin", "followee_username": "carol", "timestamp": 200}"#,
        r#"{"followed":true}"#,
    );
    system.ok(
        "social-graph-follow-with-username",
        r#"{"username": "erin", "followee_username": "dave", "timestamp": 300}"#,
        r#"{"followed":true}"#,
    );
    system.ok(
        "social-graph-get-followers",
        r#"{"user_id": 3}"#,
        r#"{"followers":[1,4,5]}"#,
    );
    system.ok(
        "social-graph-get-followees",
        r#"{"user_id": 5}"#,
        r#"{"followees":[3,4]}"#,
    );
    assert_eq!(system.gateway.requests_for("get-user-id"), 4);
    assert_eq!(system.gateway.requests_for("social-graph-follow"), 5);

    // An unknown username: get-user-id refuses, nothing is followed.
    let HttpReply { status, body } = post(
        &system.url("social-graph-follow-with-username"),
        r#"{"username": "erin", "followee_username": "nobody", "timestamp": 400}"#,
    );
    callee_refused(status, &body, "user nobody is not registered");
    assert_eq!(system.gateway.requests_for("social-graph-follow"), 5);

    // Unfollow by id, then by username; again is a no-op.
    system.ok(
        "social-graph-unfollow",
        r#"{"user_id": 4, "followee_id": 3}"#,
        r#"{"unfollowed":true}"#,
    );
    system.ok(
        "social-graph-unfollow",
        r#"{"user_id": 4, "followee_id": 3}"#,
        r#"{"unfollowed":false}"#,
    );
    system.ok(
        "social-graph-unfollow-with-username",
        r#"{"username": "erin", "followee_username": "carol"}"#,
        r#"{"unfollowed":true}"#,
    );
    let HttpReply { status, body } = post(
        &system.url("social-graph-unfollow-with-username"),
        r#"{"username": "nobody", "followee_username": "carol"}"#,
    );
    callee_refused(status, &body, "user nobody is not registered");
    assert_eq!(
        redis.zrange("social-graph:followers:3"),
        [Scored::new("1", 1)]
    );
    assert!(redis.zrange("social-graph:followees:4").is_empty());
    assert_eq!(
        redis.zrange("social-graph:followees:5"),
        [Scored::new("4", 300)]
    );
    assert_eq!(system.gateway.requests_for("social-graph-unfollow"), 3);

    // The seeded followers of alice are untouched.
    system.ok(
        "social-graph-get-followers",
        r#"{"user_id": 1}"#,
        r#"{"followers":[4,2,5]}"#,
    );
}

#[test]
fn composed_posts_come_back_on_the_user_and_home_timelines() {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let system = Deployment::unmerged(&redis, &[], &[]);

    // alice posts SAMPLE_POSTS[0] and [3], bob posts [1].
    let mut ids = Vec::new();
    for request in [SAMPLE_POSTS[0], SAMPLE_POSTS[1], SAMPLE_POSTS[3]] {
        let HttpReply { status, body } = post(&system.url("compose-post"), request);
        assert_eq!(status, 200, "{body}\n{}", system.outputs());
        ids.push(
            serde_json::from_str::<Value>(&body).unwrap()["post_id"]
                .as_u64()
                .unwrap(),
        );
    }
    let stored = |id: u64| redis.get(&format!("post:{id}")).expect("stored");
    let (alice0, bob1, alice3) = (stored(ids[0]), stored(ids[1]), stored(ids[2]));
    let posts = |list: &[&str]| format!(r#"{{"posts":[{}]}}"#, list.join(","));

    // read-post: the post as stored, byte for byte.
    system.ok("read-post", &format!(r#"{{"post_id": {}}}"#, ids[1]), &bob1);
    system.refused("read-post", r#"{"post_id": 999}"#, "post 999 not found");

    // read-posts: request order, unknown ids left out.
    system.ok(
        "read-posts",
        &format!(r#"{{"post_ids": [{}, 999, {}]}}"#, ids[1], ids[0]),
        &posts(&[&bob1, &alice0]),
    );
    system.ok("read-posts", r#"{"post_ids": []}"#, r#"{"posts":[]}"#);

    // alice's own timeline, newest first; a page of it; another user's.
    let user_timeline = |user: u64, page: &str| format!(r#"{{"user_id": {user}{page}}}"#);
    system.ok(
        "read-user-timeline",
        &user_timeline(1, ""),
        &posts(&[&alice3, &alice0]),
    );
    system.ok(
        "read-user-timeline",
        &user_timeline(1, r#", "start": 1, "stop": 2"#),
        &posts(&[&alice0]),
    );
    system.ok(
        "read-user-timeline",
        &user_timeline(2, ""),
        &posts(&[&bob1]),
    );
    // An empty timeline and an empty page ask read-posts nothing.
    let asked = system.gateway.requests_for("read-posts");
    system.ok(
        "read-user-timeline",
        &user_timeline(4, ""),
        r#"{"posts":[]}"#,
    );
    system.ok(
        "read-user-timeline",
        &user_timeline(1, r#", "start": 5, "stop": 5"#),
        r#"{"posts":[]}"#,
    );
    assert_eq!(system.gateway.requests_for("read-posts"), asked);

    // Home timelines: bob follows alice (and is mentioned in [0]); alice
    // follows bob and is mentioned in [1]; carol is mentioned in [1] only;
    // erin and dave follow alice and are mentioned in [3].
    let home = |user: u64| format!(r#"{{"user_id": {user}}}"#);
    system.ok("read-home-timeline", &home(2), &posts(&[&alice3, &alice0]));
    system.ok("read-home-timeline", &home(1), &posts(&[&bob1]));
    system.ok("read-home-timeline", &home(3), &posts(&[&bob1]));
    for follower in [4, 5] {
        system.ok(
            "read-home-timeline",
            &home(follower),
            &posts(&[&alice3, &alice0]),
        );
    }
    system.ok(
        "read-home-timeline",
        r#"{"user_id": 2, "start": 1}"#,
        &posts(&[&alice0]),
    );
    system.ok("read-home-timeline", &home(99), r#"{"posts":[]}"#);
    // Every non-empty timeline read went through read-posts.
    assert_eq!(system.gateway.requests_for("read-posts"), asked + 6);
}

#[test]
fn the_seeder_builds_a_graph_and_posts_through_the_gateway() {
    let redis = Redis::start();
    let system = Deployment::unmerged(&redis, &[], &[]);
    let opts = SeedOptions {
        users: 12,
        degree: 3,
        posts: 20,
        seed: 5,
        concurrency: 3,
    };
    let done = seed(&system.gateway.url(), &opts).unwrap_or_else(|e| {
        panic!("{e}\n{}", system.outputs());
    });
    assert_eq!((done.users, done.follows, done.posts), (12, 36, 20));

    let dump = redis.dump();
    let count = |prefix: &str| dump.keys().filter(|k| k.starts_with(prefix)).count();
    assert_eq!(count("user:"), 12);
    assert_eq!(count("user-profile:"), 12);
    assert_eq!(count("post:"), 20);
    assert_eq!(count("social-graph:followees:"), 12);
    for user in 1..=12 {
        let followees = redis.zrange(&format!("social-graph:followees:{user}"));
        assert_eq!(followees.len(), 3, "user {user}");
    }
    let followers: usize = (1..=12)
        .map(|u| redis.zrange(&format!("social-graph:followers:{u}")).len())
        .sum();
    assert_eq!(followers, 36, "each follow is on both sides");
    let user_timelines: usize = (1..=12)
        .map(|u| redis.zrange(&format!("user-timeline:{u}")).len())
        .sum();
    assert_eq!(user_timelines, 20, "each post on its author's timeline");

    // The seeded users log in with their seeded passwords.
    system.ok(
        "user-login",
        &format!(
            r#"{{"username": "{}", "password": "{}"}}"#,
            seed_username(7),
            seed_password(7)
        ),
        r#"{"user_id":7}"#,
    );
    // Seeding twice is refused: the usernames are taken.
    let again = seed(&system.gateway.url(), &opts).unwrap_err();
    assert!(
        again.contains("register-user-with-id") && again.contains("already exists"),
        "{again}"
    );
}
