//! The planner and the build agree: for every refusal fixture, what `fmerge
//! graph` says about a pair (its conflicts and left-out functions, which
//! `fmerge plan` keeps apart) is what `fmerge build` does with that pair:
//! both refuse it for the same reason, or both accept it.
//!
//! One stack holds the fixtures' functions (four fixture workspaces); it is
//! read by one `fmerge graph` (and the allowed case's functions once more
//! with --allow-shared-static) and built by one `fmerge build --plan` with a
//! group per case (one cargo build), plus the allowed case on its own.
//!
//! Run: `cargo test --release -p fmerge --test agreement`

#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use fmerge::graph::Graph;
use std::path::Path;
use support::*;

/// One pair of fixture functions, and what the build does with it.
struct Case {
    what: &'static str,
    caller: &'static str,
    callee: &'static str,
    /// `--allow-shared-static st-helper`.
    allowed: bool,
    /// What a refusal starts with (the text before its first `:`); `None`:
    /// the build merges the pair.
    refused: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        what: "a shared static",
        caller: "st-front",
        callee: "st-back",
        allowed: false,
        refused: Some("shared state"),
    },
    Case {
        what: "a symbol clash",
        caller: "caller-fn",
        callee: "callee-fn",
        allowed: false,
        refused: Some("symbol clash"),
    },
    Case {
        what: "a symbol clash through an alias (LLVM merged two bodies)",
        caller: "alias-front",
        callee: "alias-back",
        allowed: false,
        refused: Some("symbol clash"),
    },
    Case {
        what: "two different allocators",
        caller: "alloc-caller",
        callee: "alloc-other",
        allowed: false,
        refused: Some("the merged functions set different #[global_allocator]s"),
    },
    Case {
        what: "one allocator",
        caller: "alloc-callee",
        callee: "alloc-other",
        allowed: false,
        refused: None,
    },
    Case {
        what: "identical allocators",
        caller: "sys-front",
        callee: "sys-back",
        allowed: false,
        refused: None,
    },
    Case {
        what: "a static nothing writes (gone from the release build)",
        caller: "ro-front",
        callee: "ro-back",
        allowed: false,
        refused: None,
    },
    Case {
        what: "an allowed shared static",
        caller: "st-front",
        callee: "st-back",
        allowed: true,
        refused: None,
    },
];

/// The fixtures and their functions.
const FIXTURES: &[(&str, &[&str])] = &[
    ("shared", &["st-front", "st-back"]),
    (
        "clash",
        &["caller-fn", "callee-fn", "alias-front", "alias-back"],
    ),
    (
        "allocator",
        &["alloc-caller", "alloc-callee", "alloc-other"],
    ),
    ("verdict", &["sys-front", "sys-back", "ro-front", "ro-back"]),
];

const ALLOW: [&str; 2] = ["--allow-shared-static", "st-helper"];
/// The merge's own codegen does not change a verdict: the cheapest.
const FAST: [&str; 4] = ["--lto", "off", "--opt-level", "0"];

/// What the planner says about the pair: a conflict between the two, or a
/// reason one of them is in no group.
fn planner(graph: &Graph, case: &Case) -> Option<String> {
    let left_out = [case.caller, case.callee]
        .iter()
        .find_map(|f| graph.function(f).and_then(|f| f.left_out.clone()));
    let conflict = graph.conflicts.iter().find(|c| {
        (c.a == case.caller && c.b == case.callee) || (c.a == case.callee && c.b == case.caller)
    });
    left_out.or(conflict.map(|c| c.reason.clone()))
}

/// The reason `fmerge build --plan` gave for the group `name`, if it refused it.
fn build_refusal(stderr: &str, name: &str) -> Option<String> {
    let at = stderr.find(&format!("group {name}: "))?;
    let rest = &stderr[at + "group ".len() + name.len() + 2..];
    Some(rest.split("\n  group ").next().unwrap_or(rest).to_string())
}

