//! What fmerge's integration tests share beyond the service harness
//! ([`fmerge_testkit`]: Redis, the nginx gateway, function processes,
//! fixtures): the one way to run `fmerge build`.
//!
//! Tests that need a registry or the Docker Engine add
//! `#[path = "support/registry.rs"] mod registry;`.

use std::path::Path;
use std::process::Command;

pub use fmerge_testkit::*;

/// `fmerge build ARGS` run in `dir` with `env` added (credentials, say),
/// building into this repo's target dir (so that dependencies compile once
/// for all tests); returns (success, stdout, stderr).
pub fn fmerge(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let target = workspace_root().join("target");
    let out = Command::new(env!("CARGO_BIN_EXE_fmerge"))
        .current_dir(dir)
        .arg("build")
        .args(args)
        .arg("--target-dir")
        .arg(&target)
        .envs(env.iter().copied())
        .output()
        .expect("run fmerge");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}
