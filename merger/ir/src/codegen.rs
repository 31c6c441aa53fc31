//! Stage 5: optimize the merged module and compile it to objects.
//!
//! The module holds every crate of every function, with all but `main`
//! internal, which is what rustc's fat LTO has at this point. rustc already
//! optimized each crate, so by default only code that nothing reaches any
//! more is dropped, as a release build without LTO gets; with [`Lto::Fat`]
//! it runs the pipeline rustc runs for fat LTO, `lto<O3>`, on one thread.
//! Then the module is cut into partitions compiled in parallel (`split`).

use anyhow::{Context as _, Result, anyhow};
use inkwell::OptimizationLevel;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine,
    TargetTriple,
};
use std::path::Path;

/// Checks a module before it is optimized or compiled (`what` names it), so
/// that a bug in a rewrite shows up here with LLVM's explanation instead of
/// as a crash in the optimizer.
pub fn verify(module: &Module<'_>, what: &str) -> Result<()> {
    module.verify().map_err(|e| {
        anyhow!(
            "{what} is not valid LLVM IR (a bug in fmerge; please report it with --emit-ll output): {}",
            e.to_string().trim()
        )
    })
}

/// The machine the merged binary is for.
pub struct Target<'a> {
    pub triple: &'a str,
    pub opt_level: u8,
}

pub fn machine(triple: &str, opt_level: u8) -> Result<TargetMachine> {
    LlvmTarget::initialize_x86(&InitializationConfig::default());
    let triple = TargetTriple::create(triple);
    let target = LlvmTarget::from_triple(&triple)
        .map_err(|e| anyhow!("LLVM has no target for {triple}: {e}"))?;
    let level = match opt_level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    // rustc's defaults for x86_64-unknown-linux-gnu: generic x86-64, PIC for a PIE.
    target
        .create_target_machine(
            &triple,
            "x86-64",
            "",
            level,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .context("LLVM could not create a target machine for the host")
}

/// Whether the merged module gets whole-program optimization.
///
/// rustc already ran its full pipeline on every crate before writing its
/// bitcode, which is all a release build without LTO ever gets; `Off`
/// compiles the merged module as that (after dropping code nothing
/// reaches), so the merged functions run the code their own binaries ran.
/// `Fat` adds what `lto = "fat"` would: LLVM's `lto<O3>` across all the
/// crates, on one thread, for cross-crate inlining. `Own` runs it across the
/// group's own crates only (its functions, their path dependencies and
/// fmerge's runtime: the code a request runs between the server and the
/// libraries) and links everything else from cargo's objects, as `Off` does
/// (`reuse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lto {
    Off,
    Own,
    Fat,
}

impl Lto {
    /// Whether cargo's objects serve the crates the merge leaves alone
    /// (`reuse`); only `Fat` compiles the whole merged module.
    pub fn reuses(self) -> bool {
        self != Lto::Fat
    }
}

/// Runs `lto<O{level}>` with `Lto::Fat` (at levels 1 to 3), otherwise only
/// the removal of dead globals. Either way identical functions are merged,
/// as rustc does within a crate (`-Z merge-functions`): across crates, the
/// same generic instantiations are many, and each would be compiled again.
pub fn optimize(
    module: &Module<'_>,
    machine: &TargetMachine,
    opt_level: u8,
    lto: Lto,
) -> Result<()> {
    let pipeline = match (lto, opt_level) {
        (Lto::Fat, 1..) => format!("lto<O{}>,mergefunc", opt_level.min(3)),
        _ => "globaldce,mergefunc".to_string(),
    };
    module
        .run_passes(&pipeline, machine, PassBuilderOptions::create())
        .map_err(|e| {
            anyhow!(
                "LLVM's {pipeline} pipeline failed: {}",
                e.to_string().trim()
            )
        })
}

/// Optimizes one crate that cargo built at opt-level 0 for the endpoint
/// rewrite, once fmerge's per-crate passes are done: `default<O3>` is the
/// pipeline rustc itself would have run on it.
pub fn optimize_unit(module: &Module<'_>, machine: &TargetMachine) -> Result<()> {
    module
        .run_passes("default<O3>", machine, PassBuilderOptions::create())
        .map_err(|e| {
            anyhow!(
                "LLVM's default<O3> pipeline failed on an unoptimized crate: {}",
                e.to_string().trim()
            )
        })
}

/// How many partitions the merged module is cut into for parallel
/// emission. A constant, as rustc's default codegen units are: the cut (and
/// so the binary) must not depend on the machine's cores or on `-j`, which
/// only caps how many partitions compile at once.
pub const PARTITIONS: usize = 8;

/// Cuts the optimized module into up to `n` partitions for
/// [`emit_partitions`] (see `split`), or returns `None` when it is emitted
/// whole with [`emit_object`]: `n` < 2, or a module that cannot be cut.
pub fn cut(
    module: &Module<'_>,
    machine: &TargetMachine,
    n: usize,
) -> Result<Option<crate::split::Cut>> {
    if n < 2 {
        return Ok(None);
    }
    crate::split::remove_aliases(module, machine)?;
    Ok(crate::split::cut(module, n))
}

/// Emits the partitions as objects named `<stem>.<i>.o` in `dir`, compiled
/// in parallel on at most `threads` threads, and returns them in partition
/// order.
///
/// Each partition is read back from the cut's bitcode and trimmed on this
/// thread, one after another, and then compiled on a thread of its own while
/// the next one is read: one full copy of the module is ever being parsed,
/// and memory freed by trimming one partition serves the next (the caller
/// has dropped the merged module and its context by now).
pub fn emit_partitions(
    cut: crate::split::Cut,
    triple: &str,
    opt_level: u8,
    threads: usize,
    dir: &Path,
    stem: &str,
) -> Result<Vec<std::path::PathBuf>> {
    fn join(
        t: std::thread::ScopedJoinHandle<'_, Result<std::path::PathBuf>>,
    ) -> Result<std::path::PathBuf> {
        t.join()
            .unwrap_or_else(|_| Err(anyhow!("LLVM crashed while compiling a partition")))
    }
    std::thread::scope(|scope| {
        let mut compiling = std::collections::VecDeque::new();
        let mut objects = Vec::new();
        for p in 0..cut.partitions() {
            // At most `threads` at once: wait for the oldest.
            if compiling.len() >= threads.max(1) {
                objects.push(join(compiling.pop_front().expect("one running")));
            }
            let part = crate::ir::detached(|ctx| crate::split::partition(ctx, &cut, p))?;
            let object = dir.join(format!("{stem}.{p}.o"));
            compiling.push_back(scope.spawn(move || {
                part.with(|module| {
                    verify(module, &format!("partition {p} of the merged module"))?;
                    emit_object(module, &machine(triple, opt_level)?, &object)
                })?;
                Ok(object)
            }));
        }
        objects.extend(compiling.into_iter().map(join));
        objects.into_iter().collect()
    })
}

pub fn emit_object(module: &Module<'_>, machine: &TargetMachine, path: &Path) -> Result<()> {
    machine
        .write_to_file(module, FileType::Object, path)
        .map_err(|e| {
            anyhow!(
                "LLVM could not write the object {}: {}",
                path.display(),
                e.to_string().trim()
            )
        })
}
