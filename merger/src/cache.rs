//! Incremental re-merge: when the bitcode of every unit and the options are
//! what the last merge of this name saw, its binary is still right, so the
//! link, optimization and codegen (most of a merge's time) are skipped.
//! Cargo already recompiles only the crates that changed; this is the same
//! idea one stage later.

use crate::emit::Emitted;
use crate::passes::config::Setting;
use crate::pipeline::Options;
use anyhow::Result;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

/// What a cached merge reports without redoing it.
#[derive(Serialize, Deserialize)]
pub struct Entry {
    pub settings: Vec<Setting>,
    pub native_libs: Vec<String>,
    /// The merge's warnings, repeated when the binary is kept.
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    key: String,
    /// The binary this merge wrote, so a file replaced since is not kept.
    binary: String,
    entry: Entry,
}

/// A digest of everything that decides the merged binary.
pub fn key(opts: &Options, emitted: &Emitted, bitcode: &[Vec<u8>]) -> String {
    let units: Vec<String> = bitcode.par_iter().map(|b| hex(&Sha256::digest(b))).collect();
    let mut h = Sha256::new();
    let mut line = |s: &str| {
        h.update(s.as_bytes());
        h.update(b"\n");
    };
    line(env!("CARGO_PKG_VERSION"));
    line(env!("FMERGE_RUSTC_RELEASE"));
    line(&opts.caller);
    opts.callees.iter().for_each(|c| line(c));
    opts.rewrites.iter().for_each(|r| line(r));
    line(&opts.opt_level.to_string());
    opts.allow_shared_static.iter().for_each(|a| line(&format!("allow-shared-static {a}")));
    line(&format!("{:?} {:?}", opts.name, opts.out));
    // Cargo reports units in the order they finish: sort, so the key does not depend on it.
    let mut lines: Vec<String> = emitted.native.libs.iter().chain(&emitted.native.search).cloned().collect();
    lines.extend(emitted.units.iter().zip(&units).map(|(u, d)| format!("{} {:?} {d}", u.crate_name, u.function)));
    lines.sort();
    lines.iter().for_each(|l| line(l));
    hex(&h.finalize())
}

/// The last merge's report, if it had this key and its outputs still exist.
pub fn lookup(work: &Path, key: &str, binary: &Path, ll: Option<&Path>) -> Option<Entry> {
    if !binary.is_file() || ll.is_some_and(|l| !l.is_file()) {
        return None;
    }
    let stored: Stored = serde_json::from_slice(&std::fs::read(work.join("merge.json")).ok()?).ok()?;
    let binary_now = hex(&Sha256::digest(std::fs::read(binary).ok()?));
    (stored.key == key && stored.binary == binary_now).then_some(stored.entry)
}

/// Records a finished merge; written last, so a failed merge records nothing.
pub fn store(work: &Path, key: &str, binary: &Path, entry: Entry) -> Result<()> {
    let binary = hex(&Sha256::digest(std::fs::read(binary)?));
    let stored = Stored { key: key.to_string(), binary, entry };
    crate::artifact::write(&work.join("merge.json"), &serde_json::to_vec_pretty(&stored)?)?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
