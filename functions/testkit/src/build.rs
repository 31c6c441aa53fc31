//! The socialNetwork functions of this workspace, built once per test
//! process with the merger's flags, and the binaries of fmerge's own builds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The function crates of the workspace, in call-tree order (the root first).
pub const FUNCTIONS: &[&str] = &[
    "compose-post",
    "unique-id",
    "text-service",
    "url-shorten",
    "user-mention",
    "store-post",
    "write-home-timeline",
    "social-graph-get-followers",
];

/// The target every function is built for.
pub const TARGET: &str = "x86_64-unknown-linux-gnu";

/// RUSTFLAGS for building the functions. They MUST equal the merger's: the
/// merger builds into the same target dir ([`build_dir`]), so with the same
/// flags the functions compile once and both share them; with different
/// flags each build would invalidate the other's.
pub const FUNCTION_RUSTFLAGS: &str = "--emit=llvm-bc,link";

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    // This crate is functions/testkit.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("functions/testkit is two levels down")
        .to_path_buf()
}

/// `CARGO_TARGET_DIR` of the function builds: `<workspace>/target/fmerge/build`.
pub fn build_dir() -> PathBuf {
    workspace_root().join("target/fmerge/build")
}

/// Builds every crate of [`FUNCTIONS`] (unmerged, release, [`TARGET`],
/// [`FUNCTION_RUSTFLAGS`]) once per test process, and returns the directory
/// that holds the binaries. Panics with cargo's output if the build fails.
pub fn function_binaries() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace_root())
            .args(["build", "--release", "--target", TARGET])
            .env("CARGO_TARGET_DIR", build_dir())
            .env("RUSTFLAGS", FUNCTION_RUSTFLAGS)
            // It would take precedence over RUSTFLAGS.
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS");
        for f in FUNCTIONS {
            cmd.args(["-p", f]);
        }
        let out = cmd
            .output()
            .expect("cannot run cargo to build the functions");
        if !out.status.success() {
            panic!(
                "building the functions failed ({:?}):\n{}",
                cmd,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        build_dir().join(TARGET).join("release")
    })
}

/// The unmerged binary of function `name` (built on first use).
pub fn function_binary(name: &str) -> PathBuf {
    let path = function_binaries().join(name);
    assert!(
        path.is_file(),
        "no binary {} after the build",
        path.display()
    );
    path
}

/// The unmerged binary `bin` from fmerge's own build (the same build as a
/// merge, so its units are the ones merged).
pub fn built_binary(bin: &str) -> PathBuf {
    let path = build_dir().join(TARGET).join("release").join(bin);
    assert!(
        path.is_file(),
        "no binary {} after the merge's build",
        path.display()
    );
    path
}
