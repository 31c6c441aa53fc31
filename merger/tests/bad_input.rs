//! Bad input to `fmerge build`: each case stops with an error that names the
//! cause and the fix, and leaves any earlier good binary where it was.
//!
//! Run: `cargo test --release -p fmerge --test bad_input`

mod support;

use fmerge::options::values::{Progress, RegistryAuth};
use std::path::PathBuf;
use std::process::Command;
use support::{
    Ran, fmerge_in, fmerge_in_repo as fmerge, refused_before_cargo, workspace_root, write_file,
};

/// Asserts that `fmerge build args` fails with stderr containing every one of `needles`.
fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let Ran { ok, stderr, .. } = fmerge(args);
    assert!(!ok, "fmerge build {args:?} should fail");
    for needle in needles {
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
    }
    stderr
}

/// [`fails_with`] for `--config` of a group file holding `group`.
fn group_fails_with(group: &str, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "group.toml", group);
    fails_with(&["--config", file.to_str().unwrap()], needles);
}

#[test]
fn an_unknown_function_is_named_with_the_known_ones() {
    fails_with(
        &["write-home-timeline", "social-graph-get-follower"],
        &[
            "unknown function social-graph-get-follower",
            "did you mean `social-graph-get-followers`?",
            "\nfix: write `social-graph-get-followers`",
        ],
    );
}

#[test]
fn a_library_crate_is_refused_as_no_function() {
    // shortcode is a real crate of the workspace: a C library wrapper, not a function.
    fails_with(
        &["url-shorten", "shortcode"],
        &[
            "shortcode has no binary target, so it is a library, not a function",
            "\nfix: name the function's own package",
        ],
    );
}

#[test]
fn a_function_listed_twice_is_refused() {
    fails_with(
        &[
            "write-home-timeline",
            "social-graph-get-followers",
            "social-graph-get-followers",
        ],
        &["listed twice"],
    );
}

#[test]
fn a_caller_without_callees_is_refused() {
    fails_with(&["write-home-timeline"], &["name at least one callee"]);
}

#[test]
fn malformed_rewrites_are_refused_before_building() {
    for bad in ["no-equals-sign", "=10.0.0.7:6379", "sn-redis-master:6379="] {
        fails_with(
            &[
                "write-home-timeline",
                "social-graph-get-followers",
                "--rewrite",
                bad,
            ],
            &["malformed --rewrite", "[CALLEE:]FROM=TO"],
        );
    }
    fails_with(
        &[
            "write-home-timeline",
            "social-graph-get-followers",
            "--rewrite",
            "write-home-timeline:a=b",
        ],
        &[
            "write-home-timeline is the caller",
            "never changes the caller's code",
        ],
    );
}

#[test]
fn a_rewrite_that_matches_nothing_is_an_error() {
    fails_with(
        &[
            "write-home-timeline",
            "social-graph-get-followers",
            "--rewrite",
            "redis.example.internal:6379=127.0.0.1:1",
        ],
        &[
            "no string literal in the code of social-graph-get-followers contains `redis.example.internal:6379`",
            "\nfix: check FROM",
        ],
    );
}

#[test]
fn a_rewrite_in_a_crate_the_caller_shares_is_refused() {
    // The runtime's content type is a literal of fmerge_runtime, which the caller links too.
    fails_with(
        &[
            "write-home-timeline",
            "social-graph-get-followers",
            "--rewrite",
            "social-graph-get-followers:application/json=text/plain",
        ],
        &[
            "crate fmerge_runtime",
            "write-home-timeline link too",
            "\nfix: ",
        ],
    );
}

#[test]
fn a_bad_opt_level_and_a_bad_config_file_are_refused() {
    let Ran { ok, stderr, .. } = fmerge(&[
        "write-home-timeline",
        "social-graph-get-followers",
        "--opt-level",
        "4",
    ]);
    assert!(!ok && stderr.contains("--opt-level"), "{stderr}");
    group_fails_with(
        "caller = \"write-home-timeline\"\ncallee = [\"typo\"]\n",
        &["not a valid merge group", "unknown field `callee`"],
    );
    fails_with(
        &["--config", "/nonexistent/group.toml"],
        &["cannot read the merge group /nonexistent/group.toml"],
    );
}

