//! The workspace's release profile builds some of fmerge's own crates at
//! another opt-level (the workspace's `Cargo.toml` says why). fmerge builds
//! the functions with that same profile, so an override that named a crate a
//! function links would change every function and merged binary; one that
//! named a crate a bench/ binary links would change what the bench measures.
//! And a binary whose unit tests `cargo test` skips (`test = false`, so that
//! no empty test harness of it is built) must hold no unit test.

use cargo_metadata::{DependencyKind, Metadata, MetadataCommand};
use fmerge_cargo::resolve::closure;
use std::collections::BTreeSet;
use std::path::Path;

fn workspace() -> (Metadata, toml::Table) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let manifest = root.join("Cargo.toml");
    let metadata = MetadataCommand::new()
        .manifest_path(&manifest)
        .exec()
        .expect("cargo metadata");
    let text = std::fs::read_to_string(&manifest).expect("the workspace's Cargo.toml");
    (
        metadata,
        text.parse().expect("the workspace's Cargo.toml is TOML"),
    )
}

/// The crates named by `[profile.release.package.<name>]`.
fn overridden(manifest: &toml::Table) -> BTreeSet<String> {
    let package = manifest["profile"]["release"]
        .get("package")
        .and_then(|p| p.as_table());
    package
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The names of the crates the workspace members whose manifest path
/// contains `under` link (normal and build dependencies, not dev ones).
fn linked_by(metadata: &Metadata, under: &str) -> BTreeSet<String> {
    let kinds = [DependencyKind::Normal, DependencyKind::Build];
    metadata
        .workspace_packages()
        .into_iter()
        .filter(|p| p.manifest_path.as_str().contains(under))
        .flat_map(|p| closure(metadata, &p.id, &kinds))
        .map(|id| metadata[&id].name.to_string())
        .collect()
}

#[test]
fn release_overrides_name_no_crate_a_function_or_the_bench_links() {
    let (metadata, manifest) = workspace();
    let overridden = overridden(&manifest);
    assert!(overridden.contains("fmerge"), "{overridden:?}");
    for under in ["/functions/", "/bench/"] {
        let linked = linked_by(&metadata, under);
        assert!(linked.len() > 10, "{under}: {linked:?}");
        let both: Vec<_> = overridden.intersection(&linked).collect();
        assert!(
            both.is_empty(),
            "[profile.release.package.X] for crates that {under} links: {both:?}"
        );
    }
}

#[test]
fn release_overrides_name_only_crates_fmerge_links_and_not_the_planner() {
    let (metadata, manifest) = workspace();
    let fmerge = linked_by(&metadata, "/merger/Cargo.toml");
    let overridden = overridden(&manifest);
    let stale: Vec<_> = overridden.difference(&fmerge).collect();
    assert!(
        stale.is_empty(),
        "[profile.release.package.X] for crates fmerge does not link: {stale:?}"
    );
    assert!(fmerge.contains("fmerge-plan"));
    assert!(
        !overridden.contains("fmerge-plan"),
        "the planner's time is its own code"
    );
}

#[test]
fn a_binary_cargo_test_skips_holds_no_unit_test() {
    let (metadata, _) = workspace();
    let mut skipped = 0;
    for p in metadata.workspace_packages() {
        for t in p.targets.iter().filter(|t| t.is_bin() && !t.test) {
            skipped += 1;
            // The binary's own directory: its modules are beside it.
            let dir = t.src_path.parent().unwrap();
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert!(
                        !text.contains("#[test]") && !text.contains("#[cfg(test)]"),
                        "{} has unit tests, and {}'s binary {} sets test = false: they would never run\nfix: drop test = false from its [[bin]]",
                        path.display(),
                        p.name,
                        t.name
                    );
                }
            }
        }
    }
    assert!(skipped > 20, "{skipped}");
}
