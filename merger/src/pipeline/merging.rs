//! One group's merge after the shared cargo build, stage by stage: the
//! cache (`caching.rs`), the IR stages (`ir_stage.rs`), codegen (with
//! `--lto off`, of what the merge changed only: `reusing.rs`) and the
//! native link, which this file holds with the merge's own state.

mod caching;
mod ir_stage;
mod reusing;

use super::shared::Shared;
use super::stages::{CARGO, CODEGEN, EMIT, NATIVE_LINK, OPTIMIZE, READ, StageTime};
use super::{MergedGroup, Options, Remembered};
use crate::progress::Progress;
use anyhow::Result;
use fmerge_cargo::emit;
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{artifact, cache, native, objects, resolve};
use fmerge_ir as ir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// One merge under way: its options, where things go, and the timings so far.
pub(crate) struct Merging<'a> {
    opts: &'a Options,
    progress: Progress,
    timings: Vec<StageTime>,
    toolchain: Toolchain,
    pub(crate) members: resolve::Members,
    name: String,
    /// fmerge's own files for this merge (objects, probe, cache).
    work: PathBuf,
    binary: PathBuf,
    ll: PathBuf,
    lto: ir::Lto,
    /// What identifies fmerge and rustc, for the caches' keys ([`tools`]).
    tools: Vec<String>,
    objects: objects::Cache,
    started: Instant,
    /// The groups merging now, this one included: they share the codegen threads.
    active: &'a AtomicUsize,
    /// Each watchdog-process member's of-watchdog mode, where known: its
    /// stack entry's, else its package's Dockerfile's.
    modes: BTreeMap<String, String>,
    /// The members whose `handle` the build exports (`Shared::handles`).
    handles: &'a BTreeSet<String>,
}

impl<'a> Merging<'a> {
    /// Decides where this group's files go.
    pub(crate) fn new(
        opts: &'a Options,
        shared: &'a Shared,
        members: resolve::Members,
        progress: Progress,
    ) -> Self {
        let name = opts.label();
        let target_dir = shared.target_dir.clone();
        let out_dir = opts
            .out
            .clone()
            .unwrap_or_else(|| target_dir.join("fmerge").join(&name));
        let lto = lto(opts, &members, &progress);
        Merging {
            opts,
            timings: vec![StageTime {
                stage: CARGO,
                took: shared.built,
            }],
            toolchain: shared.toolchain.clone(),
            work: target_dir.join("fmerge").join("work").join(&name),
            binary: out_dir.join(&name),
            ll: out_dir.join(format!("{name}.ll")),
            name,
            members,
            lto,
            progress,
            tools: caching::tools(&shared.toolchain),
            objects: objects::Cache::new(&target_dir),
            started: Instant::now(),
            active: &shared.active,
            modes: shared
                .modes
                .iter()
                .chain(&opts.modes)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            handles: &shared.handles,
        }
    }

    /// The stages after the cargo build, on the units this group links.
    pub(crate) fn merge(
        self,
        emitted: &emit::Emitted,
        rewrites: Vec<ir::Rewrite>,
    ) -> Result<MergedGroup> {
        // The work dir (cache, probe, objects) is this group's name's alone.
        let _held = crate::bitcode::hold(&self.work, "merging the same group", &self.progress)?;
        let active = self.active;
        active.fetch_add(1, Ordering::SeqCst);
        let merged = self.merge_counted(emitted, rewrites);
        active.fetch_sub(1, Ordering::SeqCst);
        merged
    }

    fn merge_counted(
        mut self,
        emitted: &emit::Emitted,
        rewrites: Vec<ir::Rewrite>,
    ) -> Result<MergedGroup> {
        let read = Instant::now();
        let bitcode = emit::read_bitcode(&emitted.units)?;
        let key = self.cache_key(emitted, &bitcode);
        self.timings.push(StageTime {
            stage: READ,
            took: read.elapsed(),
        });
        if let Some(kept) = self.cached(&key) {
            let launcher = self.launcher()?;
            return Ok(self.finish(emitted, kept, launcher, true));
        }
        let probe = self.probe();
        let reuse = self.lto.reuses();
        let merged = self.merge_ir(emitted, bitcode, rewrites, reuse)?;
        let outcome = Remembered {
            settings: merged.settings.clone(),
            native_libs: emitted.native.libs.clone(),
            warnings: merged.warnings.clone(),
        };
        let own_allocator = merged.allocator.is_some();
        self.write_ll(&merged)?;
        let shim = match self.members.caller.form {
            resolve::Form::Process | resolve::Form::Http => Some(self.shim(&merged)?),
            resolve::Form::Runtime => None,
        };
        let (mut objects, rlibs) = match reuse {
            true => self.compile_reusing(merged, emitted)?,
            false => (self.compile(merged)?, Vec::new()),
        };
        objects.extend(shim);
        self.link(probe, &objects, &rlibs, emitted, own_allocator)?;
        cache::store(&self.work, &key, &self.binary, &outcome)?;
        let launcher = self.launcher()?;
        Ok(self.finish(emitted, outcome, launcher, false))
    }

    /// The IR stages alone, on the units this group links ([`super::dry_run()`]):
    /// `Ok(Some(reason))` when the build's passes refuse the group; nothing
    /// is compiled or written.
    pub(crate) fn dry_run(
        mut self,
        emitted: &emit::Emitted,
        rewrites: Vec<ir::Rewrite>,
    ) -> Result<Option<String>> {
        let bitcode = emit::read_bitcode(&emitted.units)?;
        let reuse = self.lto.reuses();
        Ok(self
            .merge_ir(emitted, bitcode, rewrites, reuse)
            .err()
            .map(|e| format!("{e:#}")))
    }

