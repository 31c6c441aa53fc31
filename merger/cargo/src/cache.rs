//! Incremental re-merge: when the bitcode of every unit and the options are
//! what the last merge of this name saw, its binary is still right, so the
//! link, optimization and codegen (most of a merge's time) are skipped.
//! Cargo already recompiles only the crates that changed; this is the same
//! idea one stage later. The key is made of the caller's inputs, whatever
//! they are; the entry is whatever report the caller wants back.

use anyhow::Result;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

#[derive(Serialize, Deserialize)]
struct Stored<T> {
    key: String,
    /// The binary this merge wrote, so a file replaced since is not kept.
    binary: String,
    entry: T,
}

/// A digest of `inputs` (every option that decides the binary, one per
/// line, in any order) and of each unit's bitcode, named by `units`.
pub fn key<B: AsRef<[u8]> + Sync>(inputs: &[String], units: &[String], bitcode: &[B]) -> String {
    let digests: Vec<String> = bitcode
        .par_iter()
        .map(|b| hex(&Sha256::digest(b.as_ref())))
        .collect();
    let mut lines: Vec<String> = inputs.to_vec();
    lines.extend(
        units
            .iter()
            .zip(&digests)
            .map(|(u, d)| format!("unit {u} {d}")),
    );
    // Cargo reports units in the order they finish: sort, so the key does not depend on it.
    lines.sort();
    let mut h = Sha256::new();
    for line in &lines {
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    hex(&h.finalize())
}

/// What identifies the running fmerge itself, for the key: a digest of its
/// executable, so that a rebuilt or upgraded fmerge never keeps a binary an
/// older one made. An executable that cannot be read gives a key that
/// matches nothing.
pub fn own_build() -> String {
    match std::env::current_exe().and_then(std::fs::read) {
        Ok(exe) => format!("fmerge executable {}", hex(&Sha256::digest(exe))),
        Err(e) => format!(
            "fmerge executable unreadable ({e}) at {:?}",
            std::time::SystemTime::now()
        ),
    }
}

/// The last merge's entry, if it had this key and its outputs still exist.
pub fn lookup<T: DeserializeOwned>(
    work: &Path,
    key: &str,
    binary: &Path,
    ll: Option<&Path>,
) -> Option<T> {
    if !binary.is_file() || ll.is_some_and(|l| !l.is_file()) {
        return None;
    }
    let stored: Stored<T> =
        serde_json::from_slice(&std::fs::read(work.join("merge.json")).ok()?).ok()?;
    let binary_now = hex(&Sha256::digest(std::fs::read(binary).ok()?));
    (stored.key == key && stored.binary == binary_now).then_some(stored.entry)
}

/// Records a finished merge; written last, so a failed merge records nothing.
pub fn store<T: Serialize>(work: &Path, key: &str, binary: &Path, entry: T) -> Result<()> {
    let binary = hex(&Sha256::digest(std::fs::read(binary)?));
    let stored = Stored {
        key: key.to_string(),
        binary,
        entry,
    };
    crate::artifact::write(
        &work.join("merge.json"),
        &serde_json::to_vec_pretty(&stored)?,
    )?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
