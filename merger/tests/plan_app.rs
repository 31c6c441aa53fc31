//! The whole socialNetwork merged in the planner's groups answers like the
//! unmerged application: the same replies, byte for byte, and the same
//! Redis state, on one recorded request mix.
//!
//! Merged: `fmerge plan -f stack.yml`, then ONE `fmerge build --plan`; each
//! group's binary serves its caller's route (its callees' settings read as
//! `<CALLEE>__REDIS_URL`), every other function runs unmerged, all behind the
//! nginx gateway on one Redis. Both runs start from an empty Redis with the
//! same seed ([`seed_social_network`]); ids are `MACHINE_ID << 40 | INCR`
//! counters in Redis, and every request that stores a time carries its
//! `timestamp`, so no field is time-based and nothing is left out of the
//! comparison. The unmerged run's metrics scrape then feeds the planner,
//! which must find the critical paths, price the calls at their measured
//! hop costs, and plan under `--max-total-memory`.
//!
//! Run: `cargo test --release -p fmerge --test plan_app` (slow: it builds
//! and merges the whole application).

#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use support::*;

/// One request of the mix; `{post}` becomes the id of the n-th composed post.
type Request = (&'static str, String);

fn mix() -> Vec<Request> {
    let mut mix: Vec<Request> = Vec::new();
    for (name, password) in [
        ("frank", "f pass"),
        ("grace", "g pass"),
        ("heidi", "h pass"),
    ] {
        mix.push((
            "register-user",
            format!(
                r#"{{"first_name": "{name}", "last_name": "X", "username": "{name}", "password": "{password}"}}"#
            ),
        ));
    }
    for (i, (who, whom)) in [
        ("frank", "alice"),
        ("grace", "alice"),
        ("heidi", "bob"),
        ("frank", "bob"),
        ("alice", "frank"),
    ]
    .iter()
    .enumerate()
    {
        mix.push((
            "social-graph-follow-with-username",
            format!(
                r#"{{"username": "{who}", "followee_username": "{whom}", "timestamp": {}}}"#,
                1000 + i
            ),
        ));
    }
    mix.push((
        "user-login",
        r#"{"username": "grace", "password": "g pass"}"#.into(),
    ));
    for post in SAMPLE_POSTS {
        mix.push(("compose-post", post.to_string()));
    }
    mix.push((
        "compose-post",
        r#"{"username":"frank","user_id":1099511627777,"text":"hi @alice https://example.org/f","media_ids":[7],"media_types":["png"],"post_type":"POST","timestamp":1700000009000}"#.into(),
    ));
    for user in [
        1u64,
        2,
        3,
        4,
        5,
        (1 << 40) | 1,
        (1 << 40) | 2,
        (1 << 40) | 3,
    ] {
        mix.push(("read-home-timeline", format!(r#"{{"user_id": {user}}}"#)));
        mix.push(("read-user-timeline", format!(r#"{{"user_id": {user}}}"#)));
    }
    for n in 0..SAMPLE_POSTS.len() + 1 {
        mix.push(("read-post", format!(r#"{{"post_id": {{post{n}}}}}"#)));
    }
    mix.push((
        "read-posts",
        r#"{"post_ids": [{post2}, 999, {post0}]}"#.into(),
    ));
    mix
}

/// Each request (as sent) with its reply's status and body.
type Replies = Vec<(String, u16, String)>;

/// Sends the mix through the gateway; returns the replies and the Redis state.
fn run(system: &Deployment, redis: &Redis) -> (Replies, BTreeMap<String, String>) {
    let mut posts: Vec<String> = Vec::new();
    let mut replies = Vec::new();
    for (function, request) in mix() {
        let mut request = request;
        for (n, id) in posts.iter().enumerate() {
            request = request.replace(&format!("{{post{n}}}"), id);
        }
        let HttpReply { status, body } = post(&system.url(function), &request);
        if function == "compose-post" && status == 200 {
            let reply: Value = serde_json::from_str(&body).unwrap();
            posts.push(reply["post_id"].to_string());
        }
        replies.push((format!("{function} {request}"), status, body));
    }
    (replies, masked(redis.dump()))
}

/// The planner on the real application with the unmerged run's own scrape:
/// the calls' structure read from the code sets the critical paths; each
/// gateway call the mix made is priced at what its caller measured; and
/// the plan keeps what the application reserves under --max-total-memory.
fn measured_plan(dir: &std::path::Path) {
    let args = [
        "--graph",
        "graph/calls.json",
        "--metrics",
        "scrape.txt",
        "--max-total-memory",
        "1856Mi",
        "--out",
        "measured",
    ];
    let Planned { stdout, groups } = planned(dir, &args);
    let row = |entry: &str| {
        stdout
            .lines()
            .find(|l| {
                l.strip_prefix(entry)
                    .is_some_and(|rest| rest.starts_with("  "))
            })
            .unwrap_or_else(|| panic!("no row for {entry}:\n{stdout}"))
            .to_string()
    };
    // compose-post: text-service → url-shorten, then write-home-timeline →
    // social-graph-get-followers. follow: get-user-id, then the id form.
    for (entry, hops) in [
        ("compose-post", "4 → "),
        ("social-graph-follow-with-username", "2 → "),
    ] {
        let row = row(entry);
        assert!(row.contains(hops), "{entry}: {row}\n{stdout}");
    }
    for (from, to) in [
        ("compose-post", "unique-id"),
        ("text-service", "url-shorten"),
        ("write-home-timeline", "social-graph-get-followers"),
        ("social-graph-follow-with-username", "get-user-id"),
    ] {
        let measured = format!("  {from} → {to}: ");
        let line = stdout.lines().find(|l| l.starts_with(&measured));
        assert!(
            line.is_some_and(|l| l.ends_with(&format!(
                "ms per call, measured ({})",
                fmerge::graph::traffic::HOP_MEASURED
            ))),
            "{from} → {to} has no measured cost:\n{stdout}"
        );
    }
    // 26 functions of 64Mi each reserve 1664Mi; the cap counts what stays
    // deployed, the callees only their groups call dropped.
    let reserved = stdout
        .lines()
        .find(|l| l.starts_with("the cluster, before → after: pods 26 → "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        reserved.contains("memory limits 1664Mi → ")
            && reserved.contains("(--max-total-memory 1856Mi)"),
        "{reserved}"
    );
    let copies: usize = groups.iter().map(|g| g.merge.callees.len()).sum();
    assert!(copies >= 1, "{copies} copies: {stdout}");
}

/// The one random part of the state: register-user's salt (16 random bytes)
/// and the password hash made with it. Checked for shape, then masked; that
/// they still match the password shows in user-login's replies, compared.
fn masked(mut dump: BTreeMap<String, String>) -> BTreeMap<String, String> {
    for (key, value) in dump.iter_mut() {
        if !key.starts_with("user-profile:") {
            continue;
        }
        *value = value
            .lines()
            .map(|line| match line.split_once('=') {
                Some((field @ ("salt" | "password_hash"), hex)) => {
                    let len = if field == "salt" { 32 } else { 64 };
                    assert!(
                        hex.len() == len && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                        "{key}: {line}"
                    );
                    format!("{field}=<{len} random hex digits>\n")
                }
                _ => format!("{line}\n"),
            })
            .collect();
    }
    dump
}

#[test]
fn the_planned_application_answers_like_the_unmerged_one() {
    let dir = tempfile::tempdir().unwrap();
    stack_in(dir.path());
    // The graph once; the plan from it.
    let graph = [
        "graph",
        "-f",
        "stack.yml",
        "--out",
        "graph",
        "--picture",
        "none",
    ];
    let Ran { ok, stderr, .. } = fmerge_command(dir.path(), &graph);
    assert!(ok, "{stderr}");
    let Planned { groups, .. } = planned(
        dir.path(),
        &["--graph", "graph/calls.json", "--out", "plan"],
    );
    assert!(!groups.is_empty(), "the planner proposed no group");
    let Ran { ok, stdout, stderr } = fmerge(dir.path(), &["--plan", "plan/plan.toml"], &[]);
    assert!(ok, "{stderr}");

    // The merged binaries, under their callers' names; the rest unmerged.
    let mut merged: Vec<(String, PathBuf)> = Vec::new();
    for g in &groups {
        let caller = g.caller.clone().unwrap();
        let name = g
            .merge
            .name
            .clone()
            .unwrap_or_else(|| fmerge::options::default_name(&caller));
        let binary = target_dir().join("fmerge").join(&name).join(&name);
        assert!(stdout.contains(binary.to_str().unwrap()), "{stdout}");
        merged.push((caller, binary));
    }
    let processes: Vec<(&str, PathBuf)> = FUNCTIONS
        .iter()
        .map(|f| match merged.iter().find(|(c, _)| c == f) {
            Some((_, binary)) => (*f, binary.clone()),
            None => (*f, function_binary(f)),
        })
        .collect();

    let (expected, expected_state) = {
        let redis = Redis::start();
        seed_social_network(&mut redis.conn());
        let system = Deployment::unmerged(&redis, &[], &[]);
        let replies = run(&system, &redis);
        std::fs::write(dir.path().join("scrape.txt"), system.scrape()).unwrap();
        replies
    };
    measured_plan(dir.path());
    assert!(
        expected.iter().filter(|(_, s, _)| *s == 200).count() > expected.len() / 2,
        "the mix mostly succeeds unmerged: {expected:#?}"
    );
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let system = Deployment::start(&redis, &processes, &[], &[]);
    let (replies, state) = run(&system, &redis);
    for (want, got) in expected.iter().zip(&replies) {
        assert_eq!(got, want, "{}", system.outputs());
    }
    assert_eq!(replies.len(), expected.len());
    assert_eq!(state, expected_state, "same Redis state");
    // The merged callers' callees were called in-process, not over the gateway.
    for g in &groups {
        for callee in &g.merge.callees {
            let also_elsewhere = groups
                .iter()
                .any(|o| o.caller.as_deref() == Some(callee.as_str()));
            if !also_elsewhere {
                eprintln!(
                    "{callee}: {} gateway requests (from unmerged callers)",
                    system.gateway.requests_for(callee)
                );
            }
        }
    }
}
