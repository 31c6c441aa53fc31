//! Functions from separate cargo projects, merged through a stack file
//! (`-f`): fmerge builds them in a workspace of its own, and each must build
//! there exactly as in its own folder. glue-front (fixtures/glue) compiles C
//! glue from a path relative to its crate in its build script, reads a file
//! there, and includes files by `CARGO_MANIFEST_DIR` and by a path relative
//! to its source; glue-back is a second project.
//!
//! Run: `cargo test --release -p fmerge --test projects`

#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use std::path::Path;
use support::*;

/// What glue-front answers to "abc": the banner (CARGO_MANIFEST_DIR), the C
/// byte sum times the build script's scale (97+98+99 = 294, times 10),
/// glue-back's reply and the tail (include_str! by a relative path).
const REPLY: &str = "glue says sum=2940 back=ABC and hello";

/// The glue fixture: two projects, each with this repo's lock file.
fn projects() -> tempfile::TempDir {
    let dir = fixture("glue", &[]);
    for project in ["glue-front", "glue-back"] {
        std::fs::copy(
            dir.path().join("Cargo.lock"),
            dir.path().join(project).join("Cargo.lock"),
        )
        .unwrap();
    }
    dir
}

/// Runs the merged `binary` as glue-front and checks its reply.
fn answers(binary: &Path) {
    let merged = Function::start(
        binary,
        "glue-front",
        free_port(),
        Vec::<(&str, &str)>::new(),
    );
    assert_eq!(
        post(&format!("{}/", merged.url()), "abc"),
        HttpReply::new(200, REPLY),
        "{}",
        merged.output()
    );
}

#[test]
fn functions_of_separate_projects_build_as_in_their_own_folder() {
    let dir = projects();
    let BuiltBinary { binary, .. } =
        merged(dir.path(), &["-f", "stack.yml", "glue-front", "glue-back"]);
    answers(&binary);
}

#[test]
fn the_graph_of_a_stack_with_c_glue_is_read() {
    let dir = projects();
    let out = dir.path().join("graph");
    let Ran { ok, stderr, .. } = fmerge_command(
        dir.path(),
        &["graph", "-f", "stack.yml", "--out", out.to_str().unwrap()],
    );
    assert!(ok, "{stderr}");
    let graph = fmerge::graph::Graph::load(&out.join("calls.json")).unwrap();
    let edges: Vec<(String, Option<String>)> = graph
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    assert_eq!(
        edges,
        [("glue-front".to_string(), Some("glue-back".to_string()))]
    );
}

#[test]
fn a_plan_over_a_stack_with_c_glue_builds() {
    let dir = projects();
    std::fs::write(
        dir.path().join("plan.toml"),
        "stack = \"stack.yml\"\n\n[[group]]\ncaller = \"glue-front\"\ncallees = [\"glue-back\"]\nname = \"glue-merged\"\n",
    )
    .unwrap();
    // One group: the last line is its binary.
    let BuiltBinary { binary, .. } = merged(dir.path(), &["--plan", "plan.toml", "--force"]);
    assert_eq!(
        binary,
        target_dir().join("fmerge/glue-merged").join("glue-merged")
    );
    answers(&binary);
}
