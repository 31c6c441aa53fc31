//! The whole merge, stage by stage: resolve → emit → link → passes →
//! codegen → native. Each stage lives in its own module; this one only
//! sequences them and reports what they did.

use crate::emit::{self, Unit};
use crate::passes::{config, dispatch, endpoints, env, statics, symbols};
use crate::passes::config::Setting;
use crate::progress::Progress;
use crate::{artifact, cache, codegen, link, native, resolve};
use anyhow::{Context as _, Result, bail};
use inkwell::context::Context;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
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
    pub jobs: Option<usize>,
    pub quiet: bool,
    /// Statics (`crate::path::NAME`) or whole crates that merged functions
    /// may share, although each had its own copy unmerged.
    pub allow_shared_static: Vec<String>,
    /// Redo the merge even if nothing changed since the last one.
    pub force: bool,
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
            jobs: None,
            quiet: false,
            allow_shared_static: Vec::new(),
            force: false,
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
    /// The build scripts' native libraries (`KIND=NAME`) that were linked in.
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
    let members: Vec<String> = std::iter::once(&opts.caller).chain(&opts.callees).cloned().collect();
    let rewrites = opts.rewrites.iter().map(|r| endpoints::Rewrite::parse(r, &members)).collect::<Result<Vec<_>>>()?;
    for r in &rewrites {
        if r.callee.as_deref() == Some(opts.caller.as_str()) {
            bail!("--rewrite {}: {} is the caller, and fmerge never changes the caller's code; scope the rewrite to a callee", r.from, opts.caller);
        }
    }
    let name = opts.name.clone().unwrap_or_else(|| format!("{}-merged", opts.caller));
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bail!("--name {name:?} is not a file name: use letters, digits and dashes");
    }
    if opts.jobs == Some(0) {
        bail!("-j 0: give at least one job, or leave -j out for one per core");
    }
    Ok(rewrites)
}