#[test]
fn a_bad_lto_mode_is_refused_on_the_command_line_and_in_a_group() {
    let Ran { ok, stderr, .. } = fmerge(&[
        "write-home-timeline",
        "social-graph-get-followers",
        "--lto",
        "thin",
    ]);
    assert!(
        !ok && stderr.contains("--lto") && ["fat", "own", "off"].iter().all(|m| stderr.contains(m)),
        "{stderr}"
    );
    group_fails_with(
        "caller = \"write-home-timeline\"\ncallees = [\"social-graph-get-followers\"]\nlto = \"yes\"\n",
        &["lto = \"yes\"", "[possible values: fat, own, off]"],
    );
}

#[test]
fn a_missing_llvm_library_is_explained() {
    let empty = tempfile::tempdir().unwrap();
    let why = fmerge_ir::llvm::llvm_link_name(empty.path()).unwrap_err();
    assert!(
        why.contains("no libLLVM-*.so") && why.contains("rustup"),
        "{why}"
    );
    // And the real toolchain has one.
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let lib = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim()).join("lib");
    assert!(
        fmerge_ir::llvm::llvm_link_name(&lib)
            .unwrap()
            .starts_with("LLVM-")
    );
}

fn fixture(name: &str) -> tempfile::TempDir {
    support::fixture(name, &[])
}

#[test]
fn an_exported_symbol_defined_by_two_crates_is_a_clash_naming_both() {
    let ws = fixture("clash");
    let Ran { ok, stderr, .. } = fmerge_in(
        ws.path(),
        &[
            "caller-fn",
            "callee-fn",
            "--out",
            ws.path().join("out").to_str().unwrap(),
        ],
    );
    assert!(!ok, "the clash must stop the merge");
    for needle in [
        "symbol clash",
        "clash_a",
        "clash_b",
        "sn_checksum",
        "export_name",
    ] {
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
    }
    assert!(
        !ws.path().join("out/caller-fn-merged").exists(),
        "no binary is left behind"
    );
}

#[test]
fn a_crate_that_fails_to_compile_shows_cargos_error_and_keeps_the_old_binary() {
    let ws = fixture("broken");
    let out = ws.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let good = out.join("broken-caller-merged");
    std::fs::write(&good, b"an earlier good build").unwrap();
    let Ran { ok, stderr, .. } = fmerge_in(
        ws.path(),
        &["broken-caller", "ok-callee", "--out", out.to_str().unwrap()],
    );
    assert!(!ok);
    assert!(
        stderr.contains("error[E0308]") && stderr.contains("not a number"),
        "cargo's own error is shown:\n{stderr}"
    );
    assert!(
        stderr.contains("cargo build failed") && stderr.contains("\nfix: correct them"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&good).unwrap(),
        b"an earlier good build",
        "the earlier binary is untouched"
    );
}

