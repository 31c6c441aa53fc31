//! Functions that serve HTTP themselves (issue 50: of-watchdog's `http`
//! mode, each its own server, calls through its own async client), the
//! `httpmode` fixture chain order-front (axum, a reqwest client in a static)
//! → inventory (axum, a reqwest client in its app state, Redis) → render
//! (hyper's own server, a streamed reply, a panic, a slow answer):
//! unmerged, each behind an of-watchdog in `http` mode with nginx as the
//! gateway and a Redis whose password is a secret file, then merged by
//! fmerge and run under the real of-watchdog: the same replies and Redis
//! state, and no call between members through the gateway.
//!
//! Each test runs as root in a network and mount namespace of its own (it
//! re-runs an ignored test of this binary under `unshare --net --mount`).
//!
//! Run: `cargo test --release -p fmerge --test httpmode`

#[path = "support/httpmode.rs"]
mod chain;
mod support;

use chain::{NAMES, Observed, PANIC_MESSAGE, REQUESTS, cluster, merge, run_chain, run_child};

/// fmerge says the form it found for each function and where each callee's
/// server runs, and builds one binary.
#[test]
fn the_chain_merges_as_written_and_the_build_says_each_form() {
    let (binary, stderr) = merge();
    assert!(binary.is_file());
    for name in NAMES {
        assert!(
            stderr.contains(&format!(
                "{name} is its own HTTP server (of-watchdog's `http` mode)"
            )),
            "{stderr}"
        );
    }
    for callee in &NAMES[1..] {
        assert!(
            stderr.contains(&format!(
                "{callee}'s server runs in the caller's process, started with it"
            )),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("order-front (`order`) → inventory: in the pod")
            && stderr.contains("inventory (`reserve`) → render: in the pod"),
        "{stderr}"
    );
}

/// Unmerged and merged, behind the real of-watchdog in `http` mode: the
/// same replies (status, Content-Type, the caller's own header, body),
/// the same Redis state, render's panic in the log; merged, no call
/// between members through the gateway.
#[test]
fn the_merged_chain_answers_as_unmerged_without_the_gateway() {
    let (binary, _) = merge();
    run_child("in_namespace_both", Some(binary));
}

#[test]
#[ignore = "run by the_merged_chain_answers_as_unmerged_without_the_gateway in its own namespace"]
fn in_namespace_both() {
    let (_cluster, redis) = cluster();
    let unmerged = run_chain(&redis, false);
    println!("unmerged: {unmerged:#?}");
    assert_unmerged_as_the_code_says(&unmerged);
    let merged = run_chain(&redis, true);
    println!("merged: {merged:#?}");
    for (i, (what, ..)) in REQUESTS.iter().enumerate() {
        assert_eq!(
            merged.replies[i], unmerged.replies[i],
            "request {what:?}: merged (left) and unmerged (right) differ"
        );
    }
    assert_eq!(merged.reserved, unmerged.reserved, "Redis, merged (left)");
    assert_eq!(
        calls(&merged),
        [REQUESTS.len(), 0, 0],
        "merged, only the caller is called through the gateway: {:?}",
        merged.calls
    );
    assert!(
        merged.logs[NAMES[0]].contains(PANIC_MESSAGE),
        "render's panic is in the merged pod's log:\n{}",
        merged.logs[NAMES[0]]
    );
}

fn calls(seen: &Observed) -> Vec<usize> {
    NAMES.iter().map(|n| seen.calls[*n]).collect()
}

/// What the fixture's code says each request comes to, unmerged: each
/// hop through the gateway, of-watchdog's empty 500 for render's panic
/// and 504 at its `exec_timeout`.
fn assert_unmerged_as_the_code_says(seen: &Observed) {
    let bodies: Vec<(u16, &str)> = seen
        .replies
        .iter()
        .map(|r| (r.status, r.body.as_str()))
        .collect();
    assert_eq!(
        bodies,
        [
            (
                200,
                "inventory 200 stock 1: render 200 [<plain>book</plain>]\n"
            ),
            (200, "inventory 200 stock 1: render 500 []\n"),
            (200, "inventory 200 stock 2: render 504 []\n"),
            (400, "bad order\n"),
            (200, "order-front\n"),
        ]
    );
    assert_eq!(
        seen.replies[0].served_by.as_deref(),
        Some("order-front"),
        "{:?}",
        seen.replies[0]
    );
    assert_eq!(
        seen.reserved,
        [
            ("reserved:book".to_string(), "2".to_string()),
            ("reserved:pen".to_string(), "1".to_string()),
        ]
        .into_iter()
        .collect()
    );
    // Three requests reached inventory, and render through it.
    assert_eq!(calls(seen), [REQUESTS.len(), 3, 3], "{:?}", seen.calls);
    assert!(
        seen.logs[NAMES[2]].contains(PANIC_MESSAGE),
        "{:#?}",
        seen.logs
    );
}
