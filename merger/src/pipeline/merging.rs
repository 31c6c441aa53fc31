//! One group's merge after the shared cargo build: cache, IR, codegen
//! (with `--lto off`, of what the merge changed only: `reusing.rs`),
//! native link.

mod reusing;

use super::stages::{CARGO, CODEGEN, EMIT, LINK_IR, NATIVE_LINK, OPTIMIZE, PASSES, READ};
use super::{Merged, Options, Remembered, Shared};
use crate::progress::Progress;
use anyhow::Result;
use fmerge_cargo::emit::{self, Unit};
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{artifact, cache, native, objects, resolve};
use fmerge_ir::{self as ir, Setting};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One merge under way: its options, where things go, and the timings so far.
pub(crate) struct Merging<'a> {
    opts: &'a Options,
    progress: Progress,
    timings: Vec<(&'static str, Duration)>,
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
            timings: vec![(CARGO, shared.built)],
            toolchain: shared.toolchain.clone(),
            work: target_dir.join("fmerge").join("work").join(&name),
            binary: out_dir.join(&name),
            ll: out_dir.join(format!("{name}.ll")),
            name,
            members,
            lto,
            progress,
            tools: tools(&shared.toolchain),
            objects: objects::Cache::new(&target_dir),
            started: Instant::now(),
            active: &shared.active,
        }
    }

    /// The stages after the cargo build, on the units this group links.
    pub(crate) fn merge(
        self,
        emitted: &emit::Emitted,
        rewrites: Vec<ir::Rewrite>,
    ) -> Result<Merged> {
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
    ) -> Result<Merged> {
        let read = Instant::now();
        let bitcode = emit::read_bitcode(&emitted.units)?;
        let key = self.cache_key(emitted, &bitcode);
        self.timings.push((READ, read.elapsed()));
        if let Some(kept) = self.cached(&key) {
            return Ok(self.finish(emitted, kept, true));
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
        let (objects, rlibs) = match reuse {
            true => self.compile_reusing(merged, emitted)?,
            false => (self.compile(merged)?, Vec::new()),
        };
        self.link(probe, &objects, &rlibs, emitted, own_allocator)?;
        cache::store(&self.work, &key, &self.binary, &outcome)?;
        Ok(self.finish(emitted, outcome, false))
    }

    /// The IR stages alone, on the units this group links ([`super::check`]):
    /// `Ok(Some(reason))` when the build's passes refuse the group; nothing
    /// is compiled or written.
    pub(crate) fn check(
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

    fn cache_key(&self, emitted: &emit::Emitted, bitcode: &[Vec<u8>]) -> String {
        let labels: Vec<String> = emitted.units.iter().map(unit_label).collect();
        let inputs = cache_inputs(self.opts, self.lto, &self.tools, emitted);
        cache::key(&inputs, &labels, bitcode)
    }

    /// What the last merge of this name remembers, if nothing changed since.
    fn cached(&self, key: &str) -> Option<Remembered> {
        if self.opts.force {
            return None;
        }
        let ll = self.opts.emit_ll.then_some(self.ll.as_path());
        let kept: Remembered = cache::lookup(&self.work, key, &self.binary, ll)?;
        self.progress.note(
            "nothing changed since the last merge (same bitcode and options): keeping the binary",
        );
        for w in &kept.warnings {
            self.progress.note(&format!("warning: {w}"));
        }
        note_settings(&self.progress, &kept.settings, &self.opts.caller);
        note_native_libs(&self.progress, &kept.native_libs);
        Some(kept)
    }

    /// Asks rustc how it links a binary, in a process of its own, meanwhile.
    fn probe(&self) -> std::thread::JoinHandle<Result<native::Probe>> {
        let (work, toolchain) = (self.work.clone(), self.toolchain.clone());
        std::thread::spawn(move || native::probe(&work, &toolchain))
    }

    /// The IR stages: each crate through its passes ("reading IR"), then the
    /// conclusions ("checking the merge"); with a linked module (`--lto
    /// fat|thin`, `--emit-ll`), each crate also goes into it ("linking IR")
    /// and the module passes follow ("rewriting the module"). What the passes
    /// find is said as they find it.
    fn merge_ir(
        &mut self,
        emitted: &emit::Emitted,
        bitcode: Vec<Vec<u8>>,
        rewrites: Vec<ir::Rewrite>,
        reuse: bool,
    ) -> Result<ir::Merged> {
        let facts = ir::Facts {
            caller: self.opts.caller.clone(),
            callees: self.members.callee_names(),
            rewrites,
            allow_shared_static: self.opts.sharing.allow_shared_static.clone(),
            native_refs: native::undefined_in_static_libs(&emitted.native),
        };
        let units = ir_units(&self.members, emitted, bitcode, self.lto);
        let count = units.len();
        let target = self.target();
        let (progress, mut link_ir) = (&self.progress, None);
        let (reading, passing) = match ir::links(reuse, self.opts.emit_ll) {
            true => ("linking IR", "rewriting the module"),
            false => ("reading IR", "checking the merge"),
        };
        let mut stage = Some(progress.stage(reading, Some(count as u64)));
        let merged = ir::merge(
            units,
            &facts,
            &target,
            reuse,
            self.opts.emit_ll,
            &mut |event| match event {
                ir::Event::Unit => stage.iter().for_each(|s| s.inc()),
                ir::Event::Linked => {
                    let linked = stage.take().expect("linked once");
                    link_ir = Some(linked.done(&format!("{count} units")));
                    stage = Some(progress.stage(passing, None));
                }
                ir::Event::Warning(w) => progress.note(&format!("warning: {w}")),
                ir::Event::Note(n) => progress.note(n),
            },
        )?;
        let summary = match reuse {
            true => format!("{} routes", merged.routes),
            false => format!(
                "{} symbols internalized, {} routes",
                merged.internalized, merged.routes
            ),
        };
        self.timings.extend(link_ir.map(|t| (LINK_IR, t)));
        self.timings
            .push((PASSES, stage.expect("linked").done(&summary)));
        note_settings(&self.progress, &merged.settings, &self.opts.caller);
        Ok(merged)
    }

    fn target(&self) -> ir::Target<'_> {
        ir::Target {
            triple: &self.toolchain.triple,
            opt_level: self.opts.opt_level,
        }
    }

    /// The merged module as readable IR (`--emit-ll`), written atomically.
    fn write_ll(&self, merged: &ir::Merged) -> Result<()> {
        if self.opts.emit_ll {
            let temp = artifact::temp_beside(&self.ll)?;
            merged.write_ll(&temp)?;
            artifact::commit(temp, &self.ll, 0o644)?;
        }
        Ok(())
    }

    /// Optimizes and compiles the merged module; `-j` (or the cores) caps the
    /// threads, shared with the groups compiling beside it.
    fn compile(&mut self, merged: ir::Merged) -> Result<Vec<PathBuf>> {
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
        self.timings.push((CODEGEN, stage.done(&summary)));
        self.timings.push((OPTIMIZE, objects.optimized));
        self.timings.push((EMIT, objects.emitted));
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
        std::fs::write(&script, crate::assets::VERSION_SCRIPT)?;
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
        self.timings.push((NATIVE_LINK, stage.done(&summary)));
        Ok(())
    }

    fn finish(self, emitted: &emit::Emitted, outcome: Remembered, cached: bool) -> Merged {
        let mut unmerged: Vec<_> = emitted.binaries.clone().into_iter().collect();
        unmerged.sort();
        Merged {
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

/// Each crate's bitcode, with what the passes must know about it.
fn ir_units(
    members: &resolve::Members,
    emitted: &emit::Emitted,
    bitcode: Vec<Vec<u8>>,
    lto: ir::Lto,
) -> Vec<ir::Unit> {
    emitted
        .units
        .iter()
        .zip(bitcode)
        .map(|(unit, bitcode)| {
            let package = members.local.get(&unit.package_id).cloned();
            ir::Unit {
                crate_name: unit.crate_name.clone(),
                local: package.as_deref().is_some_and(|p| p != resolve::RUNTIME),
                joint: lto == ir::Lto::Own && members.local_on_top.contains(&unit.package_id),
                package,
                function: unit.function.clone(),
                owners: resolve::owners(members.functions(), &unit.package_id),
                unoptimized: unit.unoptimized,
                object: unit.has_compiled(),
                bitcode,
                path: unit.bitcode.clone(),
            }
        })
        .collect()
}

/// Says which native libraries the binary links (also when it was kept).
fn note_native_libs(progress: &Progress, libs: &[String]) {
    if !libs.is_empty() {
        progress.note(&format!("linked native libraries: {}", libs.join(", ")));
    }
}

/// Says which variable each merged function reads each setting from.
fn note_settings(progress: &Progress, settings: &[Setting], caller: &str) {
    for s in settings {
        let how = if s.from_env {
            "std::env, no default".to_string()
        } else {
            format!("default {}", s.default)
        };
        progress.note(&format!(
            "config: {} reads {} ({how})",
            s.function,
            s.variable(caller)
        ));
    }
}

/// What identifies the tools, for every cache key: fmerge's version and
/// build, and rustc's release.
fn tools(toolchain: &Toolchain) -> Vec<String> {
    vec![
        format!("fmerge {}", env!("CARGO_PKG_VERSION")),
        cache::own_build(),
        format!("rustc {}", toolchain.release),
    ]
}

/// Everything that decides the merged binary, for the merge cache: the
/// options that change it ([`Options::key_inputs`]), the tools and the
/// native libraries.
fn cache_inputs(
    opts: &Options,
    lto: ir::Lto,
    tools: &[String],
    emitted: &emit::Emitted,
) -> Vec<String> {
    let mut inputs = tools.to_vec();
    inputs.extend(opts.key_inputs(lto));
    inputs.extend(
        emitted
            .native
            .libs
            .iter()
            .chain(&emitted.native.search)
            .map(|l| format!("native {l}")),
    );
    inputs
}

fn unit_label(unit: &Unit) -> String {
    format!("{} {:?}", unit.crate_name, unit.function)
}