#[test]
fn an_uncalled_callee_allowed_with_allow_uncalled_is_a_warning() {
    let out = workspace_root().join("target/fmerge-tests/uncalled");
    let Ran { ok, stdout, stderr } = fmerge(&[
        "write-home-timeline",
        "unique-id",
        "--allow-uncalled",
        "--opt-level",
        "0",
        "--name",
        "uncalled",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "a warning, not an error:\n{stderr}");
    assert!(
        stderr.contains("warning: no merged function names unique-id"),
        "{stderr}"
    );
    assert!(PathBuf::from(stdout.lines().last().unwrap()).is_file());
}

#[test]
fn every_example_merge_group_loads_and_names_real_functions() {
    let dir = workspace_root().join("examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let group = fmerge::group::Group::load(&path)
            .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        let caller = group.caller.clone().expect("a caller");
        let plan = fmerge_cargo::resolve::run(
            group.manifest_path.first().map(|p| p.as_path()),
            &caller,
            &group.merge.callees,
        )
        .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        assert_eq!(plan.callees.len(), group.merge.callees.len());
        let members: Vec<String> = plan.functions().map(|f| f.name.clone()).collect();
        for rewrite in &group.merge.rewrite {
            fmerge_ir::passes::endpoints::Rewrite::parse(rewrite, &members)
                .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        }
        seen += 1;
    }
    assert!(seen >= 3, "examples/ holds the merge groups");
}

#[test]
fn bad_image_options_are_refused_before_the_long_build() {
    let base = [
        "write-home-timeline",
        "social-graph-get-followers",
        "--image",
    ];
    let Ran { ok, stderr, .. } = fmerge(&[&base[..], &["--registry-auth", "keychain"]].concat());
    assert!(
        !ok && stderr.contains("invalid value 'keychain'")
            && stderr.contains("[possible values: auto, env, docker, none]"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("building"),
        "refused before cargo ran:\n{stderr}"
    );
    let Ran { ok, stderr, .. } =
        fmerge(&[&base[..], &["--gateway", "gateway.openfaas:8080"]].concat());
    assert!(!ok && stderr.contains("not an http(s) URL"), "{stderr}");
    let Ran { ok, stderr, .. } = fmerge(&[&base[..], &["--progress", "loud"]].concat());
    assert!(!ok && !stderr.contains("building"), "{stderr}");
}

#[test]
fn every_option_is_checked_before_the_build() {
    let pair = ["write-home-timeline", "social-graph-get-followers"];
    // The merge name is also the image name: a DNS label.
    let stderr = fails_with(
        &[&pair[..], &["--image", "--name", "My_Merge"]].concat(),
        &["\"My_Merge\" is not a DNS label", "the merge name (--name)"],
    );
    assert!(
        !stderr.contains("building"),
        "refused before cargo ran:\n{stderr}"
    );
    // Image options without an image.
    let stderr = fails_with(
        &[&pair[..], &["--tag", "127.0.0.1:5000/pair:v1"]].concat(),
        &["--tag applies to the image", "add --image"],
    );
    assert!(!stderr.contains("building"), "{stderr}");
    // A tag that is not a reference, and one that cannot be pushed.
    fails_with(
        &[&pair[..], &["--image", "--tag", "Not A Reference"]].concat(),
        &["is not a valid image reference"],
    );
    fails_with(&[&pair[..], &["--image", "-j", "0"]].concat(), &["-j 0"]);
}

#[test]
fn a_merge_group_holds_the_image_options_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("group.toml");
    let manifest = workspace_root().join("Cargo.toml");
    std::fs::write(
        &file,
        format!(
            "caller = \"write-home-timeline\"\ncallees = [\"social-graph-get-followers\"]\nmanifest-path = {manifest:?}\nquiet = true\n\
             [image]\nimage = true\nregistry = \"127.0.0.1:5000/team\"\nregistry-auth = \"keychain\"\nprogress = \"plain\"\ngateway = \"http://127.0.0.1:8080\"\n"
        ),
    )
    .unwrap();
    // Read, and checked before the build: the group's registry-auth is wrong.
    let stderr = fails_with(
        &["--config", file.to_str().unwrap()],
        &[
            "image.registry-auth = \"keychain\"",
            "[possible values: auto, env, docker, none]",
        ],
    );
    assert!(!stderr.contains("building"), "{stderr}");
    // With a valid source, the file loads with every image option.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("keychain", "env")).unwrap();
    let group = fmerge::group::Group::load(&file).unwrap();
    assert_eq!(group.image.registry_auth, Some(RegistryAuth::Env));
    let image = group.image;
    assert_eq!(
        (image.registry.as_deref(), image.progress),
        (Some("127.0.0.1:5000/team"), Some(Progress::Plain))
    );
    assert_eq!(
        (group.merge.cargo.quiet, image.gateway.as_deref()),
        (true, Some("http://127.0.0.1:8080"))
    );
}

/// A workspace in `dir` of plain-`main` functions `front` (the caller,
/// calling `back` through the gateway) and `back`, whose manifest has
/// `back_extra` added (and a second binary with `second_bin`), with this
/// repo's lock file.
fn process_pair(dir: &std::path::Path, back_extra: &str, second_bin: bool) {
    for folder in ["front/src", "back/src/bin"] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
    }
    write_file(
        dir,
        "Cargo.toml",
        "[workspace]\nresolver = \"3\"\nmembers = [\"front\", \"back\"]\n",
    );
    let package = |name: &str, extra: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n{extra}")
    };
    write_file(dir, "front/Cargo.toml", &package("front", ""));
    write_file(
        dir,
        "front/src/main.rs",
        "fn main() { let _ = format!(\"http://gateway:8080/function/back\"); }\n",
    );
    write_file(dir, "back/Cargo.toml", &package("back", back_extra));
    write_file(dir, "back/src/main.rs", "fn main() {}\n");
    if second_bin {
        write_file(dir, "back/src/bin/tool.rs", "fn main() {}\n");
    }
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

