//! Mistakes refused before cargo starts (`fmerge::preflight`): each case
//! exits 1 with the cause and a `fix:` line (2, a usage error, for a flag's
//! value its parser refuses), and leaves its fresh target dir without any
//! build output: no cargo build ran before the refusal.
//!
//! Run: `cargo test --release -p fmerge --test preflight`

mod support;

use std::path::Path;
use std::process::Command;
use support::{stack_in, workspace_root, write_file};

const PAIR: [&str; 2] = ["write-home-timeline", "social-graph-get-followers"];

/// `fmerge ARGS --target-dir <fresh dir>` in the repo's workspace with `env`
/// set (and the registry credentials of the environment removed): asserts
/// it exits 1 with every one of `needles` and a `fix:` line in stderr, and
/// that the target dir is still empty; returns stderr.
fn refused_before_building(args: &[&str], env: &[(&str, &str)], needles: &[&str]) -> String {
    refused_with(1, args, env, needles)
}

/// [`refused_before_building`] for a flag's value its parser refuses: a
/// usage error, exit 2.
fn value_refused_before_building(args: &[&str], needles: &[&str]) -> String {
    refused_with(2, args, &[], needles)
}

/// [`refused_before_building`] with the exit code `code`.
fn refused_with(code: i32, args: &[&str], env: &[(&str, &str)], needles: &[&str]) -> String {
    let target = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fmerge"))
        .current_dir(workspace_root())
        .args(args)
        .args(["--target-dir", target.path().to_str().unwrap()])
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("FMERGE_REGISTRY_USER")
        .env_remove("FMERGE_REGISTRY_PASSWORD")
        .env_remove("FMERGE_REGISTRY")
        .envs(env.iter().copied())
        .output()
        .expect("run fmerge");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "fmerge {args:?}:\n{stderr}");
    for needle in needles.iter().chain(&["\nfix: "]) {
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
    }
    let left: Vec<_> = std::fs::read_dir(target.path()).unwrap().collect();
    assert!(left.is_empty(), "a build ran: {left:?}\n{stderr}");
    assert!(!stderr.contains("Compiling"), "{stderr}");
    stderr
}

/// [`refused_before_building`] for `fmerge build ARGS` with no env added.
fn build_refused(args: &[&str], needles: &[&str]) -> String {
    let args: Vec<&str> = std::iter::once("build")
        .chain(args.iter().copied())
        .collect();
    refused_before_building(&args, &[], needles)
}

/// [`build_refused`] for the pair's caller with the callee `name`, which
/// no function has: the error names it and says `then`.
fn unknown_callee(name: &str, then: &str) -> String {
    build_refused(
        &[PAIR[0], name],
        &[&format!("unknown function {name}"), then],
    )
}

#[test]
fn a_swapped_caller_and_callee_print_the_corrected_command() {
    build_refused(
        &[PAIR[1], PAIR[0]],
        &[
            "social-graph-get-followers never calls write-home-timeline, and write-home-timeline calls social-graph-get-followers",
            "fix: run `fmerge build write-home-timeline social-graph-get-followers --target-dir",
        ],
    );
}

#[test]
fn a_misspelled_rewrite_callee_names_the_callee_meant() {
    build_refused(
        &[
            PAIR[0],
            PAIR[1],
            "--rewrite",
            "social-graph-get-folowers:sn-redis-master:6379=127.0.0.1:6379",
        ],
        &[
            "social-graph-get-folowers is not a member of the group; did you mean `social-graph-get-followers`?",
            "fix: write --rewrite social-graph-get-followers:sn-redis-master:6379=127.0.0.1:6379",
        ],
    );
}

#[test]
fn a_callee_no_member_calls_is_refused_with_allow_uncalled_as_the_fix() {
    build_refused(
        &[PAIR[0], "unique-id"],
        &[
            "no member of the group calls unique-id: no call site in write-home-timeline names it",
            "fix: drop unique-id, or give --allow-uncalled",
        ],
    );
}

#[test]
fn an_unknown_function_gets_the_name_meant() {
    let meant = "did you mean `social-graph-get-followers`?";
    let stderr = unknown_callee("social-graph-get-folowers", meant);
    assert!(
        !stderr.contains("compose-post"),
        "only the name meant:\n{stderr}"
    );
}

#[test]
fn a_bench_crate_is_never_offered_as_a_function() {
    let offered = "the functions compose-creator-with-user-id";
    let stderr = unknown_callee("no-such-function", offered);
    assert!(!stderr.contains("fmerge-fused"), "{stderr}");
    assert!(
        !stderr.contains("sn-store") && !stderr.contains("fmerge-runtime"),
        "{stderr}"
    );
}

