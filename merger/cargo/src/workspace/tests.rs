//! Tests of `workspace`: per-package settings, the lock file, and one build workspace per set of functions.

use super::*;

fn sources(names: &[&str]) -> Vec<FunctionProject> {
    names
        .iter()
        .map(|n| FunctionProject::own(n, PathBuf::from(format!("/p/{n}/Cargo.toml"))))
        .collect()
}

#[test]
fn per_package_settings_for_crates_the_build_has_not_are_left_out() {
    let profiles: toml::Table = "[release]\nopt-level = 3\n\
             [release.package.fmerge]\nopt-level = 0\n\
             [release.package.\"tokio@1.0.0\"]\nopt-level = 1\n\
             [release.package.\"*\"]\ndebug = true\n\
             [dev.package.serde]\nopt-level = 2\n"
        .parse()
        .unwrap();
    let built = BTreeSet::from(["tokio".to_string(), "redis".to_string()]);
    let out = profiles_for(&profiles, &built);
    let specs =
        |p: &str| -> Vec<&String> { out[p]["package"].as_table().unwrap().keys().collect() };
    assert_eq!(specs("release"), ["*", "tokio@1.0.0"]);
    assert!(specs("dev").is_empty());
    assert_eq!(out["release"]["opt-level"].as_integer(), Some(3));
}

#[test]
fn one_lock_file_is_the_same_path_or_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let (a, copy, other) = (file("a", "x = 1"), file("b", "x = 1"), file("c", "x = 2"));
    assert!(same_lock(None, None));
    assert!(same_lock(Some(&a), Some(&a)));
    assert!(same_lock(Some(&a), Some(&copy)));
    assert!(!same_lock(Some(&a), Some(&other)));
    assert!(!same_lock(Some(&a), None));
}

#[test]
fn each_set_of_functions_has_its_own_build_workspace() {
    let t = Path::new("/t");
    let ab = dir_of(t, "build", &sources(&["a", "b"]));
    assert_eq!(ab, dir_of(t, "build", &sources(&["a", "b"])));
    assert_ne!(ab, dir_of(t, "build", &sources(&["a", "c"])));
    assert_ne!(ab, dir_of(t, "graph", &sources(&["a", "b"])));
    assert!(ab.starts_with("/t/fmerge/workspace"), "{}", ab.display());
}

/// A template's `main` package with `deps` as its `[dependencies]`.
fn template_main(dir: &Path, deps: &str) -> Package {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"main\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n{deps}"),
    )
    .unwrap();
    package_of(&FunctionProject::own("price", dir.join("Cargo.toml")))
        .unwrap()
        .0
}

#[test]
fn a_handle_entry_is_written_only_for_a_template_on_hyper_bytes_and_tokio_1() {
    let dir = tempfile::tempdir().unwrap();
    let current = "bytes = \"1\"\nhandler = { path = \"../function\" }\n\
                   hyper = { version = \"1\", features = [\"server\"] }\n";
    let main = template_main(
        &dir.path().join("current"),
        &format!(
            "{current}tokio = {{ version = \"1\", features = [\"rt-multi-thread\", \"net\"] }}\n"
        ),
    );
    let taken: Vec<&str> = handle::takes(&main)
        .expect("taken")
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(taken, ["hyper", "bytes", "tokio"]);
    let full = template_main(
        &dir.path().join("full"),
        &format!("{current}tokio = {{ version = \"1\", features = [\"full\"] }}\n"),
    );
    assert!(handle::takes(&full).is_some());
    for (name, deps) in [
        // The `rust-http` template's hyper 0.12, on tokio 0.1.
        (
            "old",
            "bytes = \"1\"\nhyper = \"0.12\"\ntokio = { version = \"1\", features = [\"full\"] }\n",
        ),
        // No multi-threaded runtime to run `handle` on as the template does.
        (
            "current-thread",
            &format!("{current}tokio = {{ version = \"1\", features = [\"rt\"] }}\n"),
        ),
        (
            "no-bytes",
            "hyper = \"1\"\ntokio = { version = \"1\", features = [\"full\"] }\n",
        ),
    ] {
        let main = template_main(&dir.path().join(name), deps);
        assert!(handle::takes(&main).is_none(), "{name}");
    }
}

#[test]
fn the_handle_entry_exports_the_functions_own_symbols() {
    let source = handle::source("price");
    assert!(source.contains(r#"#[unsafe(export_name = "fmerge.handle.price")]"#));
    assert!(source.contains(r#"#[unsafe(export_name = "fmerge.handle.price.shape")]"#));
    assert!(
        !["{function}", "{call}", "{shape}"]
            .iter()
            .any(|p| source.contains(p))
    );
    assert_eq!(handle::package_name("price"), "price-fmerge-handle");
}