/// A group of watchdog-process functions fmerge cannot build is refused
/// before the build: a watchdog process with an own HTTP server (hyper's
/// server), and a misspelt member, which is offered its name.
#[test]
fn a_watchdog_process_group_that_cannot_be_built_is_refused_before_the_build() {
    let hyper = "\n[dependencies]\nhyper = { version = \"1\", features = [\"server\"] }\n";
    for (dependencies, member, said) in [
        (
            hyper,
            "back",
            [
                "error: front is a watchdog process",
                "and back is its own HTTP server (of-watchdog's `http` mode): fmerge merges a group of one form",
                "\nfix: merge front with callees of its own form",
            ],
        ),
        (
            "",
            "bak",
            [
                "unknown function bak",
                "did you mean `back`?",
                "\nfix: write `back`",
            ],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        process_pair(dir.path(), dependencies, false);
        refused_before_cargo(fmerge_in(dir.path(), &["front", member]), &said);
    }
}

#[test]
fn a_plain_main_package_with_several_binaries_is_refused_before_the_build() {
    let dir = tempfile::tempdir().unwrap();
    // hyper without its server feature is a client, as a watchdog process
    // may use for its calls: not refused as a server.
    process_pair(dir.path(), "\n[dependencies]\nhyper = \"1\"\n", true);
    let Ran { ok, stderr, .. } = fmerge_in(dir.path(), &["front", "back"]);
    assert!(!ok, "{stderr}");
    support::assert_says(
        &stderr,
        &[
            "error: back has several binaries (",
            "does not say which one of-watchdog runs",
            "\nfix: merge a package with one binary",
        ],
    );
    assert!(!stderr.contains("serves HTTP"), "{stderr}");
    assert!(!stderr.contains("building"), "cargo started:\n{stderr}");
}

/// CamelCase packages (as teams name watchdog-process functions) built
/// without a stack ship under their OpenFaaS names: the merge's default
/// name and the members pass the image's name checks, so what stops this
/// build is the Docker Engine it cannot reach, not a name.
#[test]
fn camel_case_packages_ship_under_their_kebab_case_names() {
    let dir = tempfile::tempdir().unwrap();
    process_pair(dir.path(), "", false);
    for (from, to) in [("front", "FrontFn"), ("back", "BackFn")] {
        let manifest = dir.path().join(from).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(
            &manifest,
            text.replace(&format!("name = \"{from}\""), &format!("name = \"{to}\"")),
        )
        .unwrap();
    }
    let main = dir.path().join("front/src/main.rs");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, text.replace("/function/back", "/function/back-fn")).unwrap();
    let watchdog = fmerge_testkit::dataplane::of_watchdog()
        .unwrap_or_else(|e| panic!("the real of-watchdog is needed: {e}"));
    let Ran { ok, stderr, .. } = support::fmerge(
        dir.path(),
        &[
            "FrontFn",
            "BackFn",
            "--image",
            "--watchdog",
            watchdog.to_str().unwrap(),
        ],
        &[("DOCKER_HOST", "tcp://127.0.0.1:1")],
    );
    assert!(!ok, "{stderr}");
    assert!(!stderr.contains("not a DNS label"), "{stderr}");
    assert!(
        stderr.contains("cannot reach the Docker Engine at tcp://127.0.0.1:1"),
        "{stderr}"
    );
}
