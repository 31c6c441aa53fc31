//! The IR side's one entry: [`merge`] turns each crate's bitcode into one
//! checked module, and [`MergedModule::compile`] turns that into objects.
//!
//! parse each crate → its crate passes → optimize it if cargo built it
//! unoptimized → (with `reuse`: keep its bitcode if it compiles from IR,
//! see [`reuse`]) → the conclusions; where a module is made: link them all
//! → the module passes (→ verify, as it compiles).

use crate::codegen::{self, Target};
use crate::passes::config::Setting;
use crate::passes::{self, Crate, Facts, Found, Run};
use crate::reuse::{self, Compiled, Piece};
use crate::{ir, link};
use anyhow::Result;
use inkwell::module::Module;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One crate's bitcode, and what the passes must know about it.
pub struct Unit {
    /// The crate's name in Rust.
    pub crate_name: String,
    /// Its cargo package, for the user's own crates.
    pub package: Option<String>,
    /// The function whose own binary this is, for a function's bin.
    pub function: Option<String>,
    /// The merged functions that link this crate.
    pub owners: BTreeSet<String>,
    /// One of the user's own path crates (not a registry crate, not the runtime).
    pub local: bool,
    /// Built at opt-level 0 for the endpoint rewrite: optimized after the passes.
    pub unoptimized: bool,
    /// Cargo kept the code rustc compiled from this bitcode (a library's
    /// rlib, a bin's object), which the reuse path may link instead.
    pub object: bool,
    /// With `--lto own`: one of the group's own crates, compiled from IR
    /// with the others, optimized across them ([`reuse::compile`]).
    pub joint: bool,
    pub bitcode: Vec<u8>,
    /// Where the bitcode was read from, for errors.
    pub path: PathBuf,
}

