//! The files fmerge embeds, and where this checkout keeps the runtime: the
//! one module that knows the repository's layout.
//!
//! Why here: the files live in the top-level folders where users and the
//! README look for them (`linker-scripts/` for the symbol policy of the final
//! link, `docker/` for the image templates). The library crates stay free of
//! the repository's layout and take these as data: fmerge-cargo links with
//! any version script it is given, fmerge-ship renders any Dockerfile and
//! installs any template. Only this binary crate, which is the checkout's
//! application, reaches out to them. (The alternative, copies or symlinks
//! inside each crate, would give every file two places to edit.)

use fmerge_ship::template::{Crate, File};

/// The symbol policy of a merged binary (`--version-script`).
pub const VERSION_SCRIPT: &str = include_str!("../../linker-scripts/merged.ver");

/// The symbol policy of a merged binary of watchdog-process functions:
/// the C functions the shim defines in libc's place are exported (the
/// file lists them and why), so that a shared library (a system libcurl)
/// calls them too.
pub const PROCESS_VERSION_SCRIPT: &str = include_str!("../../linker-scripts/process.ver");

/// The Dockerfile of the minimal image; fmerge-ship fills its `{{…}}` placeholders.
pub const DOCKERFILE: &str = include_str!("../../docker/Dockerfile.scratch");

/// A file of `docker/template/rust-fmerge`, by its path inside it.
macro_rules! template_file {
    ($path:literal) => {
        File {
            path: $path,
            text: include_str!(concat!("../../docker/template/rust-fmerge/", $path)),
        }
    };
}

/// The faas-cli template `rust-fmerge` that `fmerge template` installs,
/// each file with its path inside the template.
pub const FAAS_TEMPLATE: &[File] = &[
    template_file!("template.yml"),
    template_file!("Dockerfile"),
    template_file!("function/Cargo.toml"),
    template_file!("function/src/main.rs"),
];

/// The crates `fmerge template` vendors into the template: fmerge-runtime
/// and its path dependencies, every source file (build.rs lists them).
pub const VENDORED: &[Crate] = include!(concat!(env!("OUT_DIR"), "/vendored.rs"));

/// fmerge-shim, which a merged binary of watchdog-process functions links:
/// every source file (build.rs lists them).
pub const SHIM: &Crate = &include!(concat!(env!("OUT_DIR"), "/shim.rs"))[0];

/// The workspace's Cargo.toml, whose settings the vendored crates inherit.
pub const WORKSPACE_MANIFEST: &str = include_str!("../../Cargo.toml");

#[cfg(test)]
mod tests {
    use fmerge_ship::image::context::render_dockerfile;
    use fmerge_ship::image::libs::Resolved;

    #[test]
    fn the_embedded_files_are_what_the_crates_expect() {
        let dockerfile = render_dockerfile(
            super::DOCKERFILE,
            std::path::Path::new("/usr/local/bin/pair"),
            &[fmerge_ship::image::context::EnvVar::new("A", "1")],
            &Resolved::default(),
        )
        .unwrap();
        assert!(dockerfile.contains("FROM scratch"), "{dockerfile}");
        assert!(
            dockerfile.contains(r#"ENTRYPOINT ["/usr/local/bin/pair"]"#),
            "{dockerfile}"
        );
        assert!(!dockerfile.contains("{{"), "every placeholder is filled");
        assert!(super::VERSION_SCRIPT.contains("local: *;"));
        let names: Vec<&str> = super::FAAS_TEMPLATE.iter().map(|f| f.path).collect();
        assert!(names.contains(&"template.yml") && names.contains(&"function/Cargo.toml"));
        let vendored: Vec<&str> = super::VENDORED.iter().map(|c| c.dir).collect();
        assert_eq!(vendored, ["fmerge-runtime", "fmerge-contract"]);
        assert!(
            super::VENDORED[0]
                .files
                .iter()
                .any(|f| f.path == "src/lib.rs")
        );
    }
}
