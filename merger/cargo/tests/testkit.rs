//! testkit builds the unmerged functions into the target dir the merge builds
//! in; with other flags each build would invalidate the other's units.

#[test]
fn testkit_builds_the_functions_with_the_merge_flags() {
    assert_eq!(
        fmerge_testkit::FUNCTION_RUSTFLAGS,
        fmerge_cargo::emit::RUSTFLAGS
    );
}

/// A version's semver-compatible series: `1` for 1.5.0, `0.2` for 0.2.12.
fn series(version: &str) -> String {
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some("0"), Some(minor)) => format!("0.{minor}"),
        (Some(major), _) => major.to_string(),
        _ => version.to_string(),
    }
}

/// A fixture's own lock (`fmerge_testkit::fixture`) that locks a crate of
/// this repo's at another compatible version builds that crate and
/// everything above it again in the shared target dir (bytes: tokio,
/// hyper, …): CI time, not coverage. Another semver series (http 0.2
/// beside 1) is another crate to cargo, compiled either way.
#[test]
fn fixture_locks_keep_the_repo_lock_versions() {
    use fmerge_cargo::workspace::lock_versions;
    let root = fmerge_testkit::workspace_root();
    let repo = lock_versions(&root.join("Cargo.lock"));
    assert!(
        !repo.is_empty(),
        "cannot read {:?}",
        root.join("Cargo.lock")
    );
    let fixtures = root.join("merger/tests/fixtures");
    let mut drifted = Vec::new();
    let mut own = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap().flatten() {
        let lock = entry.path().join("Cargo.lock");
        if !lock.is_file() {
            continue;
        }
        own += 1;
        let locked = lock_versions(&lock);
        assert!(!locked.is_empty(), "cannot read {lock:?}");
        for (name, versions) in locked {
            for version in versions {
                let ours: Vec<&str> = repo
                    .get(&name)
                    .into_iter()
                    .flatten()
                    .filter(|v| series(v) == series(&version))
                    .map(String::as_str)
                    .collect();
                if !ours.is_empty() && !ours.contains(&version.as_str()) {
                    drifted.push(format!(
                        "{}: {name} {version} (this repo: {})",
                        entry.file_name().to_string_lossy(),
                        ours.join(", ")
                    ));
                }
            }
        }
    }
    assert!(
        own > 0,
        "no fixture keeps a Cargo.lock of its own under {fixtures:?}"
    );
    assert!(
        drifted.is_empty(),
        "fixture locks drifted from this repo's Cargo.lock:\n{}\nfix: copy this repo's Cargo.lock over the fixture's and run `cargo metadata` there",
        drifted.join("\n")
    );
}
