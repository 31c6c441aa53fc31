//! The socialNetwork functions of this workspace, built once per test
//! process with the merger's flags, and the binaries of fmerge's own builds.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The function crates of the workspace (DeathStarBench's socialNetwork, all
/// 26), in call-tree order: each entry point, then what it calls; the first
/// are compose-post's tree ([`COMPOSE_POST_TREE`]).
pub const FUNCTIONS: &[&str] = &[
    // The write path (compose-post's tree, COMPOSE_POST_TREE).
    "compose-post",
    "unique-id",
    "text-service",
    "url-shorten",
    "user-mention",
    "compose-creator-with-user-id",
    "media",
    "store-post",
    "write-user-timeline",
    "write-home-timeline",
    "social-graph-get-followers",
    // The read paths.
    "read-home-timeline",
    "read-user-timeline",
    "read-posts",
    "read-post",
    // Users.
    "register-user",
    "register-user-with-id",
    "social-graph-insert-user",
    "user-login",
    "get-user-id",
    "compose-creator-with-username",
    // The social graph.
    "social-graph-follow-with-username",
    "social-graph-unfollow-with-username",
    "social-graph-follow",
    "social-graph-unfollow",
    "social-graph-get-followees",
];

/// compose-post and every function it calls, directly or not, in call-tree
/// order (the root first): what merging "the whole compose-post chain" means;
/// the first 11 of [`FUNCTIONS`].
pub const COMPOSE_POST_TREE: &[&str] = FUNCTIONS.split_at(11).0;

/// The target every function is built for.
pub const TARGET: &str = "x86_64-unknown-linux-gnu";

/// RUSTFLAGS for building the functions. They MUST equal the merger's: the
/// merger builds into the same target dir ([`build_dir`]), so with the same
/// flags the functions compile once and both share them; with different
/// flags each build would invalidate the other's.
pub const FUNCTION_RUSTFLAGS: &str = "--emit=llvm-bc,obj,link";

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
    BUILT.get_or_init(|| build_packages(&workspace_root(), FUNCTIONS))
}

/// Builds `packages` of the workspace at `dir` as [`function_binaries`]
/// builds this repo's functions (unmerged, release, [`TARGET`],
/// [`FUNCTION_RUSTFLAGS`], into [`build_dir`], where fmerge builds them
/// too) and returns the directory that holds the binaries. Panics with
/// cargo's output if the build fails.
pub fn build_packages(dir: &Path, packages: &[&str]) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir)
        .args(["build", "--release", "--target", TARGET])
        .env("CARGO_TARGET_DIR", build_dir())
        .env("RUSTFLAGS", FUNCTION_RUSTFLAGS)
        // It would take precedence over RUSTFLAGS.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    for p in packages {
        cmd.args(["-p", p]);
    }
    let out = cmd
        .output()
        .expect("cannot run cargo to build the functions");
    if !out.status.success() {
        panic!(
            "building {} failed ({:?}):\n{}",
            dir.display(),
            cmd,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    build_dir().join(TARGET).join("release")
}

/// The unmerged binary of function `name` (built on first use), as a copy
/// that no build writes over: a test that reads it twice reads one binary.
///
/// cargo links every build of a function to the one path
/// `release/<name>`, and fmerge's builds of this repo's functions in other
/// test processes (a plan, a merge: other packages, other profile
/// settings, so other bytes) link theirs there too, while this process
/// still uses it (an image built twice "from the same binary" got two
/// content tags). The copy is named by its content, so processes share it
/// and none replaces another's.
pub fn function_binary(name: &str) -> PathBuf {
    static COPIES: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut copies = COPIES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, copy)) = copies.iter().find(|(n, _)| n == name) {
        return copy.clone();
    }
    let dir = workspace_root().join("target/fmerge/test-binaries");
    let copy = content_named_copy(&function_binaries().join(name), &dir, name);
    copies.push((name.to_string(), copy.clone()));
    copy
}

/// `built` copied to `<dir>/<its content's hash>/<name>`; that path.
fn content_named_copy(built: &Path, dir: &Path, name: &str) -> PathBuf {
    let bytes = std::fs::read(built)
        .unwrap_or_else(|e| panic!("no binary {} after the build: {e}", built.display()));
    // Read once, then written and hashed from the copy: a link cargo makes
    // meanwhile changes nothing here.
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut file = tempfile::NamedTempFile::new_in(dir).expect("a file in the copies' folder");
    file.write_all(&bytes).expect("copy the binary");
    let written = file.into_temp_path();
    std::fs::set_permissions(&written, std::fs::Permissions::from_mode(0o755))
        .expect("make the copy executable");
    let copy = dir.join(&crate::sha256(&written)[..16]).join(name);
    std::fs::create_dir_all(copy.parent().unwrap()).expect("a folder for the copy");
    // The same content under the same name: whichever process renames
    // last, the file is the same.
    written.persist(&copy).expect("name the copy");
    copy
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_keeps_its_bytes_when_another_build_is_linked_to_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let (built, copies) = (dir.path().join("f"), dir.path().join("copies"));
        std::fs::write(&built, b"one build").unwrap();
        let first = content_named_copy(&built, &copies, "f");
        // As cargo links another build's binary: a new file at the path.
        std::fs::remove_file(&built).unwrap();
        std::fs::write(&built, b"another build").unwrap();
        let second = content_named_copy(&built, &copies, "f");
        assert_eq!(std::fs::read(&first).unwrap(), b"one build");
        assert_eq!(std::fs::read(&second).unwrap(), b"another build");
        assert_ne!(first, second);
        assert!(first.ends_with("f") && second.ends_with("f"));
        // The same content, the same copy.
        assert_eq!(content_named_copy(&built, &copies, "f"), second);
        let mode = std::fs::metadata(&second).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn the_compose_post_tree_leads_the_function_list() {
        // The split falls where compose-post's tree ends (its last callee).
        assert_eq!(COMPOSE_POST_TREE[0], "compose-post");
        assert_eq!(
            COMPOSE_POST_TREE.last(),
            Some(&"social-graph-get-followers")
        );
        assert_eq!(FUNCTIONS[COMPOSE_POST_TREE.len()], "read-home-timeline");
        let mut all = FUNCTIONS.to_vec();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 26, "socialNetwork's 26 functions, once each");
        for f in FUNCTIONS {
            let manifest = workspace_root()
                .join("functions")
                .join(f)
                .join("Cargo.toml");
            assert!(manifest.is_file(), "no crate {}", manifest.display());
        }
    }

    /// functions/stack.yml deploys exactly these functions, each from its crate.
    #[test]
    fn the_stack_file_lists_every_function_with_its_crate() {
        let path = workspace_root().join("functions/stack.yml");
        let stack = std::fs::read_to_string(&path).expect("functions/stack.yml");
        let lines: Vec<&str> = stack.lines().collect();
        let names: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("  ")?.strip_suffix(':'))
            .filter(|n| !n.starts_with(' ') && *n != "name")
            .collect();
        assert_eq!(names, FUNCTIONS, "{}", path.display());
        for name in FUNCTIONS {
            let handler = format!("    handler: ./{name}");
            assert!(lines.contains(&handler.as_str()), "{name}: no `{handler}`");
        }
    }
}