/// How the merge goes, as it goes.
pub enum Event<'a> {
    /// One more unit is parsed and through the crate passes.
    Unit,
    /// Every unit is done, and linked if the merge links them; the
    /// conclusions and the module passes start.
    Linked,
    /// A difference the merge keeps (all of them are in [`MergedModule::warnings`] too).
    Warning(&'a str),
    /// What the merge did, for people.
    Note(&'a str),
}

/// The merged module, checked, with what the passes found.
pub struct MergedModule {
    /// The linked module, when the merge [`links`].
    module: Option<ir::Detached>,
    /// Differences from the unmerged functions that fmerge could not remove
    /// and did not refuse; each says what changes.
    pub warnings: Vec<String>,
    /// The settings each function reads, sorted.
    pub settings: Vec<Setting>,
    /// Symbols made internal.
    pub internalized: usize,
    /// Merged callees now called in-process.
    pub routes: usize,
    /// Who sets the `#[global_allocator]` the merged binary uses, if a
    /// member sets one: the native link then needs rustc's shim for a
    /// binary with a global allocator.
    pub allocator: Option<String>,
    /// With `reuse`: how each crate gets into the binary, in the order merged.
    pub pieces: Vec<Piece>,
    /// With `reuse`: the dispatch table alone, as bitcode ([`reuse::table`]);
    /// none for process-form members, which have no table.
    pub table: Option<Vec<u8>>,
    /// The gateway base URLs the process-form members' code holds.
    pub gateway_urls: Vec<String>,
    /// The rewrites process-form callees apply in their own processes.
    pub at_run_time: Vec<crate::passes::endpoints::AtRunTime>,
    /// For each process-form callee (by package): `Ok` where it runs in
    /// the caller's process, else why it runs in a process of its own
    /// (`in_process`).
    pub in_process: BTreeMap<String, Result<(), String>>,
    /// Why calls between members may not run on the calling thread, if so
    /// (`in_process`).
    pub not_inline: Option<String>,
    /// For each callee whose `handle` may not be started on its caller's
    /// thread, why (`in_process`).
    pub handle_elsewhere: BTreeMap<String, String>,
}

/// Whether [`merge`] links the crates into one module: always without
/// `reuse` (that module is what compiles), and with it only for `emit_ll`
/// (no pass that reads needs the linked module).
pub fn links(reuse: bool, emit_ll: bool) -> bool {
    emit_ll || !reuse
}

/// Runs every pass over `units` (in any order: the caller's own crate goes
/// first, so the merged module starts as the caller's) and, when it
/// [`links`], links them into one module, reporting progress to `on`. With
/// `reuse`, also says for each crate whether cargo's object serves
/// ([`reuse`]); unlinked, each crate's module is freed once its passes are
/// done, and the reuse path redoes the module passes its own way.
pub fn merge(
    units: Vec<Unit>,
    facts: &Facts,
    target: &Target,
    reuse: bool,
    emit_ll: bool,
    on: &mut dyn FnMut(Event),
) -> Result<MergedModule> {
    let mut found = Found::default();
    let mut pieces = Vec::new();
    let machine = codegen::machine(target.triple, target.opt_level)?;
    let mut units: Vec<_> = units.into_iter().enumerate().collect();
    units.sort_by_key(|(_, u)| u.function.as_deref() != Some(facts.caller.as_str()));
    // What each crate goes through, in order.
    let mut each = |index: usize, unit: &Unit, module: &Module<'_>| -> Result<()> {
        let krate = Crate {
            name: &unit.crate_name,
            package: unit.package.as_deref().unwrap_or(&unit.crate_name),
            function: unit.function.as_deref(),
            owners: &unit.owners,
            local: unit.local,
        };
        passes::on_crate(module, &krate, facts, &mut found)?;
        if unit.unoptimized {
            codegen::optimize_unit(module, &machine)?;
        }
        if reuse {
            let why = reuse::why_compiled(unit.object, unit.unoptimized, found.touched, unit.joint);
            pieces.push(Piece {
                unit: index,
                joint: unit.joint,
                weaken: reuse::weaken(module, found.dropped_main),
                keeps_used: reuse::keeps_used(module),
                compiled: why.map(|why| Compiled {
                    why,
                    bitcode: module.write_bitcode_to_memory().as_slice().to_vec(),
                }),
            });
        }
        on(Event::Unit);
        Ok(())
    };
    let module = match links(reuse, emit_ll) {
        true => Some(ir::detached(|ctx| -> Result<Module<'_>> {
            let mut modules = Vec::with_capacity(units.len());
            for (index, unit) in units {
                let module = link::parse(ctx, &unit.bitcode, &unit.crate_name, &unit.path)?;
                each(index, &unit, &module)?;
                modules.push(link::Linkable {
                    module,
                    crates: unit.crate_name,
                    size: unit.bitcode.len(),
                });
            }
            link::all(modules)
        })?),
        false => {
            read_ahead(&units, each)?;
            None
        }
    };
    on(Event::Linked);
    // What each pass finds is told as soon as it is found.
    let mut told = (0, 0);
    tell(&found, &mut told, on);
    passes::conclude(facts, &mut found)?;
    tell(&found, &mut told, on);
    if let Some(module) = &module {
        module.borrow(|module| -> Result<()> {
            for pass in passes::PASSES {
                if let Run::Module(run) = pass.run {
                    run(module, facts, &mut found)?;
                    tell(&found, &mut told, on);
                }
            }
            Ok(())
        })?;
    }
    let table = match reuse && !facts.process {
        true => {
            found.routes = facts.callees.len();
            Some(reuse::table(
                &reuse::callees(&facts.callees, &found.blocking),
                target,
            )?)
        }
        false => None,
    };
    Ok(MergedModule {
        pieces,
        table,
        module,
        warnings: found.warnings,
        settings: found.settings.into_iter().collect(),
        internalized: found.internalized,
        routes: found.routes,
        gateway_urls: found.gateway_urls.into_iter().collect(),
        at_run_time: found.at_run_time.into_iter().collect(),
        in_process: found.in_process,
        not_inline: found.not_inline,
        handle_elsewhere: found.handle_elsewhere,
        allocator: found.allocator.map(|a| a.set_by.join(", ")),
    })
}

