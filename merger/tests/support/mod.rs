//! What fmerge's integration tests share beyond the service harness
//! ([`fmerge_testkit`]: Redis, the nginx gateway, function processes,
//! fixtures): the one way to run `fmerge` and its common checks.
//!
//! Tests that need a registry or the Docker Engine add
//! `#[path = "support/registry.rs"] mod registry;`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

pub use fmerge_testkit::*;

/// The target dir every test builds into: this repo's, so that
/// dependencies compile once for all tests.
pub fn target_dir() -> PathBuf {
    workspace_root().join("target")
}

/// Fixture `name` (as [`fixture`] copies it, nothing replaced), copied once
/// per test process: the workspace its tests share, kept until it ends.
#[allow(dead_code)]
pub fn shared_fixture(name: &'static str) -> &'static Path {
    static COPIES: Mutex<BTreeMap<&str, &'static Path>> = Mutex::new(BTreeMap::new());
    let mut copies = COPIES.lock().unwrap_or_else(PoisonError::into_inner);
    let copy = || Box::leak(Box::new(fixture(name, &[]))).path();
    copies.entry(name).or_insert_with(copy)
}

/// What a run of `fmerge` came to.
#[allow(dead_code)]
pub struct Ran {
    /// It exited with success.
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// A plan `fmerge plan` wrote: its stdout and the groups of its plan.toml.
#[allow(dead_code)]
pub struct Planned {
    pub stdout: String,
    pub groups: Vec<fmerge::group::Group>,
}

/// A merge that succeeded: its binary, and what fmerge said on stderr.
#[allow(dead_code)]
pub struct BuiltBinary {
    pub binary: PathBuf,
    pub stderr: String,
}

/// `fmerge build ARGS` run in `dir` with `env` added (credentials, say),
/// building into [`target_dir`].
pub fn fmerge(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let args: Vec<&str> = std::iter::once("build")
        .chain(args.iter().copied())
        .collect();
    fmerge_command_with(dir, &args, env)
}

/// `fmerge build ARGS` in `dir`.
#[allow(dead_code)] // each test binary compiles this module; only some use each helper
pub fn fmerge_in(dir: &Path, args: &[&str]) -> Ran {
    fmerge(dir, args, &[])
}

/// `fmerge build ARGS` in this repo's workspace (the socialNetwork functions).
#[allow(dead_code)]
pub fn fmerge_in_repo(args: &[&str]) -> Ran {
    fmerge(&workspace_root(), args, &[])
}

/// Any `fmerge` command that builds (`graph`, `plan`, `build`), in `dir`,
/// building into [`target_dir`].
#[allow(dead_code)]
pub fn fmerge_command(dir: &Path, args: &[&str]) -> Ran {
    fmerge_command_with(dir, args, &[])
}

fn fmerge_command_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let target = target_dir();
    let args: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--target-dir", target.to_str().unwrap()])
        .collect();
    fmerge_cli_with(dir, &args, env)
}

/// Any `fmerge` command (`fmerge template`, say) in `dir`, as given.
#[allow(dead_code)]
pub fn fmerge_cli(dir: &Path, args: &[&str]) -> Ran {
    fmerge_cli_with(dir, args, &[])
}

fn fmerge_cli_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    // Said in the test's output (shown with --nocapture or on failure), so
    // that a slow suite shows which of its commands the time went to.
    let start = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_fmerge"))
        .current_dir(dir)
        .args(args)
        // The binary must find rustc's libLLVM by itself, as it does installed.
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().copied())
        .output()
        .expect("run fmerge");
    eprintln!(
        "[{:.1} s] fmerge {}",
        start.elapsed().as_secs_f64(),
        args.join(" ")
    );
    Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

/// `fmerge plan ARGS` in `dir` (building into [`target_dir`]), which must
/// succeed; the groups are those of the plan.toml it wrote into `--out` of
/// ARGS, else `plan`.
#[allow(dead_code)]
pub fn planned(dir: &Path, args: &[&str]) -> Planned {
    let all = [&["plan"], args].concat();
    let Ran { ok, stdout, stderr } = fmerge_command(dir, &all);
    assert!(ok, "fmerge {all:?} failed:\n{stderr}");
    let out = args
        .iter()
        .position(|a| *a == "--out")
        .map_or("plan", |i| args[i + 1]);
    let groups = fmerge::plan::PlanFile::load(&dir.join(out).join("plan.toml"))
        .unwrap()
        .groups;
    Planned { stdout, groups }
}

