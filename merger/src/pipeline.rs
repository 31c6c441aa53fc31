//! The whole merge, stage by stage; each stage lives in its own crate and
//! module, and this one only sequences them:
//!
//! resolve → emit (cargo) → per crate: parse, [`passes::per_crate`],
//! optimize if built unoptimized, link → [`passes::on_module`] → codegen →
//! native link.

use crate::progress::Progress;
use anyhow::{Result, bail};
use fmerge_cargo::emit::{self, Unit};
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{artifact, cache, native, resolve, workspace};
use fmerge_ir::passes::config::Setting;
use fmerge_ir::passes::{self, Crate, Facts, Found, endpoints};
use fmerge_ir::{Context, codegen, link};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What to merge, and how. The CLI and the config file both fill this in.
#[derive(Debug, Clone)]
pub struct Options {
    pub caller: String,
    pub callees: Vec<String>,
    /// The merged binary's name; `<caller>-merged` by default.
    pub name: Option<String>,
    /// Where the binary goes; `<target>/fmerge/<name>/` by default.
    pub out: Option<PathBuf>,
    pub manifest_path: Option<PathBuf>,
    /// The cargo target dir to build in; the workspace's by default.
    pub target_dir: Option<PathBuf>,
    /// `[CALLEE:]FROM=TO`, as given.
    pub rewrites: Vec<String>,
    pub emit_ll: bool,
    pub opt_level: u8,
    /// Whole-program LTO over the merged module; by default, what the
    /// workspace's `profile.release.lto` asks for (see [`codegen::Lto`]).
    pub lto: Option<codegen::Lto>,
    pub jobs: Option<usize>,
    pub quiet: bool,
    /// Statics (`crate::path::NAME`) or whole crates that merged functions
    /// may share, although each had its own copy unmerged.
    pub allow_shared_static: Vec<String>,
    /// Redo the merge even if nothing changed since the last one.
    pub force: bool,
    /// Functions from separate cargo projects (a stack.yml's handlers, or
    /// several `--manifest-path`s), the caller first: built in a workspace
    /// fmerge writes (see fmerge_cargo::workspace).
    pub sources: Vec<workspace::Source>,
}

impl Options {
    pub fn new(caller: &str, callees: &[&str]) -> Self {
        Options {
            caller: caller.into(),
            callees: callees.iter().map(|c| c.to_string()).collect(),
            name: None,
            out: None,
            manifest_path: None,
            target_dir: None,
            rewrites: Vec::new(),
            emit_ll: false,
            opt_level: 3,
            lto: None,
            jobs: None,
            quiet: false,
            allow_shared_static: Vec::new(),
            force: false,
            sources: Vec::new(),
        }
    }
}

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

/// Checks the options that need no build: the name and the rewrites'
/// syntax. [`build`] runs it too; the CLI runs it before anything else.
pub fn validate(opts: &Options) -> Result<Vec<endpoints::Rewrite>> {
    let members: Vec<String> = std::iter::once(&opts.caller)
        .chain(&opts.callees)
        .cloned()
        .collect();
    let rewrites = opts
        .rewrites
        .iter()
        .map(|r| endpoints::Rewrite::parse(r, &members))
        .collect::<Result<Vec<_>>>()?;
    for r in &rewrites {
        if r.callee.as_deref() == Some(opts.caller.as_str()) {
            bail!(
                "--rewrite {}: {} is the caller, and fmerge never changes the caller's code; scope the rewrite to a callee",
                r.from,
                opts.caller
            );
        }
    }
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| crate::group::default_name(&opts.caller));
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bail!("--name {name:?} is not a file name: use letters, digits and dashes");
    }
    if opts.jobs == Some(0) {
        bail!("-j 0: give at least one job, or leave -j out for one per core");
    }
    Ok(rewrites)
}

