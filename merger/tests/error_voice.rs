//! fmerge's one error voice: a message is its cause, then a line
//! `fix: <the fix>` (the top-level renderer prints `error: <cause chain>` and
//! then that line). Two checks: refusals that need no build, each walked
//! through its library call, say a cause and then exactly one fix; and a scan
//! of the source for the older forms (`Fix:`, `…; fix: …`).
//!
//! Run: `cargo test --release -p fmerge --test error_voice`

use anyhow::Error;
use fmerge_ship::image::{context, reference::ImageRef};
use fmerge_ship::stack_out::{self, StackSpec};
use std::path::{Path, PathBuf};

/// Asserts that `e`'s chain holds exactly one `fix: …` line, as the last line
/// of a message that begins with its cause.
fn cause_then_one_fix(case: &str, e: &Error) {
    let mut fixes = 0;
    for link in e.chain() {
        let text = link.to_string();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.starts_with("fix: ") {
                continue;
            }
            fixes += 1;
            assert!(
                i > 0 && !lines[0].trim().is_empty(),
                "{case}: the fix comes after a cause:\n{e:#}"
            );
            assert_eq!(
                i,
                lines.len() - 1,
                "{case}: the fix is the last line of its message:\n{e:#}"
            );
            assert!(line.len() > "fix: ".len(), "{case}: an empty fix:\n{e:#}");
        }
    }
    assert_eq!(fixes, 1, "{case}: one `fix:` line in the chain:\n{e:?}");
    assert!(
        !format!("{e:#}").contains(concat!("Fi", "x:")),
        "{case}: {e:#}"
    );
}

fn error_of<T>(case: &str, result: anyhow::Result<T>) -> Error {
    match result {
        Ok(_) => panic!("{case}: expected a refusal"),
        Err(e) => e,
    }
}

#[test]
fn each_refusal_that_needs_no_build_says_its_cause_then_one_fix() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let members = || vec!["caller".to_string(), "callee".to_string()];
    let no_functions = write("no-functions.yml", "provider: {name: openfaas}\n");
    let two = write(
        "stack.yml",
        "provider: {name: openfaas}\nfunctions:\n  a: {handler: ./a}\n  b: {}\n",
    );
    let cases: Vec<(&str, Error)> = vec![
        (
            "a gateway that is not a URL",
            error_of(
                "gateway",
                stack_out::validate(&StackSpec {
                    gateway: "gw.local".into(),
                    ..StackSpec::new(members(), "127.0.0.1:5000/pair:v1")
                }),
            ),
        ),
        (
            "no member to deploy",
            error_of(
                "members",
                stack_out::validate(&StackSpec::new(Vec::new(), "127.0.0.1:5000/pair:v1")),
            ),
        ),
        (
            "a function name that is not a DNS label",
            error_of(
                "name",
                fmerge_ship::names::validate_function_name("Pair_Of_Functions"),
            ),
        ),
        (
            "an image reference in capitals",
            error_of("reference", ImageRef::parse("Alice/Pair:v1")),
        ),
        (
            "a push to Docker Hub's library namespace",
            error_of(
                "library",
                ImageRef::parse("pair:v1").and_then(|r| r.check_pushable()),
            ),
        ),
        (
            "an image variable that looks secret",
            error_of("secret", context::validate_env("API_TOKEN", "x")),
        ),
        (
            "a malformed --rewrite",
            error_of(
                "rewrite",
                fmerge_ir::passes::endpoints::Rewrite::parse("redis:6379", &members()),
            ),
        ),
        (
            "a --metrics file that is not a scrape",
            error_of(
                "metrics",
                fmerge::graph::traffic::parse_prometheus("hello world\n", "m.txt"),
            ),
        ),
        (
            "--metrics given three times",
            error_of(
                "three scrapes",
                fmerge::graph::traffic::prometheus(&["a".into(), "b".into(), "c".into()]),
            ),
        ),
        (
            "an access log with no gateway request",
            error_of(
                "access log",
                fmerge::graph::access_log::parse("GET / HTTP/1.1\n", "access.log"),
            ),
        ),
        (
            "a call log line that is not a record",
            error_of(
                "call log",
                fmerge::graph::call_log::parse("p1 a b\n", "calls.txt"),
            ),
        ),
        (
            "a merge without a callee",
            error_of("no callee", fmerge_cargo::resolve::run(None, "caller", &[])),
        ),
        (
            "a stack file without functions",
            error_of(
                "no functions",
                fmerge_ship::stack_in::StackIn::load(&no_functions),
            ),
        ),
        (
            "a stack file that is not there",
            error_of(
                "no stack file",
                fmerge_ship::stack_in::StackIn::load(Path::new("/nonexistent/stack.yml")),
            ),
        ),
        (
            "a function the stack file does not have",
            error_of(
                "unknown function",
                fmerge_ship::stack_in::StackIn::load(&two).and_then(|s| s.entry("nope")),
            ),
        ),
        (
            "a function without a handler folder",
            error_of(
                "no handler",
                fmerge_ship::stack_in::StackIn::load(&two).and_then(|s| s.entry("b")),
            ),
        ),
    ];
    for (case, e) in &cases {
        cause_then_one_fix(case, e);
    }
}

/// Each `.rs` file under `dir`, skipping build output.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A source scan, not a check of what fmerge prints: in every Rust file of
/// merger/ and of the runtime, outside comments, a `fix: ` starts its own line
/// (after a `\n`, at the start of a literal, or first on a continuation
/// line), and the capitalised `Fix:` of the older voice appears nowhere.
#[test]
fn no_source_file_writes_a_fix_in_an_older_form() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    sources(&root.join("merger"), &mut files);
    sources(&root.join("functions/runtime/src"), &mut files);
    let old = concat!("Fi", "x:");
    let fix = concat!("fi", "x: ");
    let mut found = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let inline = line.match_indices(fix).any(|(at, _)| {
                let before = &line[..at];
                let own_line =
                    before.trim().is_empty() || before.ends_with("\\n") || before.ends_with('"');
                let in_a_word = before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
                let a_parameter = line[at + fix.len()..].starts_with('&');
                !own_line && !in_a_word && !a_parameter
            });
            if line.contains(old) || inline {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "write the fix on its own line (`<cause>\\nfix: <the fix>`):\n{}",
        found.join("\n")
    );
}
