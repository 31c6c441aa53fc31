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
    let args: Vec<&str> = std::iter::once("build")
        .chain(args.iter().copied())
        .chain(["--target-dir", target.to_str().unwrap()])
        .collect();
    fmerge_cli_with(dir, &args, env)
}

/// Any `fmerge` command (`fmerge template`, say) in `dir`.
#[allow(dead_code)] // each test binary compiles this module; only some run other commands
pub fn fmerge_cli(dir: &Path, args: &[&str]) -> (bool, String, String) {
    fmerge_cli_with(dir, args, &[])
}

fn fmerge_cli_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fmerge"))
        .current_dir(dir)
        .args(args)
        // The binary must find rustc's libLLVM by itself, as it does installed.
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().copied())
        .output()
        .expect("run fmerge");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}
