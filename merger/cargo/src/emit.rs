//! Stage 2: one `cargo build` over every function, with rustc writing LLVM
//! bitcode next to each crate's usual output.
//!
//! One invocation and one target dir mean a crate shared by several functions
//! is compiled once, so linking all the bitcode raises no duplicate symbols.
//! The explicit `--target` keeps our RUSTFLAGS off build scripts and
//! proc-macros, which run on the host and are never merged.

use crate::resolve::Members;
use crate::toolchain::Toolchain;
use anyhow::{Context, Result, bail};
use cargo_metadata::{Message, PackageId, TargetKind};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};
use std::io::BufReader;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The flags every merge build uses: each crate's bitcode, and its object
/// (`obj`: a bin's object is otherwise deleted once linked; a library's is
/// in its rlib too), which `--lto off` links for a crate no pass changed.
/// Test harnesses that build the unmerged functions use the same, so the
/// two builds share their units.
pub const RUSTFLAGS: &str = "--emit=llvm-bc,obj,link";

/// One compiled crate and its bitcode.
#[derive(Debug, Clone)]
pub struct Unit {
    pub package_id: PackageId,
    pub crate_name: String,
    pub bitcode: PathBuf,
    /// The function's own binary crate, for a function's bin.
    pub function: Option<String>,
    /// Built at opt-level 0 (see [`Profile::unoptimized`]); fmerge optimizes
    /// it after its own passes.
    pub unoptimized: bool,
    /// What rustc compiled from the same module as the bitcode: a library's
    /// rlib, a bin's object (`deps/<crate>-<hash>.o`).
    pub compiled: PathBuf,
}

impl Unit {
    /// Whether [`Unit::compiled`] is there and from the same rustc run as
    /// the bitcode: rustc writes the bitcode first, so an older file is left
    /// from another build.
    pub fn has_compiled(&self) -> bool {
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        match (modified(&self.compiled), modified(&self.bitcode)) {
            (Some(compiled), Some(bitcode)) => compiled >= bitcode,
            _ => false,
        }
    }
}

pub use crate::profile::{Profile, Release};

pub use crate::native::NativeLibs;

#[derive(Debug)]
pub struct Emitted {
    pub units: Vec<Unit>,
    pub native: NativeLibs,
    pub triple: String,
    /// Where cargo put the functions' own (unmerged) binaries.
    pub binaries: HashMap<String, PathBuf>,
}

/// The directory fmerge's builds use, apart from the user's own builds.
pub fn build_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("fmerge").join("build")
}

