//! socialNetwork's calls as `docs/callgraph-socialnetwork.svg` draws them
//! (the 26 functions of `functions/stack.yml`): one table for the planner
//! tests of both crates, each of which builds its own graph from it
//! (`merger/plan/tests/support/random.rs`, `merger/tests/support/graphs.rs`).

/// Each caller and the functions it calls: five call trees, the largest
/// compose-post's, and two pairs of callers sharing a callee.
pub const CALLS: [(&str, &[&str]); 9] = [
    (
        "compose-post",
        &[
            "unique-id",
            "text-service",
            "compose-creator-with-user-id",
            "media",
            "store-post",
            "write-user-timeline",
            "write-home-timeline",
        ],
    ),
    ("text-service", &["url-shorten", "user-mention"]),
    ("write-home-timeline", &["social-graph-get-followers"]),
    ("read-home-timeline", &["read-posts"]),
    ("read-user-timeline", &["read-posts"]),
    ("register-user", &["social-graph-insert-user"]),
    ("register-user-with-id", &["social-graph-insert-user"]),
    (
        "social-graph-follow-with-username",
        &["get-user-id", "social-graph-follow"],
    ),
    (
        "social-graph-unfollow-with-username",
        &["get-user-id", "social-graph-unfollow"],
    ),
];

/// The functions that call nobody and that nobody calls.
pub const ALONE: [&str; 4] = [
    "read-post",
    "user-login",
    "compose-creator-with-username",
    "social-graph-get-followees",
];

/// The 26 names: callers and their callees in the order of `CALLS`, each
/// once, then `ALONE`.
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Vec::new();
    for (from, to) in &CALLS {
        for name in std::iter::once(from).chain(to.iter()) {
            if !names.contains(name) {
                names.push(name);
            }
        }
    }
    names.extend(ALONE);
    names
}
