//! The operations the commands call, one each (as cargo's `ops/`): each
//! takes its typed request, already checked, and does the work; the
//! commands (`cli/`) only parse into it.

pub mod build;
pub mod plan;
pub mod ship;

use std::path::{Path, PathBuf};

/// `path` made absolute against the working directory (as given where
/// that fails), so that a path written down still names it elsewhere.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
