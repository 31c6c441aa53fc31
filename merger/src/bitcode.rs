//! The front half that `fmerge build` and `fmerge graph` share: the
//! toolchain checked, the functions found (in their workspace, or in one
//! fmerge generates for separate projects), resolved, and built by one
//! cargo build with bitcode for every crate.

use crate::progress::Progress;
use anyhow::Result;
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{emit, resolve, workspace};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Which functions to build, and where.
pub struct Input<'a> {
    pub caller: &'a str,
    pub callees: &'a [String],
    /// Functions from separate cargo projects, the caller first; empty: the
    /// functions are packages of the workspace at `manifest_path`.
    pub sources: &'a [workspace::FunctionProject],
    pub manifest_path: Option<&'a Path>,
    pub target_dir: Option<&'a Path>,
    pub jobs: Option<usize>,
    /// What the build is for (`build`, `graph`): it names the generated
    /// workspace, so that a graph and a merge never share one.
    pub purpose: &'static str,
}

/// The functions, built.
pub struct Bitcode {
    pub toolchain: Toolchain,
    pub members: resolve::Members,
    pub target_dir: PathBuf,
    pub emitted: emit::Emitted,
    /// How long the cargo build took.
    pub took: Duration,
    /// The handler-library functions whose `handle` the build exports
    /// (`workspace::Generated::handles`).
    pub handles: std::collections::BTreeSet<String>,
    /// The generated workspace's lock (`hold`), for as long as what
    /// cargo built from it is read: until the binary is linked.
    pub held: Option<Arc<std::fs::File>>,
}

/// Checks the toolchain, resolves the functions and builds them, with the
/// release profile that `profile` chooses for the resolved functions.
pub fn build(
    input: &Input,
    progress: &Progress,
    profile: impl FnOnce(&resolve::Members) -> Result<emit::Profile>,
) -> Result<Bitcode> {
    // `rustc -vV` (through rustup, a process of its own) runs while cargo resolves.
    let toolchain = std::thread::spawn(Toolchain::detect);
    // Held until what cargo built from the generated workspace has been
    // read (see `hold`): returned with the build.
    let mut held = None;
    let mut handles = Default::default();
    // Absolute: cargo reports its artifacts' paths so, and they are told
    // apart from build scripts' by being under this folder.
    let given_target = input.target_dir.map(std::path::absolute).transpose()?;
    let (manifest, target_dir) = match input.sources.first() {
        None => (input.manifest_path.map(Path::to_path_buf), given_target),
        Some(caller) => {
            let target_dir = match given_target {
                Some(dir) => dir,
                None => workspace::target_dir_of(&caller.manifest)?,
            };
            let dir = workspace::dir_of(&target_dir, input.purpose, input.sources);
            held = Some(hold(&dir, "building the same functions", progress)?);
            let generated = workspace::generate(input.sources, &dir)?;
            for difference in &generated.lock_differences {
                progress.note(&format!("note: {difference}"));
            }
            handles = generated.handles;
            (Some(generated.manifest), Some(target_dir))
        }
    };
    let members = resolve::run(manifest.as_deref(), input.caller, input.callees);
    let toolchain = toolchain
        .join()
        .map_err(|_| anyhow::anyhow!("`rustc -vV` crashed"))??;
    toolchain.check_release(fmerge_ir::RUSTC_RELEASE)?;
    let members = members?;
    let target_dir = target_dir.unwrap_or_else(|| members.target_dir.clone());
    let profile = profile(&members)?;
    let stage = progress.stage(
        &format!(
            "building {} functions with cargo",
            members.functions().count()
        ),
        None,
    );
    let emitted = emit::run(
        &members,
        &emit::build_dir(&target_dir),
        input.jobs,
        progress.quiet(),
        &profile,
        &toolchain,
    )?;
    let took = stage.done(&format!("{} units", emitted.units.len()));
    Ok(Bitcode {
        toolchain,
        members,
        target_dir,
        emitted,
        took,
        handles,
        held,
    })
}

/// Locks `dir` (a file beside it) until the returned file is dropped, so
/// that two fmerge runs on the same functions in one target dir (two
/// terminals, parallel tests) take turns instead of writing over each
/// other's files mid-build: the generated workspace, which `generate`
/// writes afresh and cargo builds from, whose outputs the merge then reads
/// until the binary is linked, and a merge's work dir. In one process the
/// lock is shared: a second hold of a dir this process holds (a graph that
/// builds again in release) takes the same lock instead of waiting for
/// itself.
pub(crate) fn hold(dir: &Path, what: &str, progress: &Progress) -> Result<Arc<std::fs::File>> {
    static HELD: Mutex<Vec<(PathBuf, Weak<std::fs::File>)>> = Mutex::new(Vec::new());
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    held.retain(|(_, w)| w.strong_count() > 0);
    if let Some(file) = held
        .iter()
        .find(|(d, _)| d == dir)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(file);
    }
    let path = dir.with_extension("lock");
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::File::create(&path).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the lock file {}: {e}\nfix: make the target dir writable, or pass another with --target-dir",
            path.display()
        )
    })?;
    if file.try_lock().is_err() {
        progress.note(&format!(
            "waiting for another fmerge {what} ({})",
            dir.display()
        ));
        file.lock()?;
    }
    let file = Arc::new(file);
    held.push((dir.to_path_buf(), Arc::downgrade(&file)));
    Ok(file)
}
