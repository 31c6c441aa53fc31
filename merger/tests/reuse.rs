//! The reuse path (`--lto off`, the default without `profile.release.lto`):
//! a merge links the objects cargo compiled for every crate no pass changed
//! and compiles from IR only the rest, each to an object kept under its
//! content, so a re-merge after an edit compiles only the edited crate.
//! With `--lto own`, the group's own crates compile as one module instead.
//!
//! Run: `cargo test --release -p fmerge --test reuse` (no services: the
//! merged callee answers in-process, and `GATEWAY_URL` is a closed port).

mod support;

use std::path::Path;
use std::sync::Mutex;
use support::merge_in as merge;
use support::{BuiltBinary, Function, HttpReply, fixture, free_port, post};

/// Held by each test: the fixture's copies build the same units into one
/// target dir, and one test edits them.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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
fn ask(binary: &Path, body: &str) -> HttpReply {
    let closed = [("GATEWAY_URL", "http://127.0.0.1:9")];
    let front = Function::start(binary, "dyn-front", free_port(), closed);
    post(&format!("{}/", front.url()), body)
}

/// Merges the `dynamic` fixture in `ws` with `extra`; with stderr, the
/// units read, the objects compiled from IR and the crates linked from
/// cargo's objects.
fn merge_counted(ws: &Path, extra: &[&str]) -> (std::path::PathBuf, String, [usize; 3]) {
    let BuiltBinary { binary, stderr } = merge(ws, &["dyn-front", "dyn-back"], extra);
    let stage = "compiling what the merge changed";
    let counts = [
        count(&stderr, "reading IR", "units"),
        count(&stderr, stage, "object(s) from IR"),
        count(&stderr, stage, "crate(s) linked"),
    ];
    (binary, stderr, counts)
}

#[test]
fn a_merge_links_cargo_s_objects_and_compiles_only_the_table() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let ws = fixture("dynamic", &[]);
    let (binary, stderr, [units, from_ir, reused]) =
        merge_counted(ws.path(), &["--name", "reused", "--force"]);
    // Both bins and every library are cargo's (the callee's with its `main`
    // made weak); only the table compiles.
    assert_eq!((from_ir, reused), (1, units), "{stderr}");
    assert!(
        stderr.contains("compiled from IR: the dispatch table (the merge fills it)"),
        "{stderr}"
    );
    assert_eq!(ask(&binary, "dyn-back"), HttpReply::new(200, "dyn-back"));
}

#[test]
fn lto_own_compiles_the_group_s_own_crates_as_one_object() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let ws = fixture("dynamic", &[]);
    let (binary, stderr, [units, from_ir, reused]) =
        merge_counted(ws.path(), &["--name", "own", "--force", "--lto", "own"]);
    // The two bins, the runtime and the contract crate are the fixture's
    // path crates: one object with the table beside it; every registry
    // crate is cargo's.
    let own = ["dyn_front", "dyn_back", "fmerge_runtime", "fmerge_contract"];
    assert_eq!((from_ir, reused), (2, units - own.len()), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("compiled from IR:"))
        .unwrap_or_else(|| panic!("no `compiled from IR` line in {stderr}"));
    assert!(
        own.iter().all(|c| line.contains(c)) && line.contains("(as one module)"),
        "{line}"
    );
    assert_eq!(ask(&binary, "dyn-back"), HttpReply::new(200, "dyn-back"));
}

/// Replaces `from` with `to` in `package`'s main.rs in the fixture `ws`.
fn edit(ws: &Path, package: &str, from: &str, to: &str) {
    let main = ws.join(package).join("src/main.rs");
    let source = std::fs::read_to_string(&main).unwrap();
    assert!(source.contains(from), "{from} in {source}");
    std::fs::write(&main, source.replace(from, to)).unwrap();
}

#[test]
fn a_re_merge_after_an_edit_compiles_only_the_edited_function() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let ws = fixture("dynamic", &[]);
    // A name of its own: merges of one name share a work dir.
    let name = ["--name", "re-merged"];
    let merged = || merge(ws.path(), &["dyn-front", "dyn-back"], &name);
    // Literals no earlier run compiled, so the cache cannot hold them.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    // The callee reads a setting with std::env, which `env` rewrites: its
    // bin compiles from IR.
    let tagged = format!(
        "Ok([std::env::var(\"DYN_TAG\").unwrap_or_default().as_bytes(), b\"{nanos}:\", &body].concat())"
    );
    edit(ws.path(), "dyn-back", "Ok(body.to_vec())", &tagged);
    merged();

    edit(
        ws.path(),
        "dyn-back",
        &format!("{nanos}:"),
        &format!("{nanos}b:"),
    );
    let BuiltBinary { binary, stderr } = merged();
    assert!(
        stderr.contains("2 object(s) from IR (1 compiled, 1 cached)"),
        "only the edited callee compiles; the table comes from the cache: {stderr}"
    );
    // dyn-front calls dyn-back five times (the named call, then four more
    // ways of naming it), each adding the tag.
    let back = format!("{}dyn-back", format!("{nanos}b:").repeat(5));
    assert_eq!(ask(&binary, "dyn-back"), HttpReply::new(200, &back));

    // The caller's edit: cargo recompiles its bin, fmerge nothing.
    let front = format!("Ok([b\"F{nanos}:\".as_slice(), &fourth].concat())");
    edit(ws.path(), "dyn-front", "Ok(fourth.to_vec())", &front);
    let BuiltBinary { binary, stderr } = merged();
    assert!(
        stderr.contains("2 object(s) from IR (0 compiled, 2 cached)"),
        "the callee and the table come from the cache: {stderr}"
    );
    assert_eq!(
        ask(&binary, "dyn-back"),
        HttpReply::new(200, &format!("F{nanos}:{back}"))
    );
}
