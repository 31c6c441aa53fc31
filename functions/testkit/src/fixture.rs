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
/// `Cargo.lock` of its own, made from this repo's plus those crates (at
/// this repo's versions: merger/cargo/tests/testkit.rs).
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
