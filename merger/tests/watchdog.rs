//! Functions in the watchdog-process form (issue 49: an ordinary `fn
//! main()` behind of-watchdog, stdin in and stdout out, calls through the
//! function's own HTTP client), the `watchdog` fixture chain
//! write-home-timeline → social-graph-get-followers (`curl`) → user-filter
//! (`reqwest::blocking`) → audit-log (`ureq`): unmerged, each behind an
//! of-watchdog in streaming mode with nginx as the gateway and a Redis
//! whose password is a secret file, then merged by fmerge and run under the
//! real of-watchdog: the same replies, Redis state and logs, and no call
//! between members through the gateway.
//!
//! Each test runs as root in a network and mount namespace of its own (it
//! re-runs an ignored test of this binary under `unshare --net --mount`), so
//! that the cluster's fixed ports and names hold.
//!
//! Run: `cargo test --release -p fmerge --test watchdog`

#[path = "support/watchdog.rs"]
mod chain;
mod support;

use chain::{
    Deploy, EXIT_MESSAGE, NAMES, Observed, PACKAGES, PANIC_MESSAGE, assert_same_answers,
    assert_same_logs, cluster, merge, merge_with, run_chain, run_child, stderr_lines,
    unmerged_and_merged,
};

/// The chain unmerged answers as the fixture's code says it must, through
/// the gateway at each hop: what the merged runs are compared with.
#[test]
fn the_unmerged_chain_answers_behind_of_watchdog() {
    run_child("in_namespace_unmerged", None, &[]);
}