pub fn run(
    plan: &Members,
    target_dir: &Path,
    jobs: Option<usize>,
    quiet: bool,
    profile: &Profile,
    toolchain: &Toolchain,
) -> Result<Emitted> {
    let triple = toolchain.triple.clone();
    let mut rustflags = RUSTFLAGS.to_string();
    if let Ok(user) = std::env::var("RUSTFLAGS")
        && !user.trim().is_empty()
    {
        check_user_rustflags(&user)?;
        rustflags = format!("{user} {rustflags}");
    }
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args([
        "build",
        "--release",
        "--message-format=json-render-diagnostics",
        "--target",
        &triple,
    ])
    .arg("--manifest-path")
    .arg(&plan.manifest_path)
    .env("CARGO_TARGET_DIR", target_dir)
    .env("RUSTFLAGS", rustflags)
    .env_remove("CARGO_ENCODED_RUSTFLAGS")
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for f in plan.functions() {
        cmd.args(["-p", &f.name]);
    }
    for value in profile.config_args() {
        cmd.arg("--config").arg(value);
    }
    if let Some(j) = jobs {
        cmd.arg("-j").arg(j.to_string());
    }
    if quiet {
        // Nor `Compiling`/`Finished`: fmerge's -q prints only the results
        // (cargo's errors still show).
        cmd.arg("--quiet");
    }
    let mut child = cmd
        .spawn()
        .context("cannot run cargo\nfix: put cargo on PATH (rustup installs it in ~/.cargo/bin)")?;
    let stdout = child.stdout.take().expect("piped");

    let bins: HashMap<&PackageId, &crate::resolve::Function> =
        plan.functions().map(|f| (&f.package_id, f)).collect();
    let unoptimized: BTreeSet<&PackageId> = plan
        .local
        .iter()
        .filter(|(_, name)| profile.unoptimized.contains(*name))
        .map(|(id, _)| id)
        .collect();
    let triple_dir = target_dir.join(&triple);
    let mut units = Vec::new();
    let mut native = NativeLibs::default();
    let mut binaries = HashMap::new();
    let mut candidates = Vec::new();
    let mut success = false;
    for message in Message::parse_stream(BufReader::new(stdout)) {
        match message.context("cannot read cargo's JSON output")? {
            Message::CompilerArtifact(a) => {
                let on_target = a
                    .filenames
                    .iter()
                    .any(|f| f.as_std_path().starts_with(&triple_dir));
                if !on_target {
                    continue; // build scripts and proc-macros
                }
                let crate_name = a.target.name.replace('-', "_");
                let low = unoptimized.contains(&a.package_id);
                if a.target.kind.contains(&TargetKind::Bin) {
                    let Some(&function) = bins.get(&a.package_id) else {
                        continue;
                    };
                    let exe = a
                        .executable
                        .clone()
                        .context("cargo reported a binary without its path")?;
                    let bitcode = bin_bitcode(exe.as_std_path(), &crate_name)?;
                    candidates.push((
                        function.name.clone(),
                        a.target.name.clone(),
                        exe.into_std_path_buf(),
                        Unit {
                            package_id: a.package_id,
                            crate_name,
                            function: Some(function.name.clone()),
                            unoptimized: low,
                            compiled: bitcode.with_extension("o"),
                            bitcode,
                        },
                    ));
                } else if let Some(rlib) =
                    a.filenames.iter().find(|f| f.extension() == Some("rlib"))
                {
                    let stem = rlib.file_stem().unwrap_or_default();
                    let stem = stem.strip_prefix("lib").unwrap_or(stem);
                    let bitcode = rlib
                        .with_file_name(format!("{stem}.bc"))
                        .into_std_path_buf();
                    units.push(Unit {
                        package_id: a.package_id,
                        crate_name,
                        bitcode,
                        function: None,
                        unoptimized: low,
                        compiled: rlib.clone().into_std_path_buf(),
                    });
                }
            }
            Message::BuildScriptExecuted(script) => {
                for lib in script.linked_libs {
                    push_unique(&mut native.libs, lib.to_string());
                }
                for path in script.linked_paths {
                    push_unique(&mut native.search, path.to_string());
                }
            }
            Message::BuildFinished(done) => success = done.success,
            _ => {}
        }
    }
    let status = child.wait().context("cargo did not finish")?;
    if !status.success() || !success {
        bail!(
            "cargo build failed, so there is nothing to merge (its errors are printed above)\n\
             fix: correct them (`cargo build --release -p <function>` shows the same errors) and run fmerge again"
        );
    }
    let mut in_order = Vec::new();
    for f in plan.functions() {
        let (exe, unit) = pick_bin(
            &f.name,
            candidates
                .iter()
                .filter(|c| c.0 == f.name)
                .map(|c| (&c.1, &c.2, &c.3))
                .collect(),
        )?;
        in_order.push(exe.clone());
        binaries.insert(f.name.clone(), exe);
        units.push(unit);
    }
    let loaded = crate::native::loaded_libs(
        &in_order,
        &native.libs,
        &target_dir.join("fmerge-tmp"),
        toolchain,
    )?;
    native.libs.extend(loaded);
    // Cargo reports crates in the order they finish; the merge must not
    // depend on that (which of two clashing symbols is renamed, say).
    units.sort_by(|a, b| {
        (&a.crate_name, &a.package_id.repr).cmp(&(&b.crate_name, &b.package_id.repr))
    });
    for unit in &units {
        if !unit.bitcode.is_file() {
            bail!(
                "rustc wrote no bitcode for crate {} (expected {}): something overrode RUSTFLAGS={RUSTFLAGS}\n\
                 fix: drop the `[build] rustflags` of .cargo/config.toml (or the RUSTFLAGS setting) that replaces fmerge's",
                unit.crate_name,
                unit.bitcode.display()
            );
        }
    }
    Ok(Emitted {
        units,
        native,
        triple,
        binaries,
    })
}

