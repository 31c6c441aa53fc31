//! What fmerge's build changes in the user's release profile, and what it
//! says about it.

use std::collections::BTreeSet;
use std::path::Path;

/// What fmerge's own build overrides in the user's release profile, through
/// `--config` (which wins over Cargo.toml and config files), so that every
/// common profile gives bitcode fmerge can merge soundly.
#[derive(Debug, Default, Clone)]
pub struct Profile {
    /// Packages built at opt-level 0, so that every `&str` in them is still a
    /// visible pointer-and-length pair for the endpoint rewrite.
    pub unoptimized: BTreeSet<String>,
}

/// What the workspace's release profile says that fmerge's build changes,
/// read once from its manifest.
#[derive(Debug, Default, Clone, Copy)]
pub struct Release {
    /// `panic = "abort"`.
    pub panic_abort: bool,
    /// Cross-crate LTO (`lto = true`, `"fat"` or `"thin"`); `false`, `"off"`
    /// and no `lto` (cargo's default) are not.
    pub lto: bool,
}

impl Release {
    pub fn read(manifest: &Path) -> Release {
        let read = || -> Option<toml::Table> {
            let doc = std::fs::read_to_string(manifest)
                .ok()?
                .parse::<toml::Table>()
                .ok()?;
            doc.get("profile")?.get("release")?.as_table().cloned()
        };
        let Some(release) = read() else {
            return Release::default();
        };
        Release {
            panic_abort: release.get("panic").and_then(|v| v.as_str()) == Some("abort"),
            lto: release.get("lto").is_some_and(|v| {
                v.as_bool() == Some(true) || matches!(v.as_str(), Some("fat" | "thin"))
            }),
        }
    }

    /// What this build changes in the profile, said once so that nobody is
    /// surprised; `lto` is whether the merge runs LTO (`--lto` may differ
    /// from the profile).
    pub fn notes(&self, lto: bool) -> Vec<String> {
        let mut notes = Vec::new();
        if self.panic_abort {
            notes.push(
                "profile.release sets panic = \"abort\"; fmerge builds with panic = \"unwind\" so that a panicking callee fails only \
                 its own call (its caller gets an error reply, as from a crashed callee) instead of killing the merged process"
                    .to_string(),
            );
        }
        if self.lto && lto {
            notes.push(
                "profile.release sets lto; fmerge builds each crate without it and runs LTO over the whole merged program instead \
                 (`--lto off` skips that and merges faster)"
                    .to_string(),
            );
        } else if self.lto {
            notes.push("profile.release sets lto, and --lto off leaves it out: each crate is compiled as rustc optimized it".to_string());
        }
        notes
    }
}

impl Profile {
    /// `--config` values for cargo.
    /// - `lto = false`: rustc's LTO would write no per-crate bitcode (or one
    ///   that clashes); fmerge does LTO over the merged module when asked.
    /// - `panic = "unwind"`: a panicking callee must fail only its own call;
    ///   with `abort` it would kill the caller's process too.
    /// - `strip = "debuginfo"` (cargo's own default when no debug info is
    ///   asked for): `strip` only changes how cargo links the functions' own
    ///   binaries, which fmerge never ships (it links the merged binary
    ///   itself), but cargo compiles every dependency anew for each value.
    ///   One value keeps one compiled copy of the dependencies for every
    ///   workspace built into the same target dir.
    pub fn config_args(&self) -> Vec<String> {
        let mut args = vec![
            "profile.release.lto=false".to_string(),
            "profile.release.panic=\"unwind\"".to_string(),
            "profile.release.strip=\"debuginfo\"".to_string(),
        ];
        for package in &self.unoptimized {
            args.push(format!("profile.release.package.\"{package}\".opt-level=0"));
        }
        args
    }
}
