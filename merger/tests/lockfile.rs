//! The planner checks a group on the build's own input when the build's
//! lock file is not the graph's. fixtures/lockfile holds two separate cargo
//! projects: lk-back (listed first, so the graph builds with its
//! Cargo.lock) and lk-front, which calls it and depends on the git crate
//! lk-hook. lk-hook's first commit exports `lk_hook`, as lk-back's lk-local
//! does; its second does not. lk-front's Cargo.lock pins the first commit,
//! so `fmerge build lk-front lk-back` refuses a symbol clash, while the
//! graph (lk-back's lock, no lk-hook in it: the branch's head) sees none.
//!
//! A lock file only pins registry and git crates: a path dependency is
//! whatever its folder holds, whatever the lock says. So lk-hook is a git
//! repository the test writes (file://, no network).
//!
//! Run: `cargo test --release -p fmerge --test lockfile`

#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use std::path::Path;
use std::process::Command;
use support::*;

fn run(dir: &Path, program: &str, args: &[&str]) {
    fmerge_testkit::run_ok(Command::new(program).current_dir(dir).args(args));
}

/// Commits lk-hook's version `v` (fixtures/lockfile/lk-hook/<v>) into `repo`.
fn commit(repo: &Path, v: &str) {
    let src = workspace_root()
        .join("merger/tests/fixtures/lockfile/lk-hook")
        .join(v);
    for file in ["Cargo.toml", "src/lib.rs"] {
        std::fs::create_dir_all(repo.join(file).parent().unwrap()).unwrap();
        std::fs::copy(src.join(file), repo.join(file)).unwrap();
    }
    run(repo, "git", &["add", "-A"]);
    run(
        repo,
        "git",
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            v,
        ],
    );
}

/// The fixture's projects, lk-hook's repository, and lk-front's lock file
/// pinning lk-hook's first commit (`old`) or its last.
fn projects(old: bool) -> (tempfile::TempDir, tempfile::TempDir) {
    let repo = tempfile::tempdir().unwrap();
    run(repo.path(), "git", &["init", "-q", "-b", "main"]);
    commit(repo.path(), "v1");
    if !old {
        commit(repo.path(), "v2");
    }
    let url = format!("file://{}", repo.path().display());
    let dir = fixture("lockfile", &[("@LKHOOK@", &url)]);
    for project in ["lk-front", "lk-back"] {
        std::fs::copy(
            dir.path().join("Cargo.lock"),
            dir.path().join(project).join("Cargo.lock"),
        )
        .unwrap();
    }
    // lk-front's own lock takes lk-hook's head at this point.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(
        &dir.path().join("lk-front"),
        &cargo,
        &["metadata", "--format-version", "1"],
    );
    if old {
        commit(repo.path(), "v2");
    }
    (repo, dir)
}

/// The plan.json that `fmerge plan` wrote into `<dir>/plan`.
fn plan_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("plan/plan.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_group_the_callers_lock_file_refuses_is_not_proposed() {
    let (_repo, dir) = projects(true);
    // The graph's verdict alone proposes the group.
    let Planned { stdout, groups } = plan_stack(dir.path(), &["--no-dry-run", "--out", "trusting"]);
    assert_eq!(groups.len(), 1, "{stdout}");
    assert_eq!(groups[0].caller.as_deref(), Some("lk-front"));
    assert_eq!(groups[0].merge.callees, ["lk-back"]);
    assert!(!stdout.contains("dry run"), "{stdout}");

    // The dry run builds it as `fmerge build` would, and the build refuses.
    let Planned { stdout, groups } = plan_stack(dir.path(), &["--out", "plan"]);
    assert!(groups.is_empty(), "{stdout}");
    let clash =
        "symbol clash: crates lk_hook and lk_local both define the exported symbol `lk_hook`";
    assert_says(
        &stdout,
        &[
            "dry run of `fmerge build` on lk-front, lk-back (the caller's Cargo.lock: ",
            "lk-front/Cargo.lock; the graph's: ",
            "lk-back/Cargo.lock): refused; kept apart:",
            &format!("  lk-front and lk-back: {clash}."),
            "lk-back stays remote from lk-front",
        ],
    );
    let json = plan_json(dir.path());
    let checked = &json["dry_run"][0];
    assert_eq!(checked["caller"], "lk-front");
    assert!(
        checked["refused"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with(clash),
        "{json}"
    );

    // And `fmerge build` of that group says the same.
    let Ran { ok, stderr, .. } =
        fmerge(dir.path(), &["-f", "stack.yml", "lk-front", "lk-back"], &[]);
    assert!(!ok && stderr.contains(clash), "{stderr}");

    // So does `fmerge build --plan`, with lk-back's group (lk-back's lock,
    // which merges) first: each group is built with its caller's lock.
    std::fs::write(
        dir.path().join("both.toml"),
        "stack = \"stack.yml\"\n\n\
         [[group]]\ncaller = \"lk-back\"\ncallees = [\"lk-front\"]\nname = \"lk-back-merged\"\n\n\
         [[group]]\ncaller = \"lk-front\"\ncallees = [\"lk-back\"]\nname = \"lk-front-merged\"\n",
    )
    .unwrap();
    let Ran { ok, stderr, .. } = fmerge(dir.path(), &["--plan", "both.toml", "--force"], &[]);
    assert!(!ok && stderr.contains(clash), "{stderr}");
}

#[test]
fn a_group_the_build_merges_is_checked_and_kept() {
    // lk-front's lock pins lk-hook's head, which the graph takes too: its
    // lock file is still another, so the group is built, and merges.
    let (_repo, dir) = projects(false);
    let Planned { stdout, groups } = plan_stack(dir.path(), &["--out", "plan"]);
    assert_says(
        &stdout,
        &[
            "dry run of `fmerge build` on lk-front, lk-back (the caller's Cargo.lock: ",
            "): it merges them",
        ],
    );
    assert_eq!(groups.len(), 1, "{stdout}");
    assert_eq!(groups[0].merge.callees, ["lk-back"]);
    let json = plan_json(dir.path());
    assert_eq!(
        json["dry_run"][0]["refused"],
        serde_json::json!([]),
        "{json}"
    );
}
