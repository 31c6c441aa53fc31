//! `fmerge graph`: the call graph read from the functions' own code, checked
//! against the call structure the socialNetwork application of this repo is
//! written with (DeathStarBench's: 26 functions, functions/stack.yml);
//! traffic weights from a metrics scrape and an access log.

#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use fmerge::graph::Graph;
use fmerge::plan::model::{Set, bit};
use fmerge::plan::{self, Constraints};
use std::collections::BTreeSet;
use std::path::Path;
use support::*;

/// The socialNetwork application of this repo: 26 functions, one stack.
fn stack() -> std::path::PathBuf {
    workspace_root().join("functions/stack.yml")
}

fn read_graph(dir: &Path, extra: &[&str]) -> (Graph, String) {
    let stack = stack();
    let out = dir.join("graph");
    let mut args = vec![
        "graph",
        "-f",
        stack.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let Ran { ok, stdout, stderr } = fmerge_command(dir, &args);
    assert!(ok, "{stderr}");
    (Graph::load(&out.join("calls.json")).unwrap(), stdout)
}

#[test]
fn the_graph_is_the_call_structure_of_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, stdout) = read_graph(dir.path(), &[]);
    let edges: BTreeSet<(String, Option<String>)> = graph
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    let known: BTreeSet<(String, Option<String>)> = [
        ("compose-post", "unique-id"),
        ("compose-post", "text-service"),
        ("compose-post", "compose-creator-with-user-id"),
        ("compose-post", "media"),
        ("compose-post", "store-post"),
        ("compose-post", "write-user-timeline"),
        ("compose-post", "write-home-timeline"),
        ("text-service", "url-shorten"),
        ("text-service", "user-mention"),
        ("write-home-timeline", "social-graph-get-followers"),
        ("read-home-timeline", "read-posts"),
        ("read-user-timeline", "read-posts"),
        ("register-user", "social-graph-insert-user"),
        ("register-user-with-id", "social-graph-insert-user"),
        ("social-graph-follow-with-username", "get-user-id"),
        ("social-graph-follow-with-username", "social-graph-follow"),
        ("social-graph-unfollow-with-username", "get-user-id"),
        (
            "social-graph-unfollow-with-username",
            "social-graph-unfollow",
        ),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), Some(b.to_string())))
    .collect();
    assert_eq!(edges, known);
    // In the handler: one call site each, but the `-with-username` forms
    // look up both users (two calls of get-user-id).
    for e in &graph.edges {
        let two = e.from.ends_with("-with-username") && e.to.as_deref() == Some("get-user-id");
        assert_eq!(e.sites, if two { 2 } else { 1 }, "{e:?}");
        let krate = e.from.replace('-', "_");
        assert!(
            e.within[0].starts_with(&format!("{krate}::handle")),
            "{e:?}"
        );
    }
    assert_eq!(graph.functions.len(), 26);
    assert!(graph.conflicts.is_empty(), "{:?}", graph.conflicts);
    // The order of the calls, from the code: compose-post's two fan-outs;
    // the -with-username forms' two lookups at once (in sn_store's macro,
    // expanded in their crate), then the id form.
    let rounds = |f: &str| -> Vec<Vec<String>> {
        let f = graph.function(f).unwrap();
        assert!(f.rounds.iter().all(|r| r.looped.is_empty()), "{f:?}");
        f.rounds.iter().map(|r| r.calls.clone()).collect()
    };
    assert_eq!(
        rounds("compose-post"),
        [
            vec![
                "unique-id",
                "text-service",
                "compose-creator-with-user-id",
                "media"
            ],
            vec!["store-post", "write-user-timeline", "write-home-timeline"],
        ]
    );
    assert_eq!(
        rounds("social-graph-follow-with-username"),
        [
            vec!["get-user-id", "get-user-id"],
            vec!["social-graph-follow"]
        ]
    );
    for f in &graph.functions {
        assert!(graph.unplaced(&f.name).is_empty(), "{f:?}");
    }
    // The critical path before any merge, in gateway hops: text-service →
    // url-shorten, then write-home-timeline → social-graph-get-followers.
    let model = plan::model(&graph, &Constraints::default()).unwrap();
    let alone: Vec<Set> = (0..model.n()).map(bit).collect();
    let critical = |f: &str| model.hops(model.index(f).unwrap(), &alone).critical_before;
    assert_eq!(critical("compose-post"), 4.0);
    assert_eq!(critical("social-graph-follow-with-username"), 2.0);
    assert_eq!(critical("social-graph-unfollow-with-username"), 2.0);
    assert_eq!(critical("read-home-timeline"), 1.0);
    assert!(
        graph
            .functions
            .iter()
            .all(|f| f.left_out.is_none() && f.memory_bytes == Some(64.0 * 1048576.0))
    );
    // DOT and the picture dot drew from it.
    let dot = std::fs::read_to_string(dir.path().join("graph/calls.dot")).unwrap();
    assert!(dot.contains("\"text-service\" -> \"url-shorten\""), "{dot}");
    let svg = std::fs::read_to_string(dir.path().join("graph/calls.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("social&#45;graph&#45;get&#45;followers"));
    assert!(stdout.lines().any(|l| l.ends_with("calls.svg")), "{stdout}");
}

#[test]
fn traffic_weighs_the_edges() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = write_file(
        dir.path(),
        "metrics.txt",
        "# TYPE http_requests_total counter\n\
         http_requests_total{function=\"compose-post\",caller=\"\"} 50\n\
         http_requests_total{function=\"text-service\",caller=\"compose-post\"} 50\n\
         http_requests_total{function=\"url-shorten\",caller=\"text-service\"} 20\n",
    );
    let (graph, _) = read_graph(
        dir.path(),
        &["--metrics", metrics.to_str().unwrap(), "--picture", "none"],
    );
    let calls = |from: &str, to: &str| graph.edge(from, to).and_then(|e| e.calls);
    assert_eq!(calls("compose-post", "text-service"), Some(50.0));
    assert_eq!(calls("text-service", "url-shorten"), Some(20.0));
    // unique-id has no sample of its own: not scraped, so unknown, not zero.
    assert_eq!(calls("compose-post", "unique-id"), None);
    assert_eq!(graph.function("unique-id").unwrap().external, None);
    assert_eq!(graph.function("compose-post").unwrap().external, Some(50.0));
    assert!(graph.traffic.as_deref().unwrap().starts_with("prometheus"));

    let log = dir.path().join("access.log");
    let line = |f: &str| {
        format!(
            "127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"POST /function/{f} HTTP/1.1\" 200 12 \"-\" \"hyper\"\n"
        )
    };
    let lines = [
        line("compose-post"),
        line("compose-post"),
        line("unique-id"),
    ];
    std::fs::write(&log, lines.concat()).unwrap();
    let (graph, _) = read_graph(
        dir.path(),
        &["--access-log", log.to_str().unwrap(), "--picture", "none"],
    );
    let edge = graph.edge("compose-post", "unique-id").unwrap();
    assert_eq!(edge.calls, Some(1.0));
    assert_eq!(graph.function("compose-post").unwrap().external, Some(2.0));

    // A malformed scrape is an error naming the line.
    std::fs::write(&metrics, "http_requests_total{function=\"a\"} one\n").unwrap();
    let Ran { ok, stderr, .. } = fmerge_cli(
        dir.path(),
        &[
            "graph",
            "-f",
            "stack.yml",
            "--metrics",
            metrics.to_str().unwrap(),
        ],
    );
    assert!(!ok && stderr.contains("line 1"), "{stderr}");
}

