//! The faas-cli template for fmerge functions (`rust-fmerge`), installed into
//! a user's `template/` folder by `fmerge template`: `faas-cli template pull`
//! wants a repo whose root holds `template/`, and this one's root holds the
//! fmerge workspace. The files are given by the caller (the fmerge binary
//! embeds `docker/template/rust-fmerge/`), so this crate knows no repo layout.

use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};

/// The language name faas-cli knows the template by.
pub const LANG: &str = "rust-fmerge";

/// One file of a template: its path inside the template folder, and its text
/// (`@RUNTIME@` stands for the fmerge-runtime dependency).
pub type File = (&'static str, &'static str);

/// Where new functions get `fmerge-runtime` from: a path on this machine, or
/// a git repository (needed for `faas-cli build`, whose Docker build sees
/// only the function's folder).
#[derive(Debug, Clone)]
pub enum Runtime {
    Path(PathBuf),
    Git(String),
}

impl Runtime {
    /// The runtime at `path`, if it is a crate.
    pub fn at(path: &Path) -> Result<Runtime> {
        match path.canonicalize() {
            Ok(p) if p.join("Cargo.toml").is_file() => Ok(Runtime::Path(p)),
            _ => bail!(
                "fmerge-runtime is not at {}\nfix: pass --runtime-path PATH or --runtime-git URL",
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

/// Writes `files` into `<dir>/template/rust-fmerge/`; returns that folder. An
/// existing copy is replaced (it is fmerge's, not the user's).
pub fn install(dir: &Path, files: &[File], runtime: &Runtime) -> Result<PathBuf> {
    let root = dir.join("template").join(LANG);
    for (file, text) in files {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().expect("a folder"))
            .with_context(|| format!("cannot create {}", root.display()))?;
        let text = text.replace("@RUNTIME@", &runtime.dependency());
        fmerge_cargo::artifact::write(&path, text.as_bytes())?;
    }
    Ok(root.canonicalize()?)
}
