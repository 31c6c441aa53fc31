//! Stage 5: optimize the merged module and compile it to one object file.
//!
//! The module holds every crate of every function, with all but `main`
//! internal, which is what rustc's fat LTO has at this point; so it runs the
//! same pipeline rustc runs there, `lto<O3>`, for cross-function inlining and
//! dead-code removal, then emits an object for the host.

use anyhow::{Context as _, Result, anyhow};
use inkwell::OptimizationLevel;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use rayon::prelude::*;
use std::path::Path;

/// Checks the merged module, so that a bug in a rewrite shows up here with
/// LLVM's explanation instead of as a crash in the optimizer.
pub fn verify(module: &Module<'_>) -> Result<()> {
    module.verify().map_err(|e| {
        anyhow!("the merged module is not valid LLVM IR (a bug in fmerge; please report it with --emit-ll output): {}", e.to_string().trim())
    })
}

pub fn machine(triple: &str, opt_level: u8) -> Result<TargetMachine> {
    Target::initialize_x86(&InitializationConfig::default());
    let triple = TargetTriple::create(triple);
    let target = Target::from_triple(&triple).map_err(|e| anyhow!("LLVM has no target for {triple}: {e}"))?;
    let level = match opt_level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    // rustc's defaults for x86_64-unknown-linux-gnu: generic x86-64, PIC for a PIE.
    target
        .create_target_machine(&triple, "x86-64", "", level, RelocMode::PIC, CodeModel::Default)
        .context("LLVM could not create a target machine for the host")
}

/// Runs `lto<O{level}>` (nothing but dead-global removal at 0).
pub fn optimize(module: &Module<'_>, machine: &TargetMachine, opt_level: u8) -> Result<()> {
    let pipeline = match opt_level {
        0 => "globaldce".to_string(),
        n => format!("lto<O{}>", n.min(3)),
    };
    module
        .run_passes(&pipeline, machine, PassBuilderOptions::create())
        .map_err(|e| anyhow!("LLVM's {pipeline} pipeline failed: {}", e.to_string().trim()))
}

/// Optimizes one crate that cargo built at opt-level 0 for the endpoint
/// rewrite, once fmerge's per-crate passes are done: `default<O3>` is the
/// pipeline rustc itself would have run on it.
pub fn optimize_unit(module: &Module<'_>, machine: &TargetMachine) -> Result<()> {
    module
        .run_passes("default<O3>", machine, PassBuilderOptions::create())
        .map_err(|e| anyhow!("LLVM's default<O3> pipeline failed on an unoptimized crate: {}", e.to_string().trim()))
}

/// Emits the optimized module as up to `n` objects compiled in parallel
/// (see `split`), named `<stem>.<i>.o` in `dir`; one object when the module
/// cannot be cut or `n` < 2. Returns the objects in partition order. The
/// module is dropped as soon as it is written out: each partition holds a
/// copy of its own, so peak memory grows with `n`.
pub fn emit_objects(module: Module<'_>, triple: &str, opt_level: u8, n: usize, dir: &Path, stem: &str) -> Result<Vec<std::path::PathBuf>> {
    let tm = machine(triple, opt_level)?;
    if n >= 2 {
        crate::split::remove_aliases(&module, &tm)?;
    }
    let Some(plan) = crate::split::plan(&module, n) else {
        let object = dir.join(format!("{stem}.o"));
        emit_object(&module, &tm, &object)?;
        return Ok(vec![object]);
    };
    crate::split::prepare(&module);
    let bitcode = module.write_bitcode_to_memory().as_slice().to_vec();
    drop(module);
    (0..n)
        .into_par_iter()
        .map(|p| {
            let ctx = inkwell::context::Context::create();
            let part = crate::split::partition(&ctx, &bitcode, &plan, p)?;
            let object = dir.join(format!("{stem}.{p}.o"));
            emit_object(&part, &machine(triple, opt_level)?, &object)?;
            Ok(object)
        })
        .collect()
}

pub fn emit_object(module: &Module<'_>, machine: &TargetMachine, path: &Path) -> Result<()> {
    machine
        .write_to_file(module, FileType::Object, path)
        .map_err(|e| anyhow!("LLVM could not write the object {}: {}", path.display(), e.to_string().trim()))
}