/// Runs `each` on every unit's module, in order, when nothing links them:
/// each is parsed into a context of its own on another thread while the one
/// before goes through `each`, and freed, context and all, right after.
fn read_ahead(
    units: &[(usize, Unit)],
    mut each: impl FnMut(usize, &Unit, &Module<'_>) -> Result<()>,
) -> Result<()> {
    let (parsed, next) = std::sync::mpsc::sync_channel(2);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for (_, unit) in units {
                let module = ir::detached(|ctx| {
                    link::parse(ctx, &unit.bitcode, &unit.crate_name, &unit.path)
                });
                // Sending fails once `each` stopped at an error: stop too.
                if parsed.send(module).is_err() {
                    return;
                }
            }
        });
        for ((index, unit), module) in units.iter().zip(next) {
            module?.with(|module| each(*index, unit, module))?;
        }
        Ok(())
    })
}

/// Tells the warnings and notes found since the last call.
fn tell(found: &Found, told: &mut (usize, usize), on: &mut dyn FnMut(Event)) {
    for w in &found.warnings[told.0..] {
        on(Event::Warning(w));
    }
    for n in &found.notes[told.1..] {
        on(Event::Note(n));
    }
    *told = (found.warnings.len(), found.notes.len());
}

/// How to compile the merged module.
pub struct Compile<'a> {
    pub target: &'a Target<'a>,
    pub lto: codegen::Lto,
    /// At most this many partitions compile at once; the partitions (and so
    /// the binary) do not depend on it.
    pub threads: usize,
    /// Where the objects go, named `<stem>.<i>.o`.
    pub dir: &'a Path,
    pub stem: &'a str,
}

/// The objects of the merged module, and how long each step took.
pub struct Objects {
    pub paths: Vec<PathBuf>,
    pub optimized: Duration,
    pub emitted: Duration,
}

impl MergedModule {
    /// Writes the module as readable IR (`--emit-ll`) to `path`.
    pub fn write_ll(&self, path: &Path) -> Result<()> {
        self.linked()?.borrow(|module| {
            module
                .print_to_file(path)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
        })
    }

    /// The linked module, or the error of a caller that did not ask for one.
    fn linked(&self) -> Result<&ir::Detached> {
        self.module.as_ref().ok_or_else(|| {
            anyhow::anyhow!("the crates were not linked into one module: merge with `emit_ll` or without `reuse` for this (a bug in fmerge)")
        })
    }

    /// Optimizes the module and compiles it to objects (see [`codegen`]).
    pub fn compile(self, how: &Compile) -> Result<Objects> {
        let started = Instant::now();
        let Target { triple, opt_level } = *how.target;
        let machine = codegen::machine(triple, opt_level)?;
        let (cut, optimized) = self.linked()?.borrow(|module| -> Result<_> {
            // Checked where it is compiled: the reuse path checks each piece
            // it compiles instead.
            codegen::verify(module, "the merged module")?;
            codegen::optimize(module, &machine, opt_level, how.lto)?;
            let optimized = started.elapsed();
            let cut = codegen::cut(module, &machine, codegen::PARTITIONS)?;
            Ok((cut, optimized))
        })?;
        let module = self.module.expect("linked, as checked above");
        let paths = match cut {
            // A cut module is read back per partition: the merged one and its
            // context go first.
            Some(cut) => {
                drop(module);
                codegen::emit_partitions(cut, triple, opt_level, how.threads, how.dir, how.stem)?
            }
            None => {
                let object = how.dir.join(format!("{}.o", how.stem));
                module.with(|module| codegen::emit_object(module, &machine, &object))?;
                vec![object]
            }
        };
        Ok(Objects {
            paths,
            optimized,
            emitted: started.elapsed() - optimized,
        })
    }
}
