//! fmerge's command line as a user meets it: bad values are usage errors
//! (exit 2) listing the valid ones; an error is `error: …` then `fix: …`
//! (exit 1); `--message-format json` ends with a `finished` record, also on
//! failure; faas-cli's habits (./stack.yml, OPENFAAS_URL, --filter and
//! --regex); shell completions. Most cases stop before any build.
//!
//! Run: `cargo test --release -p fmerge --test cli`

#[path = "support/graphs.rs"]
mod graphs;
mod support;

use std::path::Path;
use std::process::Command;
use support::{assert_says, stack_in, stack_of, target_dir, workspace_root, write_file};

/// `fmerge ARGS` in `dir` with `env` added: (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fmerge"))
        .current_dir(dir)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("OPENFAAS_URL")
        .envs(env.iter().copied())
        .output()
        .expect("run fmerge");
    (
        out.status.code().expect("an exit code"),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `fmerge ARGS` in `dir` with `env` added, which must exit with `code`;
/// returns its stderr.
fn exits_with(code: i32, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let (got, _, stderr) = run(dir, args, env);
    assert_eq!(got, code, "{args:?}:\n{stderr}");
    stderr
}

/// Asserts `fmerge ARGS` is a usage error (exit 2) naming `values`.
fn usage_error_lists(args: &[&str], values: &str) {
    let dir = tempfile::tempdir().unwrap();
    let stderr = exits_with(2, dir.path(), args, &[]);
    assert!(stderr.starts_with("error: invalid value"), "{stderr}");
    assert!(
        stderr.contains(&format!("[possible values: {values}]")),
        "{stderr}"
    );
    // In fmerge's voice, as every error: the fix after the cause.
    assert!(
        stderr.ends_with("fix: give one of the possible values\n"),
        "{stderr}"
    );
}

#[test]
fn a_value_fmerge_checks_is_a_usage_error_too() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = exits_with(2, dir.path(), &["build", "a", "b", "-j", "0"], &[]);
    assert_eq!(
        stderr,
        "error: invalid value '0' for '--jobs <JOBS>': -j 0 gives no job\n\
         fix: give -j 1 or more, or leave -j out for one per core\n"
    );
}

#[test]
fn a_bad_lto_is_a_usage_error_listing_the_modes() {
    usage_error_lists(&["build", "a", "b", "--lto", "thin"], "fat, own, off");
}

#[test]
fn a_bad_progress_is_a_usage_error_listing_the_styles() {
    usage_error_lists(
        &["build", "a", "b", "--image", "--progress", "fancy"],
        "auto, bars, plain, quiet",
    );
}

#[test]
fn a_bad_registry_auth_is_a_usage_error_listing_the_sources() {
    usage_error_lists(
        &["build", "a", "b", "--push", "--registry-auth", "vault"],
        "auto, env, docker, none",
    );
}

#[test]
fn a_bad_objective_is_a_usage_error_listing_the_objectives() {
    usage_error_lists(
        &["plan", "--objective", "speed"],
        "latency, calls, memory, cost",
    );
}