/// [`planned`] from the `stack.yml` in `dir`: `fmerge plan -f stack.yml ARGS`.
#[allow(dead_code)]
pub fn plan_stack(dir: &Path, args: &[&str]) -> Planned {
    planned(dir, &[&["-f", "stack.yml"], args].concat())
}

/// `fmerge build ARGS` in `dir`, which must succeed; the binary is the last
/// line of stdout, which must exist.
#[allow(dead_code)]
pub fn merged(dir: &Path, args: &[&str]) -> BuiltBinary {
    let Ran { ok, stdout, stderr } = fmerge_in(dir, args);
    assert!(ok, "fmerge build {args:?} failed:\n{stderr}");
    let binary = PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("fmerge printed the binary path"),
    );
    assert!(binary.is_file(), "{} is not a file", binary.display());
    BuiltBinary { binary, stderr }
}

/// `fmerge build ARGS --out <ws>/out` in the fixture workspace `ws`.
#[allow(dead_code)]
pub fn fmerge_out(ws: &Path, args: &[&str]) -> Ran {
    let out = ws.join("out");
    let args: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--out", out.to_str().unwrap()])
        .collect();
    fmerge_in(ws, &args)
}

/// Merges `functions` (the caller first) with the options `extra` in the
/// fixture workspace `ws`, into `<ws>/out`; asserts success.
#[allow(dead_code)]
pub fn merge_in(ws: &Path, functions: &[&str], extra: &[&str]) -> BuiltBinary {
    let out = ws.join("out");
    let mut args = functions.to_vec();
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    merged(ws, &args)
}

/// Asserts that `text` says every one of `needles`.
#[allow(dead_code)]
pub fn assert_says(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
    }
}

/// `fmerge build ARGS` in `dir`, which must refuse with every one of
/// `needles` in its error; returns its stderr.
#[allow(dead_code)]
pub fn refuses(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let Ran { ok, stderr, .. } = fmerge_in(dir, args);
    assert!(!ok, "fmerge build {args:?} must refuse");
    assert_says(&stderr, needles);
    stderr
}

/// What a run that must be refused before cargo starts came to: it
/// failed, its error says every one of `needles`, and nothing was built
/// (no `building` line); its stderr.
#[allow(dead_code)]
pub fn refused_before_cargo(ran: Ran, needles: &[&str]) -> String {
    let Ran { ok, stderr, .. } = ran;
    assert!(!ok, "{stderr}");
    assert_says(&stderr, needles);
    assert!(!stderr.contains("building"), "cargo started:\n{stderr}");
    stderr
}

/// Any `fmerge` command in `dir`, as given ([`fmerge_cli`]), which must fail
/// with every one of `needles` in its error.
#[allow(dead_code)]
pub fn cli_refuses(dir: &Path, args: &[&str], needles: &[&str]) {
    let Ran { ok, stderr, .. } = fmerge_cli(dir, args);
    assert!(!ok, "fmerge {args:?} must fail:\n{stderr}");
    assert_says(&stderr, needles);
}

/// Writes `text` to `<dir>/<name>`; returns its path.
#[allow(dead_code)]
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// functions/stack.yml with absolute handler folders, written into `dir`.
#[allow(dead_code)]
pub fn stack_in(dir: &Path) -> PathBuf {
    let functions = workspace_root().join("functions");
    let text = std::fs::read_to_string(functions.join("stack.yml")).unwrap();
    let text = text.replace("handler: ./", &format!("handler: {}/", functions.display()));
    write_file(dir, "stack.yml", &text)
}

