//! The faas-cli template for fmerge functions (`rust-fmerge`, in
//! `docker/template/`), installed into a user's `template/` folder by
//! `fmerge template`: `faas-cli template pull` wants a repo whose root holds
//! `template/`, and this one's root holds the fmerge workspace.

use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};

/// The language name faas-cli knows the template by.
pub const LANG: &str = "rust-fmerge";

const FILES: &[(&str, &str)] = &[
    (
        "template.yml",
        include_str!("../../../docker/template/rust-fmerge/template.yml"),
    ),
    (
        "Dockerfile",
        include_str!("../../../docker/template/rust-fmerge/Dockerfile"),
    ),
    (
        "function/Cargo.toml",
        include_str!("../../../docker/template/rust-fmerge/function/Cargo.toml"),
    ),
    (
        "function/src/main.rs",
        include_str!("../../../docker/template/rust-fmerge/function/src/main.rs"),
    ),
];

/// Where new functions get `fmerge-runtime` from: a path on this machine, or
/// a git repository (needed for `faas-cli build`, whose Docker build sees
/// only the function's folder).
#[derive(Debug, Clone)]
pub enum Runtime {
    Path(PathBuf),
    Git(String),
}

impl Runtime {
    /// The runtime of the fmerge checkout this binary was built from.
    pub fn beside_fmerge() -> Result<Runtime> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../functions/runtime");
        match path.canonicalize() {
            Ok(p) if p.join("Cargo.toml").is_file() => Ok(Runtime::Path(p)),
            _ => bail!(
                "fmerge-runtime is not where this fmerge was built from ({}); fix: pass --runtime-path PATH or --runtime-git URL",
                path.display()
            ),
        }
    }

    fn dependency(&self) -> String {
        let quote = |s: &str| format!("{s:?}");
        match self {
            Runtime::Path(p) => format!("{{ path = {} }}", quote(&p.display().to_string())),
            Runtime::Git(url) => format!("{{ git = {} }}", quote(url)),
        }
    }
}

/// Writes `<dir>/template/rust-fmerge/`; returns that folder. An existing
/// copy is replaced (it is fmerge's, not the user's).
pub fn install(dir: &Path, runtime: &Runtime) -> Result<PathBuf> {
    let root = dir.join("template").join(LANG);
    for (file, text) in FILES {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().expect("a folder"))
            .with_context(|| format!("cannot create {}", root.display()))?;
        let text = text.replace("@RUNTIME@", &runtime.dependency());
        fmerge_cargo::artifact::write(&path, text.as_bytes())?;
    }
    Ok(root.canonicalize()?)
}