/// Each check of a plan flag (one case per value parser) refuses a bad
/// value as a usage error in fmerge's voice, before the graph is read: the
/// graph file named does not exist, and the error is not about it.
#[test]
fn a_bad_plan_value_is_a_usage_error_before_the_graph_is_read() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value, cause) in [
        ("--max-memory", "512K", "is not a Kubernetes quantity"),
        ("--max-total-cpu", "lots", "is not a Kubernetes quantity"),
        ("--min-gain-ms", "-1", "is below 0"),
        ("--hop-ms", "0", "is no latency"),
        ("--time-limit", "0", "is no time"),
        (
            "--keep-apart",
            "compose-post",
            "names fewer than two functions",
        ),
        (
            "--search",
            "fast",
            "[possible values: auto, exact, heuristic]",
        ),
    ] {
        let arg = format!("{flag}={value}");
        let args = ["plan", "--graph", "missing/calls.json", &arg];
        let stderr = exits_with(2, dir.path(), &args, &[]);
        assert!(
            stderr.starts_with(&format!("error: invalid value '{value}' for '{flag} ")),
            "{stderr}"
        );
        assert!(stderr.contains(cause), "{args:?}: {stderr}");
        let fix = stderr.lines().last().unwrap_or_default();
        assert!(fix.starts_with("fix: "), "{args:?}: {stderr}");
        assert!(!stderr.contains("calls.json"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_bad_message_format_is_a_usage_error_for_every_command() {
    for command in ["build", "graph", "plan"] {
        usage_error_lists(&[command, "--message-format", "yaml"], "human, json");
    }
}

#[test]
fn an_error_is_printed_as_error_then_fix_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(dir.path(), &["build"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "error: no functions to merge", "{stderr}");
    assert!(
        lines[1].starts_with("fix: run `fmerge build <CALLER> <CALLEE>...`"),
        "{stderr}"
    );
}

/// The last line of `stdout`, as a JSON record.
fn last_record(stdout: &str) -> serde_json::Value {
    let last = stdout.lines().last().expect("a record");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

/// `ARGS --out OUT --message-format json`.
fn json_into<'a>(args: &[&'a str], out: &'a Path) -> Vec<&'a str> {
    let json = ["--out", out.to_str().unwrap(), "--message-format", "json"];
    [args, &json].concat()
}

/// The records of `stdout`, one a line, which a successful `finished` record ends.
fn records_of_a_success(stdout: &str) -> Vec<serde_json::Value> {
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(
        records.last(),
        Some(&serde_json::json!({"reason": "finished", "success": true})),
        "{stdout}"
    );
    records
}

#[test]
fn json_output_ends_with_a_finished_record_on_failure_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["build", "graph", "plan"] {
        let (code, stdout, stderr) = run(dir.path(), &[command, "--message-format", "json"], &[]);
        assert_eq!(code, 1, "{command}: {stderr}");
        assert_eq!(stdout.lines().count(), 1, "only the record: {stdout}");
        let record = last_record(&stdout);
        assert_eq!(record["reason"], "finished", "{command}: {stdout}");
        assert_eq!(record["success"], false, "{command}: {stdout}");
        let (error, fix) = (record["error"].as_str(), record["fix"].as_str());
        assert!(
            error.is_some_and(|e| !e.contains("fix:")) && fix.is_some(),
            "{command}: {record}"
        );
        // And the same error on stderr, for a person.
        assert!(
            stderr.contains(&format!("error: {}", error.unwrap())),
            "{stderr}"
        );
    }
}

#[test]
fn plan_json_output_ends_with_a_finished_record_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let graph = serde_json::to_string(&graphs::social_network()).unwrap();
    let graph = write_file(dir.path(), "calls.json", &graph);
    let out = dir.path().join("plan");
    let args = json_into(
        &["plan", "--graph", graph.to_str().unwrap(), "--no-dry-run"],
        &out,
    );
    let (code, stdout, stderr) = run(dir.path(), &args, &[]);
    assert_eq!(code, 0, "{stderr}");
    let records = records_of_a_success(&stdout);
    let written: Vec<&str> = records
        .iter()
        .filter(|r| r["reason"] == "written")
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert!(written.iter().any(|p| p.ends_with("plan.toml")), "{stdout}");
    assert!(written.iter().all(|p| Path::new(p).is_file()), "{stdout}");
    // The report, for people, went to stderr.
    assert!(stderr.contains("per-hop latency"), "{stderr}");
    assert!(!stdout.contains("per-hop latency"), "{stdout}");
}

#[test]
fn the_stack_file_in_the_current_directory_is_the_default() {
    for name in ["stack.yml", "stack.yaml"] {
        let dir = tempfile::tempdir().unwrap();
        let stack = stack_of(dir.path(), &["solo"]);
        std::fs::rename(&stack, dir.path().join(name)).unwrap();
        // graph and plan read it without -f ...
        for command in ["graph", "plan"] {
            let stderr = exits_with(1, dir.path(), &[command], &[]);
            assert!(
                stderr.contains(name) && stderr.contains("two or more Rust functions"),
                "{command} with ./{name}:\n{stderr}"
            );
        }
        // ... and build looks its functions up in it.
        let stderr = exits_with(1, dir.path(), &["build", "a", "b"], &[]);
        assert!(
            stderr.contains("unknown function a") && stderr.contains("solo"),
            "build with ./{name}:\n{stderr}"
        );
    }
}

#[test]
fn with_both_stack_files_here_the_default_is_stack_yaml_as_in_faas_cli() {
    let dir = tempfile::tempdir().unwrap();
    let yml = stack_of(dir.path(), &["in-yaml"]);
    std::fs::rename(&yml, dir.path().join("stack.yaml")).unwrap();
    stack_of(dir.path(), &["in-yml"]);
    let stderr = exits_with(1, dir.path(), &["build", "a", "b"], &[]);
    assert!(
        stderr.contains("stack.yaml") && stderr.contains("in-yaml") && !stderr.contains("in-yml"),
        "{stderr}"
    );
}

#[test]
fn the_gateway_is_read_from_openfaas_url() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = exits_with(
        1,
        dir.path(),
        &["build", "a", "b", "--image"],
        &[("OPENFAAS_URL", "gw.local:8080")],
    );
    let needles = [
        "--gateway \"gw.local:8080\" is not an http(s) URL",
        "\nfix: ",
    ];
    assert_says(&stderr, &needles);
    // Given as a flag without an image, it is a mistake (-g is --gateway).
    let args = ["build", "a", "b", "-g", "http://127.0.0.1:1"];
    let stderr = exits_with(1, dir.path(), &args, &[]);
    assert_says(&stderr, &["--gateway applies to the image"]);
}