#[test]
fn an_unreachable_docker_engine_is_refused_before_the_build() {
    // Port 1 on loopback: nothing listens there.
    refused_before_building(
        &["build", PAIR[0], PAIR[1], "--image"],
        &[("DOCKER_HOST", "tcp://127.0.0.1:1")],
        &["cannot reach the Docker Engine at tcp://127.0.0.1:1"],
    );
}

/// [`build_refused`] for the pair with `push` (a push's options), where a
/// Docker Engine answers: without one, that is what is refused, so the
/// test says it was skipped, and fails where the tools are required (CI).
fn push_refused(push: &[&str], needles: &[&str]) {
    if !fmerge_testkit::dataplane::tool_present(fmerge_ship::image::engine::missing_reason()) {
        return;
    }
    build_refused(&[&PAIR[..], push].concat(), needles);
}

#[test]
fn push_credentials_that_cannot_be_found_are_refused_before_the_build() {
    push_refused(
        &[
            "--push",
            "--registry",
            "127.0.0.1:5999/team",
            "--registry-auth",
            "env",
        ],
        &["--registry-auth env needs FMERGE_REGISTRY_USER and FMERGE_REGISTRY_PASSWORD"],
    );
}

#[test]
fn a_push_with_nowhere_to_push_is_refused_before_the_build() {
    push_refused(
        &["--push"],
        &["--push has no registry to push to", "fix: give --registry"],
    );
}

#[test]
fn keep_apart_with_one_name_is_refused_before_the_graph_build() {
    value_refused_before_building(
        &[
            "plan",
            "-f",
            "functions/stack.yml",
            "--keep-apart",
            "compose-post",
        ],
        &[
            "--keep-apart compose-post names fewer than two functions",
            "fix: name two or more",
        ],
    );
}

#[test]
fn keep_apart_with_an_unknown_name_gets_the_name_meant() {
    refused_before_building(
        &[
            "plan",
            "-f",
            "functions/stack.yml",
            "--keep-apart",
            "compose-post,unique-di",
        ],
        &[],
        &["unknown function unique-di", "did you mean `unique-id`?"],
    );
}

#[test]
fn a_plan_cap_that_is_not_a_quantity_is_refused_before_the_graph_build() {
    value_refused_before_building(
        &["plan", "-f", "functions/stack.yml", "--max-memory", "512K"],
        &[
            "--max-memory: \"512K\" is not a Kubernetes quantity",
            "kilo is a small k",
        ],
    );
}

#[test]
fn a_plan_cap_the_stack_cannot_meet_is_refused_before_the_graph_build() {
    refused_before_building(
        &[
            "plan",
            "-f",
            "functions/stack.yml",
            "--max-total-memory",
            "100Mi",
        ],
        &[],
        &[
            "the application reserves 1664Mi before any merge",
            "fix: raise --max-total-memory",
        ],
    );
}

/// functions/stack.yml in `dir`, its handlers pointing at the repo's
/// functions, with write-home-timeline's memory limit `memory`.
fn stack_with_limit(dir: &Path, memory: &str) -> String {
    let text = std::fs::read_to_string(stack_in(dir)).unwrap();
    let entry = text.find("  write-home-timeline:\n").expect("the entry");
    let limit = entry + text[entry..].find("memory: ").expect("a memory limit");
    let end = limit + text[limit..].find('\n').unwrap();
    let text = format!("{}memory: {memory}{}", &text[..limit], &text[end..]);
    let path = write_file(dir, "stack.yml", &text);
    path.to_str().unwrap().to_string()
}

#[test]
fn a_stack_limit_that_is_not_a_quantity_names_the_function_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let stack = stack_with_limit(dir.path(), "64MB");
    let needles =
        ["function write-home-timeline, limits.memory: \"64MB\" is not a Kubernetes quantity"];
    build_refused(&["-f", &stack, PAIR[0], PAIR[1]], &needles);
    refused_before_building(&["plan", "-f", &stack], &[], &needles);
    refused_before_building(&["graph", "-f", &stack], &[], &needles);
}

#[test]
fn a_bad_group_file_is_refused_before_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let group = "caller = \"write-home-timeline\"\ncallees = [\"unique-id\"]\n";
    let file = write_file(dir.path(), "group.toml", group);
    build_refused(
        &["--config", file.to_str().unwrap()],
        &["no member of the group calls unique-id"],
    );
}