pub fn build(opts: &Options) -> Result<Merged> {
    let progress = Progress::new(opts.quiet);
    let mut timings = Vec::new();

    let rewrites = validate(opts)?;
    let plan = resolve::run(opts.manifest_path.as_deref(), &opts.caller, &opts.callees)?;
    let callees = plan.callee_names();
    let members: Vec<String> = plan.functions().map(|f| f.name.clone()).collect();
    let name = opts.name.clone().unwrap_or_else(|| format!("{}-merged", opts.caller));
    let target_dir = opts.target_dir.clone().unwrap_or_else(|| plan.target_dir.clone());
    let out_dir = opts.out.clone().unwrap_or_else(|| target_dir.join("fmerge").join(&name));

    // Stage 2: one cargo build, IR for every crate. With rewrites, the
    // callees' own crates are built unoptimized (see passes::endpoints).
    let profile = emit::Profile { unoptimized: if rewrites.is_empty() { BTreeSet::new() } else { plan.callee_owned_local() } };
    for note in profile_notes(&plan.manifest_path) {
        progress.note(&note);
    }
    let stage = progress.stage(&format!("building {} functions with cargo", members.len()), None);
    let emitted = emit::run(&plan, &emit::build_dir(&target_dir), opts.jobs, &profile)?;
    timings.push(("cargo build", stage.done(&format!("{} units", emitted.units.len()))));

    // Stage 3: read the bitcode (in parallel); unless the last merge saw the
    // same, ask rustc how it links, then prepare and link the IR.
    let work = target_dir.join("fmerge").join("work").join(&name);
    let binary = out_dir.join(&name);
    let ll_path = out_dir.join(format!("{name}.ll"));
    let mut unmerged: Vec<_> = emitted.binaries.clone().into_iter().collect();
    unmerged.sort();
    let units = emitted.units.len();
    let bytes = link::read(&emitted.units)?;
    let key = cache::key(opts, &emitted, &bytes);
    let cached = if opts.force { None } else { cache::lookup(&work, &key, &binary, opts.emit_ll.then_some(ll_path.as_path())) };
    if let Some(hit) = cached {
        progress.note("nothing changed since the last merge (same bitcode and options): keeping the binary");
        for w in &hit.warnings {
            progress.note(&format!("warning: {w}"));
        }
        let ll = opts.emit_ll.then_some(ll_path);
        let (settings, native_libs, warnings) = (hit.settings, hit.native_libs, hit.warnings);
        return Ok(Merged { name, binary, ll, members, settings, unmerged, native_libs, timings, units, warnings, cached: true });
    }
    let stage = progress.stage("linking IR", Some(emitted.units.len() as u64));
    let probe = native::probe(&work, &emitted.triple)?;
    let machine = codegen::machine(&emitted.triple, opts.opt_level)?;
    let ctx = Context::create();
    let order = link_order(&emitted.units, &opts.caller);
    let mut exports = symbols::Exports::default();
    exports.native_refs = native::undefined_in_static_libs(&emitted.native);
    let shared: HashMap<_, _> = plan.shared_local().into_iter().map(|(id, name, fns)| (id, (name, fns))).collect();
    let mut hits = vec![0usize; rewrites.len()];
    let mut mentioned: BTreeSet<String> = BTreeSet::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut isolated: BTreeSet<(String, String)> = BTreeSet::new();
    let mut merged = None;
    // Per-crate passes, in this order, while each crate's owners are known:
    for &i in &order {
        let unit = &emitted.units[i];
        let module = link::parse(&ctx, &bytes[i], unit)?;
        let owners = resolve::owners(plan.functions(), &unit.package_id);
        // The user's own crates; the runtime's process settings (port, gateway) are the contract's.
        let local = plan.local.get(&unit.package_id).is_some_and(|name| name != resolve::RUNTIME);
        // The function's entry exists, and which callees it names.
        if let Some(function) = &unit.function {
            dispatch::entry(&module, function)?;
            for callee in callees.iter().filter(|c| *c != function) {
                if dispatch::mentions(&module, callee) {
                    mentioned.insert(callee.clone());
                }
            }
        }
        // One `main`, and exported symbols that cannot clash.
        symbols::prepare(&module, unit, &opts.caller, &mut exports)?;
        // No mutable static shared by functions that each had their own.
        if let Some((package, functions)) = shared.get(&unit.package_id) {
            statics::run(&module, package, &unit.crate_name, functions, &opts.allow_shared_static)?;
        }
        // Callee endpoints, then callee settings read with std::env.
        if !rewrites.is_empty() {
            for (n, h) in endpoints::run(&module, &unit.crate_name, &owners, &rewrites, &callees)?.into_iter().enumerate() {
                hits[n] += h;
            }
        }
        if local {
            let owner = owners.iter().next().filter(|o| owners.len() == 1 && **o != opts.caller).map(String::as_str);
            let report = env::run(&module, &unit.crate_name, owner, &owners);
            isolated.extend(report.isolated);
            warnings.extend(report.warnings);
            for (function, url) in dispatch::gateway_urls(&module, &members) {
                warnings.push(format!(
                    "crate {} (linked by {}) holds the gateway URL `{url}` of merged function {function}: a call made with it, \
                     with its own HTTP client, still leaves the process; fix: call `fmerge_runtime::invoke(\"{function}\", …)`",
                    unit.crate_name,
                    owners.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        // Crates built unoptimized for the rewrite get rustc's own pipeline now.
        if unit.unoptimized {
            codegen::optimize_unit(&module, &machine)?;
        }
        match &merged {
            None => merged = Some(module),
            Some(dest) => link::into(dest, module, unit)?,
        }
        stage.inc();
    }
    let module = merged.context("cargo built nothing to merge")?;
    timings.push(("link IR", stage.done(&format!("{} units", emitted.units.len()))));
    warnings.extend(exports.renamed.iter().map(|r| format!("two functions export one symbol; {r}")));
    for callee in callees.iter().filter(|c| !mentioned.contains(*c)) {
        warnings.push(format!(
            "no merged function names {callee} in its code, so it never invokes it and merging it saves no RPC; \
             check the call tree (did you mean another callee?)"
        ));
    }
    for w in &warnings {
        progress.note(&format!("warning: {w}"));
    }
    for (rewrite, n) in rewrites.iter().zip(&hits) {
        if *n == 0 {
            let targets: Vec<_> = rewrite.targets(&callees).into_iter().collect();
            bail!(
                "--rewrite {}: no string literal in the code of {} contains `{}`.\n\
                 Check FROM: it is matched byte for byte (the endpoints each function reads are listed by `fmerge build … --emit-ll` in the .ll, \
                 and by the config report of a merge without this rewrite).",
                rewrite.from,
                targets.join(", "),
                rewrite.from
            );
        }
        progress.note(&format!("rewrote `{}` → `{}` in {n} literal(s)", rewrite.from, rewrite.to));
    }

    // Stage 4: the passes on the merged module.
    let stage = progress.stage("rewriting the module", None);
    symbols::check_allocator(&module)?;
    let internal = symbols::run(&module);
    dispatch::run(&module, &callees)?;
    let mut settings = config::run(&module);
    settings.extend(isolated.into_iter().map(|(function, key)| config::Setting { function, key, default: String::new(), from_env: true }));
    settings.sort();
    codegen::verify(&module)?;
    timings.push(("passes", stage.done(&format!("{} symbols internalized, {} routes", internal, callees.len()))));
    for s in &settings {
        if s.from_env {
            progress.note(&format!("config: {} reads {} (std::env, no default)", s.function, s.variable(&opts.caller)));
        } else {
            progress.note(&format!("config: {} reads {} (default {})", s.function, s.variable(&opts.caller), s.default));
        }
    }

    let ll = if opts.emit_ll {
        let temp = artifact::temp_beside(&ll_path)?;
        module.print_to_file(&temp).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", ll_path.display()))?;
        Some(artifact::commit(temp, &ll_path, 0o644)?)
    } else {
        None
    };

    // Stage 5: optimize and compile.
    let stage = progress.stage(&format!("optimizing (O{}) and compiling", opts.opt_level), None);
    let started = std::time::Instant::now();
    codegen::optimize(&module, &machine, opts.opt_level)?;
    let optimized = started.elapsed();
    let object = work.join(format!("{name}.o"));
    codegen::emit_object(&module, &machine, &object)?;
    drop(module);
    let emitted_in = started.elapsed() - optimized;
    let summary = format!("optimized in {:.1}s, one object in {:.1}s", optimized.as_secs_f64(), emitted_in.as_secs_f64());
    timings.push(("codegen", stage.done(&summary)));
    timings.push(("optimize", optimized));
    timings.push(("emit object", emitted_in));

    // Stage 6: the native link, into a temporary name first.
    let stage = progress.stage("linking the binary", None);
    let script = work.join("merged.ver");
    std::fs::write(&script, native::VERSION_SCRIPT)?;
    let temp = artifact::temp_beside(&binary)?;
    native::link(&probe, &[object], &emitted.native, &script, &temp)?;
    if !emitted.native.libs.is_empty() {
        progress.note(&format!("linked native libraries from build scripts: {}", emitted.native.libs.join(", ")));
    }
    let binary = artifact::commit(temp, &binary, 0o755)?;
    let size = std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0);
    timings.push(("native link", stage.done(&format!("{:.1} MiB", size as f64 / 1048576.0))));

    let native_libs = emitted.native.libs.clone();
    cache::store(&work, &key, &binary, cache::Entry { settings: settings.clone(), native_libs: native_libs.clone(), warnings: warnings.clone() })?;
    Ok(Merged { name, binary, ll, members, settings, unmerged, native_libs, timings, units, warnings, cached: false })
}

/// What fmerge's build changes in the workspace's release profile, said
/// once so that nobody is surprised (see [`emit::Profile`]).
fn profile_notes(manifest: &std::path::Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(manifest) else { return Vec::new() };
    let Ok(doc) = text.parse::<toml::Table>() else { return Vec::new() };
    let Some(release) = doc.get("profile").and_then(|p| p.get("release")) else { return Vec::new() };
    let mut notes = Vec::new();
    if release.get("panic").and_then(|v| v.as_str()) == Some("abort") {
        notes.push(
            "profile.release sets panic = \"abort\"; fmerge builds with panic = \"unwind\" so that a panicking callee fails only \
             its own call (its caller gets an error reply, as from a crashed callee) instead of killing the merged process"
                .to_string(),
        );
    }
    if release.get("lto").is_some_and(|v| v.as_bool() != Some(false) && v.as_str() != Some("off")) {
        notes.push("profile.release sets lto; fmerge builds without it and optimizes the whole merged program itself".to_string());
    }
    notes
}

/// The caller's own crate first, so that the merged module starts as the
/// caller's and every other unit is linked into it.
fn link_order(units: &[Unit], caller: &str) -> Vec<usize> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| units[i].function.as_deref() != Some(caller));
    order
}