#[test]
fn filter_and_regex_select_the_stacks_functions() {
    let dir = tempfile::tempdir().unwrap();
    let stack = workspace_root().join("functions/stack.yml");
    let stack = stack.to_str().unwrap();
    // One function selected of 26: too few for a graph, so nothing is built.
    for select in [["--filter", "compose-p*"], ["--regex", "^unique-id$"]] {
        let args = [&["graph", "-f", stack][..], &select[..]].concat();
        let stderr = exits_with(1, dir.path(), &args, &[]);
        assert!(stderr.contains("and it has 1"), "{select:?}:\n{stderr}");
    }
    let (_, _, stderr) = run(
        dir.path(),
        &["plan", "-f", stack, "--filter", "nope-*"],
        &[],
    );
    assert!(
        stderr.contains("no function of the stack matches --filter/--regex")
            && stderr.contains("compose-post"),
        "{stderr}"
    );
    // One or the other, as faas-cli.
    let args = ["graph", "-f", stack, "--filter", "a*", "--regex", "b"];
    exits_with(2, dir.path(), &args, &[]);
}

#[test]
fn completions_bash_prints_a_completion_script() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(dir.path(), &["completions", "bash"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("_fmerge()") && stdout.contains("complete -F _fmerge"),
        "{stdout}"
    );
    assert!(stdout.contains("--message-format") && stdout.contains("--allow-uncalled"));
}

/// `fmerge ARGS` building into the shared target dir.
fn building(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let target = target_dir();
    let args = [args, &["--target-dir", target.to_str().unwrap()]].concat();
    run(dir, &args, &[])
}

#[test]
fn graph_json_output_of_the_selected_functions_ends_with_a_finished_record() {
    let dir = tempfile::tempdir().unwrap();
    let stack = workspace_root().join("functions/stack.yml");
    let out = dir.path().join("graph");
    let pair = "^(write-home-timeline|social-graph-get-followers)$";
    let stack = stack.to_str().unwrap();
    let args = json_into(
        &["graph", "-f", stack, "--regex", pair, "--picture", "none"],
        &out,
    );
    let (code, stdout, stderr) = building(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    records_of_a_success(&stdout);
    let graph = fmerge::graph::Graph::load(&out.join("calls.json")).unwrap();
    let names: Vec<&str> = graph.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["write-home-timeline", "social-graph-get-followers"]);
}

/// `build --all` plans with the plan operation (its files and `written`
/// records, into plan/ beside the stack, in the build's own JSON stream),
/// then merges the plan's group.
#[test]
fn build_all_plans_the_stack_then_builds_its_groups() {
    let dir = tempfile::tempdir().unwrap();
    let stack = stack_in(dir.path());
    let pair = "^(write-home-timeline|social-graph-get-followers)$";
    let args = [
        "build",
        "-f",
        stack.to_str().unwrap(),
        "--all",
        "--regex",
        pair,
        "--opt-level",
        "0",
        "--message-format",
        "json",
    ];
    let (code, stdout, stderr) = building(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    let records = records_of_a_success(&stdout);
    let written: Vec<&str> = records
        .iter()
        .filter(|r| r["reason"] == "written")
        .filter_map(|r| r["path"].as_str())
        .collect();
    let plan = dir.path().join("plan");
    for file in ["plan.toml", "plan.json", "write-home-timeline.toml"] {
        let path = plan.join(file);
        assert!(
            written.contains(&path.to_str().unwrap()),
            "{file}: {stdout}"
        );
        assert!(path.is_file(), "{}", path.display());
    }
    // The plan's report goes to stderr, as `fmerge plan --message-format json` sends it.
    assert!(stderr.contains("per-hop latency"), "{stderr}");
    let merged: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["reason"] == "merged").collect();
    assert_eq!(merged.len(), 1, "{stdout}");
}

/// This repo's pair merged (at opt-level 0) under the name `name`, with
/// `extra`: (exit code, stdout, stderr).
fn merge_pair(name: &str, extra: &[&str]) -> (i32, String, String) {
    let out = target_dir().join("fmerge-tests").join(name);
    let args = [
        &[
            "build",
            "write-home-timeline",
            "social-graph-get-followers",
            "--opt-level",
            "0",
            "--name",
            name,
            "--out",
            out.to_str().unwrap(),
        ][..],
        extra,
    ]
    .concat();
    building(&workspace_root(), &args)
}

#[test]
fn build_json_output_ends_with_a_finished_record_on_success() {
    let (code, stdout, stderr) = merge_pair("cli-json", &["--message-format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let records = records_of_a_success(&stdout);
    assert!(records.iter().any(|r| r["reason"] == "merged"), "{stdout}");
}

#[test]
fn quiet_prints_nothing_from_cargo() {
    let (code, stdout, stderr) = merge_pair("cli-quiet", &["-q"]);
    assert_eq!(code, 0, "{stderr}");
    for cargo in ["Compiling", "Finished", "Fresh", "Blocking"] {
        assert!(!stderr.contains(cargo), "{cargo} in:\n{stderr}");
    }
    assert!(Path::new(stdout.lines().last().unwrap()).is_file());
}