    /// Asks rustc how it links a binary, in a process of its own, meanwhile.
    fn probe(&self) -> std::thread::JoinHandle<Result<native::Probe>> {
        let (work, toolchain) = (self.work.clone(), self.toolchain.clone());
        std::thread::spawn(move || native::probe(&work, &toolchain))
    }

    fn target(&self) -> ir::Target<'_> {
        ir::Target {
            triple: &self.toolchain.triple,
            opt_level: self.opts.opt_level,
        }
    }

    /// The merged module as readable IR (`--emit-ll`), written atomically.
    fn write_ll(&self, merged: &ir::MergedModule) -> Result<()> {
        if self.opts.emit_ll {
            let temp = artifact::temp_beside(&self.ll)?;
            merged.write_ll(&temp)?;
            artifact::commit(temp, &self.ll, 0o644)?;
        }
        Ok(())
    }

    /// Optimizes and compiles the merged module; `-j` (or the cores) caps the
    /// threads, shared with the groups compiling beside it.
    fn compile(&mut self, merged: ir::MergedModule) -> Result<Vec<PathBuf>> {
        let opt_level = self.opts.opt_level;
        let label = match self.lto {
            ir::Lto::Fat => {
                format!("optimizing (O{opt_level}, LTO over the merged module) and compiling")
            }
            ir::Lto::Off | ir::Lto::Own => {
                unreachable!("the reuse path compiles in compile_reusing")
            }
        };
        let stage = self.progress.stage(&label, None);
        let objects = merged.compile(&ir::Compile {
            target: &self.target(),
            lto: self.lto,
            threads: self.threads(),
            dir: &self.work,
            stem: &self.name,
        })?;
        let summary = format!(
            "optimized in {:.1}s, {} object(s) in {:.1}s",
            objects.optimized.as_secs_f64(),
            objects.paths.len(),
            objects.emitted.as_secs_f64()
        );
        self.timings.push(StageTime {
            stage: CODEGEN,
            took: stage.done(&summary),
        });
        self.timings.push(StageTime {
            stage: OPTIMIZE,
            took: objects.optimized,
        });
        self.timings.push(StageTime {
            stage: EMIT,
            took: objects.emitted,
        });
        Ok(objects.paths)
    }

    /// At most this many threads compile: `-j` (or the cores), shared with
    /// the groups compiling beside this one.
    fn threads(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (self.opts.cargo.jobs.map_or(cores, |j| j.min(cores))
            / self.active.load(Ordering::SeqCst).max(1))
        .max(1)
    }

    /// The native link, into a temporary name first.
    fn link(
        &mut self,
        probe: std::thread::JoinHandle<Result<native::Probe>>,
        objects: &[PathBuf],
        rlibs: &[PathBuf],
        emitted: &emit::Emitted,
        own_allocator: bool,
    ) -> Result<()> {
        let stage = self.progress.stage("linking the binary", None);
        let script = self.work.join("merged.ver");
        let policy = match self.members.caller.form {
            resolve::Form::Runtime => crate::assets::VERSION_SCRIPT,
            resolve::Form::Process | resolve::Form::Http => crate::assets::PROCESS_VERSION_SCRIPT,
        };
        std::fs::write(&script, policy)?;
        let mut probe = probe
            .join()
            .map_err(|_| anyhow::anyhow!("fmerge crashed while asking rustc how it links"))??;
        if own_allocator {
            probe.shim = native::global_allocator_shim(&self.work, &self.toolchain)?;
        }
        let temp = artifact::temp_beside(&self.binary)?;
        native::link(&probe, objects, rlibs, &emitted.native, &script, &temp)?;
        note_native_libs(&self.progress, &emitted.native.libs);
        artifact::commit(temp, &self.binary, 0o755)?;
        let size = std::fs::metadata(&self.binary).map_or(0, |m| m.len());
        let summary = format!("{:.1} MiB", size as f64 / 1048576.0);
        self.timings.push(StageTime {
            stage: NATIVE_LINK,
            took: stage.done(&summary),
        });
        Ok(())
    }

    fn finish(
        self,
        emitted: &emit::Emitted,
        outcome: Remembered,
        launcher: Option<PathBuf>,
        cached: bool,
    ) -> MergedGroup {
        let unmerged = emitted.binaries.clone().into_iter().collect();
        MergedGroup {
            ll: self.opts.emit_ll.then_some(self.ll),
            members: self.members.functions().map(|f| f.name.clone()).collect(),
            settings: outcome.settings,
            unmerged,
            native_libs: outcome.native_libs,
            timings: self.timings,
            took: self.started.elapsed(),
            units: emitted.units.len(),
            warnings: outcome.warnings,
            cached,
            name: self.name,
            binary: self.binary,
            launcher,
        }
    }
}

/// The LTO mode: the option, or what the release profile asks for.
fn lto(opts: &Options, members: &resolve::Members, progress: &Progress) -> ir::Lto {
    let release = emit::Release::read(&members.manifest_path);
    let lto = opts.lto().unwrap_or(if release.lto {
        ir::Lto::Fat
    } else {
        ir::Lto::Off
    });
    for note in release.notes(lto == ir::Lto::Fat) {
        progress.note(&note);
    }
    lto
}

/// Says which native libraries the binary links (also when it was kept).
fn note_native_libs(progress: &Progress, libs: &[String]) {
    if !libs.is_empty() {
        progress.note(&format!("linked native libraries: {}", libs.join(", ")));
    }
}