#[test]
#[ignore = "run by the_unmerged_chain_answers_behind_of_watchdog in its own namespace"]
fn in_namespace_unmerged() {
    let (_cluster, redis) = cluster();
    let seen = run_chain(&redis, &redis, &Deploy::default());
    println!("{seen:#?}");
    let normal = &seen.replies[0];
    assert_eq!(
        (normal.status, normal.body.as_str()),
        (200, r#"{"updated":2}"#)
    );
    assert!(normal.content_type.is_some(), "{normal:?}");
    // Streaming mode sends its 200 before the process ends, so a failure
    // anywhere down the chain is an empty 200 at the top.
    for (i, reply) in seen.replies.iter().enumerate().skip(1) {
        assert_eq!(
            (reply.status, reply.body.as_str()),
            (200, ""),
            "request {i}"
        );
    }
    // User 1's followers are 2, 3 and 4, and 3 is blocked.
    let post = vec![("100".to_string(), "1000".to_string())];
    let expected = [
        ("home-timeline:2".to_string(), post.clone()),
        ("home-timeline:4".to_string(), post),
    ];
    assert_eq!(seen.timelines, expected.into_iter().collect());
    // Every hop went through the gateway; the malformed request went no
    // further than the caller, the panic no further than its callee.
    assert_eq!(calls(&seen), [4, 3, 2, 1], "{:?}", seen.calls);
    assert!(
        seen.logs[NAMES[1]].contains(PANIC_MESSAGE),
        "{:#?}",
        seen.logs
    );
    assert!(
        seen.logs[NAMES[2]].contains(EXIT_MESSAGE),
        "{:#?}",
        seen.logs
    );
}

fn calls(seen: &Observed) -> Vec<usize> {
    NAMES.iter().map(|n| seen.calls[*n]).collect()
}

/// The four functions merged into one binary, run as `fprocess` by the real
/// of-watchdog: the same replies and Redis state, no request between
/// members through the gateway, and the callee's panic in its log.
#[test]
fn the_merged_chain_answers_as_unmerged_without_the_gateway() {
    // Where each callee runs: user-filter may end its process.
    let binary = merge_saying(
        &PACKAGES,
        &[
            "social-graph-get-followers runs in the caller's process",
            "audit-log runs in the caller's process",
            "user-filter runs in a process of its own, forked from the binary's start: \
             UserFilter::main (crate UserFilter) calls std::process::exit, \
             which would end the caller's process (a fork and its own run per call)",
        ],
    );
    run_child("in_namespace_merged", Some(&binary), &[]);
}

/// The merged binary of `members`, forced, so that the build says what a
/// kept binary would not: every one of `said`.
fn merge_saying(members: &[&str], said: &[&str]) -> std::path::PathBuf {
    let (binary, stderr) = merge_with(members, &["--force"], "");
    println!("fmerge:\n{stderr}");
    support::assert_says(&stderr, said);
    binary
}

#[test]
#[ignore = "run by the_merged_chain_answers_as_unmerged_without_the_gateway in its own namespace"]
fn in_namespace_merged() {
    let (_cluster, redis) = cluster();
    let (unmerged, merged) = unmerged_and_merged(&redis, &redis, &Deploy::default(), &PACKAGES);
    assert_same_answers(&unmerged, &merged);
    assert_eq!(
        calls(&merged),
        [4, 0, 0, 0],
        "only the client's requests reach the gateway: {:?}",
        merged.calls
    );
    // Both failing callees' stderr is the merged function's now, and
    // nothing else: no line the unmerged functions did not write.
    let log = &merged.logs[NAMES[0]];
    assert!(log.contains(PANIC_MESSAGE), "the callee's panic:\n{log}");
    assert!(log.contains(EXIT_MESSAGE), "the callee's exit:\n{log}");
    assert_same_logs(&unmerged, &merged, &NAMES);
}

/// A partial merge (write-home-timeline with social-graph-get-followers):
/// the calls to user-filter, a non-member, still go through the gateway,
/// and the replies are the same.
#[test]
fn a_partial_merge_still_calls_the_rest_through_the_gateway() {
    // Each call site, and where its call goes.
    let binary = merge_saying(
        &PACKAGES[..2],
        &[
            "write-home-timeline (`main`) → social-graph-get-followers: in the pod",
            "social-graph-get-followers (`main`) → user-filter: through the gateway (not merged)",
        ],
    );
    run_child("in_namespace_partial", Some(&binary), &[]);
}

#[test]
#[ignore = "run by a_partial_merge_still_calls_the_rest_through_the_gateway in its own namespace"]
fn in_namespace_partial() {
    let (_cluster, redis) = cluster();
    let (unmerged, merged) =
        unmerged_and_merged(&redis, &redis, &Deploy::default(), &PACKAGES[..2]);
    assert_same_answers(&unmerged, &merged);
    assert_eq!(calls(&merged), [4, 0, 2, 1], "{:?}", merged.calls);
    let log = &merged.logs[NAMES[0]];
    assert!(log.contains(PANIC_MESSAGE), "the callee's panic:\n{log}");
    // user-filter is not a member: its exit stays in its own log.
    assert!(
        merged.logs[NAMES[2]].contains(EXIT_MESSAGE),
        "{:#?}",
        merged.logs
    );
    assert_same_logs(&unmerged, &merged, &NAMES[..2]);
    for outsider in &NAMES[2..] {
        assert_eq!(
            stderr_lines([&merged.logs[*outsider]]),
            stderr_lines([&unmerged.logs[*outsider]]),
            "{outsider}'s own stderr"
        );
    }
}

/// The seed's case: social-graph-get-followers' cluster has a Redis of its
/// own, and both functions' shared helper (`RedisStore`) writes in the host
/// and reads the password from `/var/openfaas/secrets/redis-password`.
/// Merged into write-home-timeline's pod, the callee must keep its own
/// Redis and secret: `--rewrite` of the shared helper's literals applies in
/// the callee's own process (the name resolves as its own Redis's, the
/// secret opens as its own file), never in the caller's. Without the
/// rewrites the answers differ, so the comparison can tell.
#[test]
fn a_callee_keeps_its_own_redis_and_secret_through_a_shared_helper() {
    let flags = [
        "--rewrite",
        "SocialGraphGetFollowers:redis.openfaas-fn.svc.cluster.local.=redis.sgf.svc.cluster.local.",
        "--rewrite",
        "SocialGraphGetFollowers:/var/openfaas/secrets/redis-password=/var/openfaas/secrets/sgf-redis-password",
    ];
    let (binary, stderr) = merge_with(&PACKAGES, &flags, "-own-stores");
    println!("fmerge:\n{stderr}");
    assert!(
        stderr.contains("in SocialGraphGetFollowers's own process"),
        "the build says where the rewrites apply:\n{stderr}"
    );
    let (plain, _) = merge(&PACKAGES);
    run_child(
        "in_namespace_own_stores",
        Some(&binary),
        &[(chain::PLAIN_VAR, plain.to_str().unwrap().to_string())],
    );
}

#[test]
#[ignore = "run by a_callee_keeps_its_own_redis_and_secret_through_a_shared_helper in its own namespace"]
fn in_namespace_own_stores() {
    let (_cluster, redis, followers, pod) = chain::two_clusters();
    let own_pod = Deploy {
        own_pod: Some(&pod.watchdog()),
        ..Deploy::default()
    };
    let (unmerged, merged) = unmerged_and_merged(&redis, &followers, &own_pod, &PACKAGES);
    assert_eq!(
        (
            unmerged.replies[0].status,
            unmerged.replies[0].body.as_str()
        ),
        (200, r#"{"updated":2}"#),
        "unmerged, get-followers reads its own Redis"
    );
    assert_same_answers(&unmerged, &merged);
    assert_eq!(calls(&merged), [4, 0, 0, 0], "{:?}", merged.calls);
    // The same merge without the rewrites reads the caller's Redis.
    let plain = chain::plain_binary();
    let wrong = run_chain(
        &redis,
        &followers,
        &Deploy {
            merged: Some((&plain, &PACKAGES)),
            ..Deploy::default()
        },
    );
    assert_eq!(wrong.replies[0].body, r#"{"updated":0}"#, "{wrong:#?}");
}

/// A callee past its own `exec_timeout` is killed, merged as unmerged:
/// social-graph-get-followers' deployment allows it 1 ms, less than its
/// process start and the two calls it makes take, so it is cut off with
/// nothing written, and the caller, whose reply does not parse, fails the
/// request as it does unmerged. Merged, the setting is the callee's own,
/// namespaced in the merged deployment.
#[test]
fn a_callee_past_its_exec_timeout_is_cut_off_as_of_watchdog_cuts_it() {
    let (binary, _) = merge(&PACKAGES);
    run_child("in_namespace_timeout", Some(&binary), &[]);
}

#[test]
#[ignore = "run by a_callee_past_its_exec_timeout_is_cut_off_as_of_watchdog_cuts_it in its own namespace"]
fn in_namespace_timeout() {
    let (_cluster, redis) = cluster();
    let settings = [(NAMES[1], "exec_timeout", "1ms")];
    let timeout = Deploy {
        settings: &settings,
        ..Deploy::default()
    };
    let (unmerged, merged) = unmerged_and_merged(&redis, &redis, &timeout, &PACKAGES);
    assert_eq!(
        (
            unmerged.replies[0].status,
            unmerged.replies[0].body.as_str()
        ),
        (200, ""),
        "unmerged, the callee is killed before it answers"
    );
    assert!(unmerged.timelines.is_empty(), "{unmerged:#?}");
    assert_same_answers(&unmerged, &merged);
    assert_eq!(calls(&merged), [4, 0, 0, 0], "{:?}", merged.calls);
}
