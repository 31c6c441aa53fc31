//! The reuse path (`--lto off`, the default without `profile.release.lto`):
//! a merge links the objects cargo compiled for every crate no pass changed
//! and compiles from IR only the rest, each to an object kept under its
//! content, so a re-merge after an edit compiles only the edited crate.
//!
//! Run: `cargo test --release -p fmerge --test reuse` (no services: the
//! merged callee answers in-process, and `GATEWAY_URL` is a closed port).

mod support;

use std::path::Path;
use support::merge_in as merge;
use support::{Function, fixture, free_port, post};

/// `N` in `… — N <what>` of the stage line that holds `stage` in `stderr`.
fn count(stderr: &str, stage: &str, what: &str) -> usize {
    let line = stderr
        .lines()
        .find(|l| l.contains(stage) && l.contains(what))
        .unwrap_or_else(|| panic!("no `{stage}` line with `{what}` in:\n{stderr}"));
    let before = &line[..line
        .find(what)
        .unwrap_or_else(|| panic!("no `{what}` in {line}"))];
    let number = before.trim_end().rsplit([' ', '(']).next().unwrap();
    number
        .parse()
        .unwrap_or_else(|_| panic!("no count before `{what}` in {line}"))
}

/// The merged `dyn-front` answers `body` with what `dyn-back` makes of it,
/// twice, in-process (a gateway call would meet the closed port).
fn ask(binary: &Path, body: &str) -> (u16, String) {
    let closed = [("GATEWAY_URL", "http://127.0.0.1:9")];
    let front = Function::start(binary, "dyn-front", free_port(), closed);
    post(&format!("{}/", front.url()), body)
}

#[test]
fn a_merge_links_cargo_s_objects_and_compiles_only_the_callee_and_the_table() {
    let ws = fixture("dynamic", &[]);
    let (binary, stderr) = merge(
        ws.path(),
        &["dyn-front", "dyn-back"],
        &["--name", "reused", "--force"],
    );
    let units = count(&stderr, "linking IR", "units");
    let from_ir = count(
        &stderr,
        "compiling what the merge changed",
        "object(s) from IR",
    );
    let reused = count(
        &stderr,
        "compiling what the merge changed",
        "crate(s) linked",
    );
    // The callee's bin (its `main` goes) and the table; the caller's bin and
    // every library are cargo's.
    assert_eq!(from_ir, 2, "{stderr}");
    assert_eq!(reused, units - 1, "{stderr}");
    assert!(
        stderr.contains("dyn_back (a pass changed it)")
            && stderr.contains("the dispatch table (the merge fills it)"),
        "{stderr}"
    );
    assert_eq!(ask(&binary, "dyn-back"), (200, "dyn-back".to_string()));
}

#[test]
fn a_re_merge_after_an_edit_compiles_only_the_edited_function() {
    let ws = fixture("dynamic", &[]);
    // A name of its own: merges of one name share a work dir.
    let name = ["--name", "re-merged"];
    merge(ws.path(), &["dyn-front", "dyn-back"], &name);
    // A literal no earlier run compiled, so the cache cannot hold its object.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let main = ws.path().join("dyn-back/src/main.rs");
    let source = std::fs::read_to_string(&main).unwrap();
    let edited = source.replace(
        "Ok(body.to_vec())",
        &format!("Ok([b\"{nanos}:\".as_slice(), &body].concat())"),
    );
    assert_ne!(source, edited);
    std::fs::write(&main, edited).unwrap();

    let (binary, stderr) = merge(ws.path(), &["dyn-front", "dyn-back"], &name);
    assert!(
        stderr.contains("2 object(s) from IR (1 compiled, 1 cached)"),
        "only the edited bin compiles; the table comes from the cache: {stderr}"
    );
    assert_eq!(
        ask(&binary, "dyn-back"),
        (200, format!("{nanos}:{nanos}:dyn-back")),
        "the edit is in the binary"
    );
}