#[test]
fn bad_graph_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    cli_refuses(dir.path(), &["graph"], &["fmerge graph -f stack.yml"]);
    cli_refuses(
        dir.path(),
        &["graph", "-f", "nope.yml"],
        &["cannot read the stack file"],
    );
    cli_refuses(
        dir.path(),
        &["graph", "-f", "x.yml", "--picture", "gif"],
        &["invalid value 'gif'"],
    );
    // A stack with one Rust function has no graph to read.
    std::fs::write(
        dir.path().join("one.yml"),
        format!(
            "version: 1.0\nprovider:\n  name: openfaas\nfunctions:\n  unique-id:\n    handler: {}\n    image: x\n  other:\n    lang: python3\n    handler: ./other\n    image: y\n",
            workspace_root().join("functions/unique-id").display()
        ),
    )
    .unwrap();
    cli_refuses(
        dir.path(),
        &["graph", "-f", "one.yml"],
        &["two or more Rust functions"],
    );
}

#[test]
fn a_callee_named_at_run_time_is_unknown_never_guessed() {
    let ws = fixture("dynamic", &[]);
    stack_of(ws.path(), &["dyn-front", "dyn-back"]);
    let Ran { ok, stderr, .. } =
        fmerge_command(ws.path(), &["graph", "-f", "stack.yml", "--picture", "svg"]);
    assert!(ok, "{stderr}");
    let graph = Graph::load(&ws.path().join("callgraph/calls.json")).unwrap();
    let edges: Vec<(&str, Option<&str>, usize)> = graph
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_deref(), e.sites))
        .collect();
    // dyn-back by a literal, by `invoke_request`, and through two helpers
    // that take the name as a parameter (a plain fn, an async fn): four.
    assert_eq!(
        edges,
        [("dyn-front", None, 1), ("dyn-front", Some("dyn-back"), 4)]
    );
    let back = graph.edges.iter().find(|e| e.to.is_some()).unwrap();
    assert_eq!(back.within, ["dyn_front::handle::{{closure}}"], "{back:?}");
    let dot = std::fs::read_to_string(ws.path().join("callgraph/calls.dot")).unwrap();
    assert!(
        dot.contains("label=\"unknown\\n(name not a literal)\""),
        "{dot}"
    );
}
