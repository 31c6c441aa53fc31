//! The whole merge, stage by stage; each stage lives in its own crate and
//! module, and this one only sequences them:
//!
//! resolve → emit (cargo) → cache → [`ir::merge`] (per crate: passes,
//! link; then the module passes) → [`ir::Merged::compile`] → native link.

use crate::progress::Progress;
use anyhow::{Context as _, Result, bail};
use fmerge_cargo::emit::{self, Unit};
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{artifact, cache, native, resolve, workspace};
use fmerge_ir::{self as ir, Setting};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::options::Options;

/// A finished merge.
#[derive(Debug, Clone)]
pub struct Merged {
    pub name: String,
    pub binary: PathBuf,
    pub ll: Option<PathBuf>,
    /// Caller first, then the callees.
    pub members: Vec<String>,
    /// The settings each member reads, with the variable it reads them from.
    pub settings: Vec<Setting>,
    /// The functions' own unmerged binaries from the same build.
    pub unmerged: Vec<(String, PathBuf)>,
    /// The native libraries linked in (`KIND=NAME`): build scripts' and `#[link]`'s.
    pub native_libs: Vec<String>,
    pub timings: Vec<(&'static str, Duration)>,
    pub units: usize,
    /// Differences from the unmerged functions that fmerge could not remove
    /// and did not refuse; each says what changes.
    pub warnings: Vec<String>,
    /// The binary of the last merge was kept: nothing had changed.
    pub cached: bool,
}

/// Checks the options that need no build ([`Options::check`]). [`build`]
/// runs it too; the CLI runs it before anything else.
pub fn validate(opts: &Options) -> Result<Vec<ir::Rewrite>> {
    opts.check()
}

/// What a merge remembers for a re-merge that changes nothing.
#[derive(serde::Serialize, serde::Deserialize)]
struct Remembered {
    settings: Vec<Setting>,
    native_libs: Vec<String>,
    warnings: Vec<String>,
}

/// The merge, stage by stage: the one-group case of [`build_many`].
pub fn build(opts: &Options) -> Result<Merged> {
    let mut merged = build_many(std::slice::from_ref(opts))?;
    Ok(merged.remove(0))
}

/// Several groups from ONE cargo build: the union of their members is
/// resolved and built once, then each group is merged from the units its
/// own members link (shared units are read, never changed), in parallel
/// (at most `-j` at once, each with its own LLVM contexts). The shared
/// options (workspace, target dir, `-j`, quiet) are the first group's.
pub fn build_many(groups: &[Options]) -> Result<Vec<Merged>> {
    let Some(first) = groups.first() else {
        bail!("no groups to build: the plan has no [[group]]");
    };
    let many = groups.len() > 1;
    let mut rewrites = Vec::new();
    let mut names = BTreeSet::new();
    for opts in groups {
        let label = opts.label();
        rewrites.push(validate(opts).with_context(|| label.clone())?);
        if !names.insert(label.clone()) {
            bail!("two groups are both named {label}: give each group its own `name`");
        }
        if many && !opts.rewrites.is_empty() {
            bail!(
                "{label}: --rewrite builds the callees' crates unoptimized, which would change the other groups' shared build; fix: build this group on its own (`fmerge build --config`)"
            );
        }
    }
    let shared = Shared::start(first, groups)?;
    let emitted = shared.cargo_build(first, !rewrites[0].is_empty())?;
    let merge = |(opts, rewrites): (&Options, Vec<ir::Rewrite>)| -> Result<Merged> {
        let plan = subset(&shared.plan, opts)?;
        let progress = if many {
            shared.progress.for_group(&opts.label())
        } else {
            shared.progress.clone()
        };
        let run = Run::new(opts, &shared, plan, progress);
        if many {
            let own = own_units(&run.plan, &emitted);
            run.merge(&own, rewrites)
                .with_context(|| format!("group {}", opts.label()))
        } else {
            run.merge(&emitted, rewrites)
        }
    };
    let work: Vec<_> = groups.iter().zip(rewrites).collect();
    if !many {
        return work.into_iter().map(merge).collect();
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(first.jobs.unwrap_or(cores).clamp(1, groups.len()))
        .build()
        .context("cannot start the merge threads")?;
    use rayon::prelude::*;
    let results: Vec<Result<Merged>> = pool.install(|| work.into_par_iter().map(merge).collect());
    let (merged, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(|r| r.is_ok());
    if !failed.is_empty() {
        let errors: Vec<String> = failed
            .into_iter()
            .filter_map(|r| r.err())
            .map(|e| format!("{e:#}"))
            .collect();
        bail!(
            "{} of {} groups failed:\n  {}",
            errors.len(),
            groups.len(),
            errors.join("\n  ")
        );
    }
    Ok(merged.into_iter().map(|r| r.expect("ok")).collect())
}

/// One group's part of the union's plan (no second `cargo metadata`).
fn subset(union: &resolve::Plan, opts: &Options) -> Result<resolve::Plan> {
    let find = |name: &str| {
        union
            .functions()
            .find(|f| f.name == name)
            .cloned()
            .with_context(|| format!("function {name} was not resolved"))
    };
    Ok(resolve::Plan {
        caller: find(&opts.caller)?,
        callees: opts
            .callees
            .iter()
            .map(|c| find(c))
            .collect::<Result<_>>()?,
        manifest_path: union.manifest_path.clone(),
        workspace_root: union.workspace_root.clone(),
        target_dir: union.target_dir.clone(),
        local: union.local.clone(),
    })
}

/// The units of a shared build that one group's members link: their own
/// binaries and the crates in their closures.
fn own_units(plan: &resolve::Plan, all: &emit::Emitted) -> emit::Emitted {
    let member = |name: &str| plan.functions().any(|f| f.name == name);
    emit::Emitted {
        units: all
            .units
            .iter()
            .filter(|u| match &u.function {
                Some(f) => member(f),
                None => plan.functions().any(|f| f.closure.contains(&u.package_id)),
            })
            .cloned()
            .collect(),
        native: all.native.clone(),
        triple: all.triple.clone(),
        binaries: all
            .binaries
            .iter()
            .filter(|(f, _)| member(f))
            .map(|(f, p)| (f.clone(), p.clone()))
            .collect(),
    }
}

/// What the groups of one build share: the toolchain, the union's plan and
/// the cargo build.
struct Shared {
    progress: Progress,
    toolchain: Toolchain,
    plan: resolve::Plan,
    target_dir: PathBuf,
    built: std::sync::OnceLock<Duration>,
}

impl Shared {
    /// Resolves every group's members at once.
    fn start(first: &Options, groups: &[Options]) -> Result<Self> {
        let progress = Progress::new(first.quiet);
        let toolchain = Toolchain::detect()?;
        toolchain.check_release(fmerge_ir::RUSTC_RELEASE)?;
        let (caller, callees) = if let [one] = groups {
            (one.caller.clone(), one.callees.clone())
        } else {
            let mut all: Vec<String> = Vec::new();
            for name in groups
                .iter()
                .flat_map(|g| std::iter::once(&g.caller).chain(&g.callees))
            {
                if !all.contains(name) {
                    all.push(name.clone());
                }
            }
            (all.remove(0), all)
        };
        let mut union = first.clone();
        union.sources = Vec::new();
        for source in groups.iter().flat_map(|g| &g.sources) {
            if !union.sources.iter().any(|s| s.function == source.function) {
                union.sources.push(source.clone());
            }
        }
        let (manifest, target_dir) = workspace(&union, &progress)?;
        let plan = resolve::run(manifest.as_deref(), &caller, &callees)?;
        let target_dir = target_dir.unwrap_or_else(|| plan.target_dir.clone());
        Ok(Shared {
            progress,
            toolchain,
            plan,
            target_dir,
            built: std::sync::OnceLock::new(),
        })
    }

    /// One cargo build, bitcode for every crate; with rewrites, the callees'
    /// own crates are built unoptimized (see fmerge_ir's `endpoints`).
    fn cargo_build(&self, opts: &Options, rewrites: bool) -> Result<emit::Emitted> {
        let profile = emit::Profile {
            unoptimized: if rewrites {
                self.plan.callee_owned_local()
            } else {
                BTreeSet::new()
            },
        };
        let stage = self.progress.stage(
            &format!(
                "building {} functions with cargo",
                self.plan.functions().count()
            ),
            None,
        );
        let emitted = emit::run(
            &self.plan,
            &emit::build_dir(&self.target_dir),
            opts.jobs,
            &profile,
            &self.toolchain,
        )?;
        let summary = format!("{} units", emitted.units.len());
        let _ = self.built.set(stage.done(&summary));
        Ok(emitted)
    }
}

/// One merge under way: its options, where things go, and the timings so far.
struct Run<'a> {
    opts: &'a Options,
    progress: Progress,
    timings: Vec<(&'static str, Duration)>,
    toolchain: Toolchain,
    plan: resolve::Plan,
    name: String,
    /// fmerge's own files for this merge (objects, probe, cache).
    work: PathBuf,
    binary: PathBuf,
    ll: PathBuf,
    lto: ir::Lto,
}

impl<'a> Run<'a> {
    /// Decides where this group's files go.
    fn new(opts: &'a Options, shared: &Shared, plan: resolve::Plan, progress: Progress) -> Self {
        let name = opts.label();
        let target_dir = shared.target_dir.clone();
        let out_dir = opts
            .out
            .clone()
            .unwrap_or_else(|| target_dir.join("fmerge").join(&name));
        let lto = lto(opts, &plan, &progress);
        Run {
            opts,
            timings: shared
                .built
                .get()
                .map(|t| ("cargo build", *t))
                .into_iter()
                .collect(),
            toolchain: shared.toolchain.clone(),
            work: target_dir.join("fmerge").join("work").join(&name),
            binary: out_dir.join(&name),
            ll: out_dir.join(format!("{name}.ll")),
            name,
            plan,
            lto,
            progress,
        }
    }

    /// The stages after the cargo build, on the units this group links.
    fn merge(mut self, emitted: &emit::Emitted, rewrites: Vec<ir::Rewrite>) -> Result<Merged> {
        let bitcode = emit::read_bitcode(&emitted.units)?;
        let key = self.cache_key(emitted, &bitcode);
        if let Some(kept) = self.cached(&key) {
            return Ok(self.finish(emitted, kept, true));
        }
        let probe = self.probe();
        let merged = self.merge_ir(emitted, bitcode, rewrites)?;
        let outcome = Remembered {
            settings: merged.settings.clone(),
            native_libs: emitted.native.libs.clone(),
            warnings: merged.warnings.clone(),
        };
        let own_allocator = merged.allocator.is_some();
        self.write_ll(&merged)?;
        let objects = self.compile(merged)?;
        self.link(probe, &objects, emitted, own_allocator)?;
        cache::store(&self.work, &key, &self.binary, &outcome)?;
        Ok(self.finish(emitted, outcome, false))
    }

    fn cache_key(&self, emitted: &emit::Emitted, bitcode: &[Vec<u8>]) -> String {
        let labels: Vec<String> = emitted.units.iter().map(unit_label).collect();
        let inputs = cache_inputs(self.opts, self.lto, &self.toolchain, emitted);
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

    /// The IR stages: each crate through its passes and into the merged
    /// module ("linking IR"), then the module passes ("rewriting the
    /// module"), with what they find said as they find it.
    fn merge_ir(
        &mut self,
        emitted: &emit::Emitted,
        bitcode: Vec<Vec<u8>>,
        rewrites: Vec<ir::Rewrite>,
    ) -> Result<ir::Merged> {
        let facts = ir::Facts {
            caller: self.opts.caller.clone(),
            callees: self.plan.callee_names(),
            rewrites,
            allow_shared_static: self.opts.allow_shared_static.clone(),
            native_refs: native::undefined_in_static_libs(&emitted.native),
        };
        let units = ir_units(&self.plan, emitted, bitcode);
        let count = units.len();
        let target = self.target();
        let (progress, mut link_ir) = (&self.progress, None);
        let mut stage = Some(progress.stage("linking IR", Some(count as u64)));
        let merged = ir::merge(units, &facts, &target, &mut |event| match event {
            ir::Event::Unit => stage.iter().for_each(|s| s.inc()),
            ir::Event::Linked => {
                let linked = stage.take().expect("linked once");
                link_ir = Some(linked.done(&format!("{count} units")));
                stage = Some(progress.stage("rewriting the module", None));
            }
            ir::Event::Warning(w) => progress.note(&format!("warning: {w}")),
            ir::Event::Note(n) => progress.note(n),
        })?;
        let summary = format!(
            "{} symbols internalized, {} routes",
            merged.internalized, merged.routes
        );
        self.timings.extend(link_ir.map(|t| ("link IR", t)));
        self.timings
            .push(("passes", stage.expect("linked").done(&summary)));
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

    /// Optimizes and compiles the merged module; `-j` only caps the threads.
    fn compile(&mut self, merged: ir::Merged) -> Result<Vec<PathBuf>> {
        let opt_level = self.opts.opt_level;
        let label = match self.lto {
            ir::Lto::Fat => {
                format!("optimizing (O{opt_level}, LTO over the merged module) and compiling")
            }
            ir::Lto::Off => format!("compiling (O{opt_level}; each crate as rustc optimized it)"),
        };
        let stage = self.progress.stage(&label, None);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let objects = merged.compile(&ir::Compile {
            target: &self.target(),
            lto: self.lto,
            threads: self.opts.jobs.map_or(cores, |j| j.min(cores)).max(1),
            dir: &self.work,
            stem: &self.name,
        })?;
        let summary = format!(
            "optimized in {:.1}s, {} object(s) in {:.1}s",
            objects.optimized.as_secs_f64(),
            objects.paths.len(),
            objects.emitted.as_secs_f64()
        );
        self.timings.push(("codegen", stage.done(&summary)));
        self.timings.push(("optimize", objects.optimized));
        self.timings.push(("emit object", objects.emitted));
        Ok(objects.paths)
    }

    /// The native link, into a temporary name first.
    fn link(
        &mut self,
        probe: std::thread::JoinHandle<Result<native::Probe>>,
        objects: &[PathBuf],
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
        native::link(&probe, objects, &emitted.native, &script, &temp)?;
        note_native_libs(&self.progress, &emitted.native.libs);
        artifact::commit(temp, &self.binary, 0o755)?;
        let size = std::fs::metadata(&self.binary).map_or(0, |m| m.len());
        let summary = format!("{:.1} MiB", size as f64 / 1048576.0);
        self.timings.push(("native link", stage.done(&summary)));
        Ok(())
    }

    fn finish(self, emitted: &emit::Emitted, outcome: Remembered, cached: bool) -> Merged {
        let mut unmerged: Vec<_> = emitted.binaries.clone().into_iter().collect();
        unmerged.sort();
        Merged {
            ll: self.opts.emit_ll.then_some(self.ll),
            members: self.plan.functions().map(|f| f.name.clone()).collect(),
            settings: outcome.settings,
            unmerged,
            native_libs: outcome.native_libs,
            timings: self.timings,
            units: emitted.units.len(),
            warnings: outcome.warnings,
            cached,
            name: self.name,
            binary: self.binary,
        }
    }
}

/// Functions from separate projects are built in a workspace of fmerge's
/// own: its manifest and target dir; otherwise the options' own.
fn workspace(opts: &Options, progress: &Progress) -> Result<(Option<PathBuf>, Option<PathBuf>)> {
    let Some(caller) = opts.sources.first() else {
        return Ok((opts.manifest_path.clone(), opts.target_dir.clone()));
    };
    let target_dir = match &opts.target_dir {
        Some(dir) => dir.clone(),
        None => workspace::target_dir_of(&caller.manifest)?,
    };
    let generated = workspace::generate(
        &opts.sources,
        &workspace::dir_of(&target_dir, "build", &opts.sources),
    )?;
    for difference in &generated.lock_differences {
        progress.note(&format!("note: {difference}"));
    }
    Ok((Some(generated.manifest), Some(target_dir)))
}

/// The LTO mode: the option, or what the release profile asks for.
fn lto(opts: &Options, plan: &resolve::Plan, progress: &Progress) -> ir::Lto {
    let release = emit::Release::read(&plan.manifest_path);
    let lto = opts.lto.unwrap_or(if release.lto {
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
fn ir_units(plan: &resolve::Plan, emitted: &emit::Emitted, bitcode: Vec<Vec<u8>>) -> Vec<ir::Unit> {
    emitted
        .units
        .iter()
        .zip(bitcode)
        .map(|(unit, bitcode)| {
            let package = plan.local.get(&unit.package_id).cloned();
            ir::Unit {
                crate_name: unit.crate_name.clone(),
                local: package.as_deref().is_some_and(|p| p != resolve::RUNTIME),
                package,
                function: unit.function.clone(),
                owners: resolve::owners(plan.functions(), &unit.package_id),
                unoptimized: unit.unoptimized,
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

/// Everything that decides the merged binary, for the merge cache: the
/// options that change it ([`Options::key_inputs`]), the tools' versions and
/// the native libraries.
fn cache_inputs(
    opts: &Options,
    lto: ir::Lto,
    toolchain: &Toolchain,
    emitted: &emit::Emitted,
) -> Vec<String> {
    let mut inputs = vec![
        format!("fmerge {}", env!("CARGO_PKG_VERSION")),
        cache::own_build(),
        format!("rustc {}", toolchain.release),
    ];
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