/// A function package may have several binaries (a CLI beside the
/// function, say): the function is the one whose bitcode defines its entry.
fn pick_bin(function: &str, bins: Vec<(&String, &PathBuf, &Unit)>) -> Result<(PathBuf, Unit)> {
    if let [(_, exe, unit)] = bins[..] {
        return Ok((exe.clone(), unit.clone()));
    }
    let entry = fmerge_contract::entry_symbol(function);
    let mut declaring = Vec::new();
    for &(name, exe, unit) in &bins {
        let bytes = std::fs::read(&unit.bitcode)
            .with_context(|| format!("cannot read {}", unit.bitcode.display()))?;
        if bytes.windows(entry.len()).any(|w| w == entry.as_bytes()) {
            declaring.push((name, exe, unit));
        }
    }
    let names = || {
        bins.iter()
            .map(|b| b.0.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match declaring[..] {
        [(_, exe, unit)] => Ok((exe.clone(), unit.clone())),
        [] if bins.is_empty() => bail!(
            "cargo built no binary for function {function}\nfix: give its package a binary target (src/main.rs or a [[bin]])"
        ),
        [] => bail!(
            "function {function} has binaries {} and none of them declares its handler (`{entry}`)\n\
             fix: end the function's main.rs with `fmerge_runtime::function!(handler);`",
            names()
        ),
        _ => bail!(
            "function {function} has several binaries that each declare its handler ({}): fmerge cannot tell which one is the function\n\
             fix: keep `fmerge_runtime::function!(handler)` in one binary only",
            declaring
                .iter()
                .map(|d| d.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Flags in the user's RUSTFLAGS that would undo what the merge relies on.
fn check_user_rustflags(flags: &str) -> Result<()> {
    let words: Vec<&str> = flags.split_whitespace().collect();
    let joined: Vec<String> = words
        .windows(2)
        .map(|w| format!("{}{}", w[0], w[1]))
        .chain(words.iter().map(|w| w.to_string()))
        .collect();
    if let Some(flag) = joined.iter().find(|w| w.contains("panic=abort")) {
        bail!(
            "RUSTFLAGS sets `{flag}`: in a merged binary one callee's panic would abort the caller's process too, \
             where unmerged it only fails that callee's call\n\
             fix: drop -C panic=abort from RUSTFLAGS for fmerge (fmerge builds with panic = \"unwind\" and isolates each callee's panics)"
        );
    }
    if let Some(flag) = joined.iter().find(|w| {
        (w.contains("-Clto") && !w.ends_with("=off") && !w.ends_with("=no"))
            || w.contains("-Cembed-bitcode=no")
    }) {
        bail!(
            "RUSTFLAGS sets `{flag}`, which stops rustc writing the per-crate bitcode fmerge merges\nfix: drop it from RUSTFLAGS when running fmerge (fmerge does its own LTO)"
        );
    }
    Ok(())
}

/// Reads every unit's bitcode, in parallel: the files are independent and
/// reading them is most of the I/O of a merge.
pub fn read_bitcode(units: &[Unit]) -> Result<Vec<Vec<u8>>> {
    units
        .par_iter()
        .map(|u| {
            std::fs::read(&u.bitcode)
                .with_context(|| format!("cannot read bitcode {}", u.bitcode.display()))
        })
        .collect()
}

fn push_unique(list: &mut Vec<String>, value: String) {
    if !list.contains(&value) {
        list.push(value);
    }
}

/// Cargo reports a bin by its uplifted path, a hard link of
/// `deps/<crate>-<hash>`; the bitcode is `deps/<crate>-<hash>.bc`.
fn bin_bitcode(exe: &Path, crate_name: &str) -> Result<PathBuf> {
    let deps = exe
        .parent()
        .map(|d| d.join("deps"))
        .context("binary path has no parent")?;
    let inode = std::fs::metadata(exe)
        .with_context(|| format!("cannot stat {}", exe.display()))?
        .ino();
    let prefix = format!("{crate_name}-");
    for entry in
        std::fs::read_dir(&deps).with_context(|| format!("cannot read {}", deps.display()))?
    {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with(&prefix)
            && path.extension().is_none()
            && std::fs::metadata(&path)?.ino() == inode
        {
            return Ok(path.with_extension("bc"));
        }
    }
    bail!(
        "cannot find the bitcode of {crate_name} in {}: no deps/{prefix}* is the same file as {}",
        deps.display(),
        exe.display()
    )
}

#[cfg(test)]
mod tests;