/// What a merge remembers for a re-merge that changes nothing.
#[derive(serde::Serialize, serde::Deserialize)]
struct Remembered {
    settings: Vec<Setting>,
    native_libs: Vec<String>,
    warnings: Vec<String>,
}

pub fn build(opts: &Options) -> Result<Merged> {
    let progress = Progress::new(opts.quiet);
    let mut timings = Vec::new();

    let rewrites = validate(opts)?;
    let toolchain = Toolchain::detect()?;
    toolchain.check_release(fmerge_ir::RUSTC_RELEASE)?;
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| crate::group::default_name(&opts.caller));
    // Functions from separate projects: a build workspace of fmerge's own.
    let (manifest, target_dir) = match opts.sources.first() {
        None => (opts.manifest_path.clone(), opts.target_dir.clone()),
        Some(caller) => {
            let target_dir = match &opts.target_dir {
                Some(dir) => dir.clone(),
                None => workspace::target_dir_of(&caller.manifest)?,
            };
            let generated = workspace::generate(
                &opts.sources,
                &target_dir.join("fmerge").join("workspace").join(&name),
            )?;
            for difference in &generated.lock_differences {
                progress.note(&format!("note: {difference}"));
            }
            (Some(generated.manifest), Some(target_dir))
        }
    };
    let plan = resolve::run(manifest.as_deref(), &opts.caller, &opts.callees)?;
    let members: Vec<String> = plan.functions().map(|f| f.name.clone()).collect();
    let target_dir = target_dir.unwrap_or_else(|| plan.target_dir.clone());
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| target_dir.join("fmerge").join(&name));
    let work = target_dir.join("fmerge").join("work").join(&name);
    let binary = out_dir.join(&name);
    let ll_path = out_dir.join(format!("{name}.ll"));

    // One cargo build, bitcode for every crate; with rewrites, the callees'
    // own crates are built unoptimized (see fmerge_ir::passes::endpoints).
    let profile = emit::Profile {
        unoptimized: if rewrites.is_empty() {
            BTreeSet::new()
        } else {
            plan.callee_owned_local()
        },
    };
    let release = emit::Release::read(&plan.manifest_path);
    let lto = opts.lto.unwrap_or(if release.lto {
        codegen::Lto::Fat
    } else {
        codegen::Lto::Off
    });
    for note in release.notes(lto == codegen::Lto::Fat) {
        progress.note(&note);
    }
    let stage = progress.stage(
        &format!("building {} functions with cargo", members.len()),
        None,
    );
    let emitted = emit::run(
        &plan,
        &emit::build_dir(&target_dir),
        opts.jobs,
        &profile,
        &toolchain,
    )?;
    timings.push((
        "cargo build",
        stage.done(&format!("{} units", emitted.units.len())),
    ));
    let mut unmerged: Vec<_> = emitted.binaries.clone().into_iter().collect();
    unmerged.sort();
    let units = emitted.units.len();

    // Nothing changed since the last merge of this name: keep its binary.
    let bytes = emit::read_bitcode(&emitted.units)?;
    let key = cache::key(
        &cache_inputs(opts, lto, &toolchain, &emitted),
        &emitted.units.iter().map(unit_label).collect::<Vec<_>>(),
        &bytes,
    );
    let hit = if opts.force {
        None
    } else {
        cache::lookup::<Remembered>(
            &work,
            &key,
            &binary,
            opts.emit_ll.then_some(ll_path.as_path()),
        )
    };
    if let Some(hit) = hit {
        progress.note(
            "nothing changed since the last merge (same bitcode and options): keeping the binary",
        );
        for w in &hit.warnings {
            progress.note(&format!("warning: {w}"));
        }
        note_settings(&progress, &hit.settings, &opts.caller);
        let ll = opts.emit_ll.then_some(ll_path);
        let Remembered {
            settings,
            native_libs,
            warnings,
        } = hit;
        return Ok(Merged {
            name,
            binary,
            ll,
            members,
            settings,
            unmerged,
            native_libs,
            timings,
            units,
            warnings,
            cached: true,
        });
    }

    // Per crate: parse, phase 1 of the passes, optimize a crate built
    // unoptimized; then link them all into the caller's module. Meanwhile,
    // rustc tells how it links a binary (a process of its own).
    let stage = progress.stage("linking IR", Some(units as u64));
    let probe = {
        let (work, toolchain) = (work.clone(), toolchain.clone());
        std::thread::spawn(move || native::probe(&work, &toolchain))
    };
    let machine = codegen::machine(&toolchain.triple, opts.opt_level)?;
    let facts = Facts {
        caller: opts.caller.clone(),
        callees: plan.callee_names(),
        rewrites: rewrites.clone(),
        allow_shared_static: opts.allow_shared_static.clone(),
        native_refs: native::undefined_in_static_libs(&emitted.native),
    };
    let ctx = Context::create();
    let mut found = Found::default();
    let mut modules = Vec::with_capacity(units);
    for i in link_order(&emitted.units, &opts.caller) {
        let unit = &emitted.units[i];
        let module = link::parse(&ctx, &bytes[i], &unit.crate_name, &unit.bitcode)?;
        let owners = resolve::owners(plan.functions(), &unit.package_id);
        let package = plan.local.get(&unit.package_id);
        let krate = Crate {
            name: &unit.crate_name,
            package: package.map_or(unit.crate_name.as_str(), String::as_str),
            function: unit.function.as_deref(),
            owners: &owners,
            local: package.is_some_and(|p| p != resolve::RUNTIME),
        };
        passes::per_crate(&module, &krate, &facts, &mut found)?;
        if unit.unoptimized {
            codegen::optimize_unit(&module, &machine)?;
        }
        modules.push((module, unit.crate_name.clone(), bytes[i].len()));
        stage.inc();
    }
    drop(bytes);
    let module = link::all(modules)?;
    timings.push(("link IR", stage.done(&format!("{units} units"))));
    let mut warnings = std::mem::take(&mut found.warnings);
    warnings.extend(
        found
            .exports
            .renamed
            .iter()
            .map(|r| format!("two functions export one symbol; {r}")),
    );
    warnings.extend(facts.callees.iter().filter(|c| !found.mentioned.contains(*c)).map(|callee| {
        format!(
            "no merged function names {callee} in its code, so it never invokes it and merging it saves no RPC; \
             check the call tree (did you mean another callee?)"
        )
    }));
    for w in &warnings {
        progress.note(&format!("warning: {w}"));
    }
    for note in endpoints::outcome(&rewrites, &found.rewritten, &facts.callees)? {
        progress.note(&note);
    }

    // Phase 2 of the passes, on the merged module.
    let stage = progress.stage("rewriting the module", None);
    let report = passes::on_module(&module, &facts, &found)?;
    codegen::verify(&module)?;
    timings.push((
        "passes",
        stage.done(&format!(
            "{} symbols internalized, {} routes",
            report.internalized,
            facts.callees.len()
        )),
    ));
    note_settings(&progress, &report.settings, &opts.caller);
    let ll = if opts.emit_ll {
        Some(write_ll(&module, &ll_path)?)
    } else {
        None
    };

    // Optimize and compile. A module cut for parallel emission is read
    // back per partition, so the merged one and its context go first.
    let label = match lto {
        codegen::Lto::Fat => format!(
            "optimizing (O{}, LTO over the merged module) and compiling",
            opts.opt_level
        ),
        codegen::Lto::Off => format!(
            "compiling (O{}; each crate as rustc optimized it)",
            opts.opt_level
        ),
    };
    let stage = progress.stage(&label, None);
    let started = std::time::Instant::now();
    codegen::optimize(&module, &machine, opts.opt_level, lto)?;
    let optimized = started.elapsed();
    let objects = match codegen::cut(&module, &machine, partitions(opts))? {
        Some(cut) => {
            drop(module);
            drop(ctx);
            codegen::emit_partitions(cut, &toolchain.triple, opts.opt_level, &work, &name)?
        }
        None => {
            let object = work.join(format!("{name}.o"));
            codegen::emit_object(&module, &machine, &object)?;
            vec![object]
        }
    };
    let emitted_in = started.elapsed() - optimized;
    let summary = format!(
        "optimized in {:.1}s, {} object(s) in {:.1}s",
        optimized.as_secs_f64(),
        objects.len(),
        emitted_in.as_secs_f64()
    );
    timings.push(("codegen", stage.done(&summary)));
    timings.push(("optimize", optimized));
    timings.push(("emit object", emitted_in));

    // The native link, into a temporary name first.
    let stage = progress.stage("linking the binary", None);
    let script = work.join("merged.ver");
    std::fs::write(&script, crate::assets::VERSION_SCRIPT)?;
    let probe = probe
        .join()
        .map_err(|_| anyhow::anyhow!("fmerge crashed while asking rustc how it links"))??;
    let temp = artifact::temp_beside(&binary)?;
    native::link(&probe, &objects, &emitted.native, &script, &temp)?;
    if !emitted.native.libs.is_empty() {
        progress.note(&format!(
            "linked native libraries: {}",
            emitted.native.libs.join(", ")
        ));
    }
    let binary = artifact::commit(temp, &binary, 0o755)?;
    let size = std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0);
    timings.push((
        "native link",
        stage.done(&format!("{:.1} MiB", size as f64 / 1048576.0)),
    ));

    let (settings, native_libs) = (report.settings, emitted.native.libs.clone());
    let remembered = Remembered {
        settings: settings.clone(),
        native_libs: native_libs.clone(),
        warnings: warnings.clone(),
    };
    cache::store(&work, &key, &binary, remembered)?;
    Ok(Merged {
        name,
        binary,
        ll,
        members,
        settings,
        unmerged,
        native_libs,
        timings,
        units,
        warnings,
        cached: false,
    })
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

