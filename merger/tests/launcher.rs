//! The launcher `fmerge`: it runs `fmerge-llvm` with the libLLVM of the
//! rustc it runs with (`$RUSTC`, else `rustc` on PATH), or says which rustc
//! and LLVM fmerge was built with, which it found, and the command that
//! rebuilds it (exit 1, never the loader's 127); `--version` names both.
//! The other rustc is a script that prints another version and sysroot.
//!
//! Run: `cargo test --release -p fmerge --test launcher`

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `rustc -vV` of the toolchain the tests (and fmerge) were built with.
fn real_rustc() -> String {
    let out = Command::new("rustc").arg("-vV").output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn field(verbose: &str, key: &str) -> String {
    verbose
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
        .unwrap()
        .to_string()
}

/// A `rustc` script in `dir/bin` whose sysroot is `dir/sysroot` and whose
/// `-vV` is `verbose`; returns it.
fn fake_rustc(dir: &Path, verbose: &str) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(dir.join("sysroot/lib")).unwrap();
    let script = bin.join("rustc");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  '--print sysroot') echo '{}' ;;\n  '-vV') printf '%s\\n' '{}' ;;\n  *) exit 1 ;;\nesac\n",
            dir.join("sysroot").display(),
            verbose.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// The installed-like `fmerge` in `cwd` with `env` set, and neither RUSTC
/// nor a library path inherited.
fn fmerge(cwd: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fmerge"))
        .current_dir(cwd)
        .args(args)
        .env_remove("RUSTC")
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut path = bin.as_os_str().to_owned();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

#[test]
fn a_rustc_without_fmerges_llvm_is_refused_naming_both_and_the_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let other = "rustc 9.9.0 (0123456789 2099-01-01)\nbinary: rustc\ncommit-hash: 0123456789abcdef\nhost: x86_64-unknown-linux-gnu\nrelease: 9.9.0\nLLVM version: 99.1.0";
    let script = fake_rustc(dir.path(), other);
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let out = fmerge(
        &project,
        &["template"],
        &[("PATH", &path_with(script.parent().unwrap()))],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let built = real_rustc();
    for needle in [
        format!(
            "error: fmerge was built with rustc {} (LLVM {})",
            field(&built, "release"),
            field(&built, "LLVM version")
        ),
        "is rustc 9.9.0 (LLVM 99.1.0)".into(),
        format!("{}/sysroot/lib", dir.path().display()),
        "\nfix: rebuild fmerge with this rustc: cargo install --path ".into(),
        "/merger --locked --force".into(),
    ] {
        assert!(
            stderr.contains(&needle),
            "expected {needle:?} in:\n{stderr}"
        );
    }
    assert!(!project.join("template").exists(), "nothing ran");
}

#[test]
fn version_names_the_rustc_and_llvm_fmerge_was_built_with() {
    let built = real_rustc();
    let (release, llvm) = (field(&built, "release"), field(&built, "LLVM version"));
    let dir = tempfile::tempdir().unwrap();
    // Answered by the launcher, so even a rustc that has no libLLVM for it
    // leaves --version working.
    let script = fake_rustc(
        dir.path(),
        "rustc 9.9.0\nrelease: 9.9.0\nLLVM version: 99.1.0",
    );
    let path = path_with(script.parent().unwrap());
    let text = |args: &[&str]| {
        let out = fmerge(dir.path(), args, &[("PATH", &path)]);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let short = format!(
        "fmerge {} (rustc {release}, LLVM {llvm})\n",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(text(&["--version"]), short);
    assert_eq!(text(&["-V"]), short);
    let long = text(&["-vV"]);
    assert_eq!(text(&["--version", "--verbose"]), long);
    let first = built.lines().next().unwrap();
    for needle in [
        short.as_str(),
        &format!("\nrustc: {first}\n"),
        &format!("\ncommit-hash: {}\n", field(&built, "commit-hash")),
        &format!("\nLLVM version: {llvm}"),
    ] {
        assert!(long.contains(needle), "expected {needle:?} in:\n{long}");
    }
}

#[test]
fn fmerge_runs_with_the_llvm_of_the_sysroot_rustc_names_not_a_built_in_path() {
    let built = real_rustc();
    let dir = tempfile::tempdir().unwrap();
    let script = fake_rustc(dir.path(), &built);
    // The fake sysroot holds the toolchain's libLLVM, under its own name.
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let lib = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim()).join("lib");
    let llvm = std::fs::read_dir(&lib)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .find(|n| n.to_string_lossy().starts_with("libLLVM.so."))
        .expect("the toolchain's libLLVM");
    std::os::unix::fs::symlink(lib.join(&llvm), dir.path().join("sysroot/lib").join(&llvm))
        .unwrap();

    // fmerge-llvm names no toolchain folder: alone, the loader cannot start it.
    let alone = Command::new(env!("CARGO_BIN_EXE_fmerge-llvm"))
        .arg("--help")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(127), "{alone:?}");

    // Through the launcher, with RUSTC naming the fake: it runs.
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let out = fmerge(&project, &["template"], &[("RUSTC", script.as_os_str())]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(project.join("template/rust-fmerge/template.yml").is_file());
}
