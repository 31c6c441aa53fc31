//! The faas-cli template for fmerge functions (`rust-fmerge`), installed into
//! a user's `template/` folder by `fmerge template`: `faas-cli template pull`
//! wants a repo whose root holds `template/`, and this one's root holds the
//! fmerge workspace. The files are given by the caller (the fmerge binary
//! embeds `docker/template/rust-fmerge/` and the runtime's sources), so this
//! crate knows no repo layout.
//!
//! The template is self-contained: fmerge-runtime and the crates it depends
//! on by path are vendored into its `vendor/` folder, as standalone crates
//! (`template/manifest.rs`). faas-cli's build context is the template folder
//! with the function's folder copied to `function/`, so it holds the
//! runtime, and the build needs no fmerge checkout and no network beyond
//! crates.io.
//! docs/shipping.md describes the layout.

mod manifest;

use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};

/// The language name faas-cli knows the template by.
pub const LANG: &str = "rust-fmerge";

/// The template's folder that holds the vendored crates, one folder each.
pub const VENDOR: &str = "vendor";

/// One file of the template.
#[derive(Debug, Clone, Copy)]
pub struct File {
    /// Inside the template, or inside a vendored crate's folder.
    pub path: &'static str,
    pub text: &'static str,
}

/// A crate vendored into the template.
#[derive(Debug, Clone, Copy)]
pub struct Crate {
    /// Its folder under `vendor/`: its package name.
    pub dir: &'static str,
    /// Its Cargo.toml as in its workspace (made standalone on install).
    pub manifest: &'static str,
    /// Its other files, by path inside its folder.
    pub files: &'static [File],
}

/// Writes the template into `<dir>/template/rust-fmerge/` (`files`, and
/// `crates` under `vendor/`, their manifests made standalone with the
/// settings they take from `workspace`, the Cargo.toml of their workspace);
/// returns that folder. An existing template is refused unless `overwrite`:
/// it may be one the user has changed. The new template is written beside
/// it and moved in whole, so a failed install leaves the old one as it was.
pub fn install(
    dir: &Path,
    files: &[File],
    crates: &[Crate],
    workspace: &str,
    overwrite: bool,
) -> Result<PathBuf> {
    let parent = dir.join("template");
    let root = parent.join(LANG);
    if root.exists() && !overwrite {
        bail!(
            "{} already holds a {LANG} template (fmerge leaves it as it is)\n\
             fix: pass --overwrite to replace it with this fmerge's template; functions made from it are not touched",
            root.display()
        );
    }
    let vendored: Vec<&str> = crates.iter().map(|c| c.dir).collect();
    let manifests = crates
        .iter()
        .map(|c| manifest::standalone(c.dir, c.manifest, workspace, &vendored))
        .collect::<Result<Vec<_>>>()?;
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".rust-fmerge-new-")
        .tempdir_in(&parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    for file in files {
        write(&staging.path().join(file.path), file.text)?;
    }
    for (krate, manifest) in crates.iter().zip(&manifests) {
        let folder = staging.path().join(VENDOR).join(krate.dir);
        write(&folder.join("Cargo.toml"), manifest)?;
        for file in krate.files {
            write(&folder.join(file.path), file.text)?;
        }
    }
    if root.exists() {
        let old = tempfile::Builder::new()
            .prefix(".rust-fmerge-old-")
            .tempdir_in(&parent)?;
        let aside = old.path().join(LANG);
        std::fs::rename(&root, &aside)
            .with_context(|| format!("cannot move {} aside", root.display()))?;
        if let Err(e) = std::fs::rename(staging.path(), &root) {
            std::fs::rename(&aside, &root)?;
            return Err(e).with_context(|| format!("cannot replace {}", root.display()));
        }
    } else {
        std::fs::rename(staging.path(), &root)
            .with_context(|| format!("cannot create {}", root.display()))?;
    }
    Ok(root.canonicalize()?)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::create_dir_all(path.parent().expect("a folder"))
        .with_context(|| format!("cannot create {}", path.display()))?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: &[File] = &[File {
        path: "template.yml",
        text: "language: rust-fmerge\n",
    }];
    const CRATES: &[Crate] = &[Crate {
        dir: "fmerge-contract",
        manifest: "[package]\nname = \"fmerge-contract\"\nversion.workspace = true\n",
        files: &[File {
            path: "src/lib.rs",
            text: "",
        }],
    }];
    const WORKSPACE: &str = "[workspace.package]\nversion = \"0.1.0\"\n";

    fn install_with(dir: &Path, overwrite: bool) -> Result<PathBuf> {
        install(dir, FILES, CRATES, WORKSPACE, overwrite)
    }

    #[test]
    fn a_second_install_is_refused_without_overwrite_and_keeps_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = install_with(dir.path(), false).unwrap();
        assert!(root.join("vendor/fmerge-contract/src/lib.rs").is_file());
        std::fs::write(root.join("template.yml"), "mine\n").unwrap();
        let why = format!("{:#}", install_with(dir.path(), false).unwrap_err());
        assert!(
            why.contains("already holds a rust-fmerge template (fmerge leaves it as it is)\n")
                && why.contains("fix: pass --overwrite"),
            "{why}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("template.yml")).unwrap(),
            "mine\n"
        );
        install_with(dir.path(), true).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("template.yml")).unwrap(),
            FILES[0].text
        );
        let left: Vec<_> = std::fs::read_dir(dir.path().join("template"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["rust-fmerge"], "no staging folder is left behind");
    }
}