/// Every option that decides the merged binary, for the merge cache.
fn cache_inputs(
    opts: &Options,
    lto: codegen::Lto,
    toolchain: &Toolchain,
    emitted: &emit::Emitted,
) -> Vec<String> {
    let mut inputs = vec![
        format!("fmerge {}", env!("CARGO_PKG_VERSION")),
        cache::own_build(),
        format!("rustc {}", toolchain.release),
        format!("caller {}", opts.caller),
        format!("opt-level {}", opts.opt_level),
        format!("lto {lto:?}"),
        format!("name {:?} out {:?}", opts.name, opts.out),
        format!("partitions {}", partitions(opts)),
    ];
    inputs.extend(opts.callees.iter().map(|c| format!("callee {c}")));
    inputs.extend(opts.rewrites.iter().map(|r| format!("rewrite {r}")));
    inputs.extend(
        opts.allow_shared_static
            .iter()
            .map(|a| format!("allow-shared-static {a}")),
    );
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

/// How many objects codegen emits in parallel: one per core, at most `-j`.
fn partitions(opts: &Options) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    opts.jobs.map_or(cores, |j| j.min(cores)).max(1)
}

fn unit_label(unit: &Unit) -> String {
    format!("{} {:?}", unit.crate_name, unit.function)
}

/// The merged module as readable IR (`--emit-ll`), written atomically.
fn write_ll(module: &fmerge_ir::Module<'_>, path: &Path) -> Result<PathBuf> {
    let temp = artifact::temp_beside(path)?;
    module
        .print_to_file(&temp)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    artifact::commit(temp, path, 0o644)
}

/// The caller's own crate first, so that the merged module starts as the
/// caller's and every other unit is linked into it.
fn link_order(units: &[Unit], caller: &str) -> Vec<usize> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| units[i].function.as_deref() != Some(caller));
    order
}