/// What a refusal is (before its first `:`), and the words of its first
/// line in any order (the two may name the pair in either order).
fn gist(reason: &str) -> (String, Vec<String>) {
    let first = reason.lines().next().unwrap_or_default();
    let kind = first.split(':').next().unwrap_or_default().to_string();
    let mut words: Vec<String> = first
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| ",.;:()".contains(c)).to_string())
        .collect();
    words.sort();
    (kind, words)
}

fn read_graph(dir: &Path, stack: &Path, extra: &[&str]) -> Graph {
    let out = dir.join(if extra.is_empty() {
        "graph"
    } else {
        "graph-allowed"
    });
    let args = [
        &[
            "graph",
            "-f",
            stack.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--picture",
            "none",
        ],
        extra,
    ]
    .concat();
    let Ran { ok, stderr, .. } = fmerge_command(dir, &args);
    assert!(ok, "fmerge {args:?} failed:\n{stderr}");
    Graph::load(&out.join("calls.json")).unwrap()
}

#[test]
fn the_planner_and_the_build_agree_on_every_refusal_fixture() {
    let fixtures: Vec<_> = FIXTURES
        .iter()
        .map(|(name, functions)| (fixture(name, &[]), *functions))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut stack = String::from("version: 1.0\nprovider:\n  name: openfaas\nfunctions:\n");
    // The allowed case's own stack: its graph re-checks only its functions
    // on the release build, not every function a refusal concerns.
    let mut allowed_stack = stack.clone();
    for (ws, functions) in &fixtures {
        for f in *functions {
            let handler = ws.path().join(f);
            let entry = format!(
                "  {f}:\n    lang: rust-fmerge\n    handler: {}\n    image: x/{f}\n",
                handler.display()
            );
            if CASES
                .iter()
                .any(|c| c.allowed && (c.caller == *f || c.callee == *f))
            {
                allowed_stack.push_str(&entry);
            }
            stack.push_str(&entry);
        }
    }
    let stack_path = dir.path().join("stack.yml");
    std::fs::write(&stack_path, stack).unwrap();
    let allowed_path = dir.path().join("stack-allowed.yml");
    std::fs::write(&allowed_path, allowed_stack).unwrap();

    // The planner's side.
    let graph = read_graph(dir.path(), &stack_path, &[]);
    let allowed_graph = read_graph(dir.path(), &allowed_path, &ALLOW);
    assert_eq!(allowed_graph.allow_shared_static, ["st-helper"]);

    // The build's side: one group per case but the allowed one, from one cargo build.
    let mut plan = String::new();
    for case in CASES.iter().filter(|c| !c.allowed) {
        plan.push_str(&format!(
            "[[group]]\ncaller = \"{}\"\ncallees = [\"{}\"]\n\n",
            case.caller, case.callee
        ));
    }
    let plan_path = dir.path().join("cases.toml");
    std::fs::write(&plan_path, plan).unwrap();
    let plan_args = [
        &[
            "--plan",
            plan_path.to_str().unwrap(),
            "-f",
            stack_path.to_str().unwrap(),
        ],
        &FAST[..],
    ]
    .concat();
    let Ran {
        stderr: plan_stderr,
        ..
    } = fmerge_in(dir.path(), &plan_args);

    for case in CASES {
        let (said, built) = if case.allowed {
            let args = [
                &["-f", stack_path.to_str().unwrap(), case.caller, case.callee],
                &ALLOW[..],
                &FAST[..],
            ]
            .concat();
            let Ran { ok, stderr, .. } = fmerge_in(dir.path(), &args);
            (planner(&allowed_graph, case), (!ok).then_some(stderr))
        } else {
            let name = format!("{}-merged", case.caller);
            (planner(&graph, case), build_refusal(&plan_stderr, &name))
        };
        let context = format!(
            "{} ({} + {}): the planner says {said:?}, the build {built:?}",
            case.what, case.caller, case.callee
        );
        match (&said, &built, case.refused) {
            (Some(said), Some(built), Some(kind)) => {
                assert_eq!(gist(said), gist(built), "{context}");
                assert_eq!(gist(built).0, kind, "{context}");
            }
            (None, None, None) => {}
            _ => panic!("{context}; expected refused: {:?}", case.refused),
        }
    }
}