/// A stack.yml in `dir` naming `functions`, each in its folder `./<name>`
/// (a fixture's layout); returns its path.
#[allow(dead_code)]
pub fn stack_of(dir: &Path, functions: &[&str]) -> PathBuf {
    let mut text = String::from("version: 1.0\nprovider:\n  name: openfaas\nfunctions:\n");
    for f in functions {
        text.push_str(&format!(
            "  {f}:\n    lang: rust-fmerge\n    handler: ./{f}\n    image: x/{f}\n"
        ));
    }
    write_file(dir, "stack.yml", &text)
}

/// The unmerged functions `names`, each its own process (its binary from the
/// shared build) behind a new gateway; the processes stop when dropped.
#[allow(dead_code)]
pub fn unmerged_behind_gateway(names: &[&str]) -> (Gateway, Vec<Function>) {
    let ports: Vec<(&str, u16)> = names.iter().map(|n| (*n, free_port())).collect();
    let gateway = Gateway::start(&ports);
    let functions = ports
        .iter()
        .map(|(name, port)| {
            Function::start(
                built_binary(name),
                name,
                *port,
                [("GATEWAY_URL", gateway.url())],
            )
        })
        .collect();
    (gateway, functions)
}

/// `fmerge graph -f stack.yml ARGS` in `dir`, which must succeed and leave
/// no function out; the calls.json it wrote.
#[allow(dead_code)]
pub fn graph_of_stack(dir: &Path, args: &[&str]) -> serde_json::Value {
    let all = [&["graph", "-f", "stack.yml"], args].concat();
    let graph = fmerge_command(dir, &all);
    assert!(graph.ok, "fmerge {all:?} failed:\n{}", graph.stderr);
    let calls: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("callgraph/calls.json")).unwrap())
            .unwrap();
    for f in calls["functions"].as_array().unwrap() {
        assert!(f["left_out"].is_null(), "nothing refuses a member: {f}");
    }
    calls
}

/// The edges of a calls.json, sorted: caller, callee (every name a
/// literal) and the functions each call is made within.
#[allow(dead_code)]
pub fn edges_of(calls: &serde_json::Value) -> Vec<(String, String, Vec<String>)> {
    let text = |v: &serde_json::Value| v.as_str().expect("every name is a literal").to_string();
    let mut edges: Vec<_> = calls["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let within = e["within"].as_array().unwrap();
            (
                text(&e["from"]),
                text(&e["to"]),
                within.iter().map(text).collect(),
            )
        })
        .collect();
    edges.sort();
    edges
}

/// [`graph_of_stack`] weighed by a gateway access log written into `dir`:
/// `n` requests from outside to each function of `requests`.
#[allow(dead_code)]
pub fn weighed_graph(dir: &Path, requests: &[(&str, usize)]) -> serde_json::Value {
    let log = dir.join("access.log");
    let text: String = requests
        .iter()
        .flat_map(|(f, n)| {
            std::iter::repeat_n(
                format!(
                    "127.0.0.1 - - [28/Nov/2026:09:00:00 +0000] \"POST /function/{f} HTTP/1.1\" 200 12 \"-\" \"curl\"\n"
                ),
                *n,
            )
        })
        .collect();
    std::fs::write(&log, text).unwrap();
    graph_of_stack(
        dir,
        &["--access-log", log.to_str().unwrap(), "--picture", "none"],
    )
}

/// `fmerge plan` in `dir`, whose plan must hold every one of `members`,
/// then `fmerge build --plan plan/plan.toml`, which must build a binary.
#[allow(dead_code)]
pub fn plan_and_build(dir: &Path, members: &[&str]) {
    let plan = fmerge_command(dir, &["plan"]);
    assert!(plan.ok, "fmerge plan failed:\n{}", plan.stderr);
    let toml = std::fs::read_to_string(dir.join("plan/plan.toml")).unwrap();
    for name in members {
        assert!(
            toml.contains(&format!("\"{name}\"")),
            "{name} not in the plan:\n{toml}"
        );
    }
    let built = fmerge_in(dir, &["--plan", "plan/plan.toml"]);
    assert!(built.ok, "fmerge build --plan failed:\n{}", built.stderr);
    let binary = built
        .stdout
        .lines()
        .find(|l| l.ends_with("-merged"))
        .unwrap_or_default();
    assert!(Path::new(binary).is_file(), "{}", built.stdout);
}
