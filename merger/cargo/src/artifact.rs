//! Atomic outputs: every artifact is written under a temporary name in its
//! final directory and renamed into place only when complete, so a failed or
//! interrupted build never leaves a half-written file where a good one was.
//! And the other way, [`read_parsed`]: an input file (a group, a plan, a
//! stack, a graph) read and parsed, each failure said the caller's way.

use anyhow::{Context as _, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tempfile::TempPath;

/// The file `path`, read and parsed by `parse`. `unreadable` and `invalid`
/// say why it could not be read or parsed, before the cause.
pub fn read_parsed<T, E>(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<T, E>,
    unreadable: impl FnOnce() -> String,
    invalid: impl FnOnce() -> String,
) -> Result<T>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let text = std::fs::read_to_string(path).with_context(unreadable)?;
    parse(&text).with_context(invalid)
}

/// A temporary path next to `dest`; removed on drop unless committed.
pub fn temp_beside(dest: &Path) -> Result<TempPath> {
    let dir = dest.parent().context("artifact path has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let stem = dest
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("artifact");
    let file = tempfile::Builder::new()
        .prefix(&format!(".{stem}."))
        .suffix(".partial")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    Ok(file.into_temp_path())
}

/// Moves a finished temporary file into place.
pub fn commit(temp: TempPath, dest: &Path, mode: u32) -> Result<PathBuf> {
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(mode))?;
    temp.persist(dest)
        .with_context(|| format!("cannot move the finished artifact to {}", dest.display()))?;
    Ok(dest.to_path_buf())
}

/// Writes `bytes` to `dest` atomically.
pub fn write(dest: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let temp = temp_beside(dest)?;
    std::fs::write(&temp, bytes).with_context(|| format!("cannot write {}", temp.display()))?;
    commit(temp, dest, 0o644)
}
