//! `fmerge template`: the faas-cli template `rust-fmerge` builds a function
//! with the real faas-cli's build context alone (no fmerge checkout, no
//! network), and a second install keeps the first unless `--overwrite`.
//!
//! faas-cli comes from `$FAAS_CLI` or PATH, as in openfaas.rs: without it
//! the faas-cli test says it was skipped, except under
//! FMERGE_REQUIRE_TOOLS=1, where that fails. No image can be built on
//! the test machine (no base image), so the context is built with cargo,
//! laid out as the template's Dockerfile lays it out.
//!
//! Run: `cargo test --release -p fmerge --test template`

#[path = "support/faas.rs"]
mod faas;
mod support;

use faas::{faas, faas_cli};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{Ran, assert_says, fmerge_cli, workspace_root};

#[test]
fn faas_cli_builds_a_template_function_from_its_build_context_alone_offline() {
    let Some(cli) = faas_cli() else { return };
    let dir = tempfile::tempdir().unwrap();
    let Ran { ok, stderr, .. } = fmerge_cli(dir.path(), &["template"]);
    assert!(ok, "{stderr}");
    faas(
        &cli,
        dir.path(),
        &["new", "--lang", "rust-fmerge", "hello", "--quiet"],
    );
    // This repo's versions, so the build shares the compiled dependencies.
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        dir.path().join("hello/Cargo.lock"),
    )
    .unwrap();
    faas(
        &cli,
        dir.path(),
        &["build", "--shrinkwrap", "-f", "stack.yaml"],
    );

    // The context alone, in a folder of its own.
    let fresh = tempfile::tempdir().unwrap();
    let context = fresh.path().join("context");
    copy_tree(&dir.path().join("build/hello"), &context);
    let checkout = workspace_root().display().to_string();
    for folder in [
        &context,
        &dir.path().join("template"),
        &dir.path().join("hello"),
    ] {
        for file in files_in(folder) {
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            assert!(
                !text.contains(&checkout),
                "{} names the fmerge checkout {checkout}",
                file.display()
            );
        }
    }

    let root = fresh.path().join("root");
    let workdir = lay_out(&context, &root);
    let binary = support::build_dir()
        .join(support::TARGET)
        .join("release/handler");
    let _ = std::fs::remove_file(&binary);
    // A context that does not build fails here, with cargo's stderr.
    let cargo = fmerge_testkit::run_ok(
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(&workdir)
            .args([
                "build",
                "--release",
                "--offline",
                "--target",
                support::TARGET,
            ])
            .env("CARGO_TARGET_DIR", support::build_dir())
            .env("RUSTFLAGS", support::FUNCTION_RUSTFLAGS)
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS"),
    );
    assert!(
        binary.is_file(),
        "cargo built no {}:\n{}",
        binary.display(),
        String::from_utf8_lossy(&cargo.stderr)
    );
}

#[test]
fn a_second_template_is_refused_without_overwrite_and_replaced_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let Ran { ok, stdout, stderr } = fmerge_cli(dir.path(), &["template"]);
    assert!(ok, "{stderr}");
    let installed = PathBuf::from(stdout.trim());
    let yml = installed.join("template.yml");
    let ours = std::fs::read_to_string(&yml).unwrap();
    std::fs::write(&yml, "language: rust-fmerge\n# mine\n").unwrap();

    let Ran { ok, stderr, .. } = fmerge_cli(dir.path(), &["template"]);
    assert!(!ok, "a second install must be refused:\n{stderr}");
    assert_says(
        &stderr,
        &[
            "error: ",
            "already holds a rust-fmerge template",
            "\nfix: pass --overwrite",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(&yml).unwrap(),
        "language: rust-fmerge\n# mine\n",
        "the first template is untouched"
    );

    let Ran { ok, stderr, .. } = fmerge_cli(dir.path(), &["template", "--overwrite"]);
    assert!(ok, "{stderr}");
    assert_eq!(std::fs::read_to_string(&yml).unwrap(), ours);
    assert!(installed.join("vendor/fmerge-runtime/src/lib.rs").is_file());
}

/// Lays `context` out under `root` as the build stage of its Dockerfile
/// does (its WORKDIR and COPY lines before the first RUN, container paths
/// under `root`); returns the WORKDIR the build runs in.
fn lay_out(context: &Path, root: &Path) -> PathBuf {
    let dockerfile = std::fs::read_to_string(context.join("Dockerfile")).unwrap();
    let mut workdir = root.to_path_buf();
    let instructions = dockerfile
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .skip_while(|l| !l.starts_with("FROM "))
        .skip(1)
        .take_while(|l| !l.starts_with("RUN "));
    for line in instructions {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = |p: &str| match p.strip_prefix('/') {
            Some(abs) => root.join(abs),
            None => workdir.join(p),
        };
        match words[..] {
            ["WORKDIR", path] => workdir = at(path),
            ["COPY", from, to] => copy_tree(&context.join(from), &at(to)),
            _ => panic!("the test lays out only WORKDIR and COPY <from> <to>: {line}"),
        }
    }
    workdir
}

/// Copies the folder `from` into `to` (created), as `cp -a from/. to` does.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

fn files_in(folder: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_in(&path));
        } else {
            out.push(path);
        }
    }
    out
}
