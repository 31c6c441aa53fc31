//! Fixture workspaces (`merger/tests/fixtures/<name>`), instantiated in a
//! temp dir so that each test has its own.

use crate::workspace_root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Copies the fixture workspace `merger/tests/fixtures/<name>` to a temp
/// dir, replacing `@RUNTIME@` with the path of this repo's runtime and each
/// `(pattern, value)`, and gives it this repo's lock file, so that it builds
/// with the same dependency versions into the shared target dir. A fixture
/// that needs crates this repo does not use (`watchdog`: curl) keeps a
/// `Cargo.lock` of its own, made from this repo's plus those crates (the
/// test below keeps the crates they share at this repo's versions).
pub fn fixture(name: &str, replace: &[(&str, &str)]) -> tempfile::TempDir {
    let src = workspace_root().join("merger/tests/fixtures").join(name);
    let dir = tempfile::Builder::new()
        .prefix(&format!("fmerge-{name}-"))
        .tempdir()
        .expect("temp dir");
    let runtime = workspace_root().join("functions/runtime");
    for entry in walk(&src) {
        let dest = dir.path().join(entry.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let mut text = std::fs::read_to_string(&entry)
            .unwrap()
            .replace("@RUNTIME@", runtime.to_str().unwrap());
        for (pattern, value) in replace {
            text = text.replace(pattern, value);
        }
        std::fs::write(dest, text).unwrap();
    }
    if !src.join("Cargo.lock").is_file() {
        std::fs::copy(
            workspace_root().join("Cargo.lock"),
            dir.path().join("Cargo.lock"),
        )
        .unwrap();
    }
    dir
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path))
        } else {
            files.push(path)
        }
    }
    files
}

/// The SHA-256 of a file, as hex.
pub fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Each `(name, version)` a `Cargo.lock` locks.
#[cfg(test)]
fn locked(lock: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(lock).unwrap();
    let mut packages = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            packages.push((n, v.trim_matches('"').to_string()));
        }
    }
    packages
}

/// A version's semver-compatible series: `1` for 1.5.0, `0.2` for 0.2.12.
#[cfg(test)]
fn series(version: &str) -> String {
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some("0"), Some(minor)) => format!("0.{minor}"),
        (Some(major), _) => major.to_string(),
        _ => version.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture's own lock that locks a crate of this repo's at another
    /// compatible version builds that crate and everything above it again
    /// in the shared target dir (bytes: tokio, hyper, …): CI time, not
    /// coverage. Another semver series (http 0.2 beside 1) is another
    /// crate to cargo, compiled either way.
    #[test]
    fn fixture_locks_keep_the_repo_lock_versions() {
        let repo = locked(&workspace_root().join("Cargo.lock"));
        let fixtures = workspace_root().join("merger/tests/fixtures");
        let mut drifted = Vec::new();
        let mut own = 0;
        for entry in std::fs::read_dir(&fixtures).unwrap().flatten() {
            let lock = entry.path().join("Cargo.lock");
            if !lock.is_file() {
                continue;
            }
            own += 1;
            for (name, version) in locked(&lock) {
                let versions: Vec<&str> = repo
                    .iter()
                    .filter(|(n, v)| *n == name && series(v) == series(&version))
                    .map(|(_, v)| v.as_str())
                    .collect();
                if !versions.is_empty() && !versions.contains(&version.as_str()) {
                    drifted.push(format!(
                        "{}: {name} {version} (this repo: {})",
                        entry.file_name().to_string_lossy(),
                        versions.join(", ")
                    ));
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
}
