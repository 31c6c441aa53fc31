//! Parallel object emission: after the whole-program optimization, the
//! module is cut into `n` partitions and each is compiled to its own object
//! on its own thread, as LLVM's module splitting for LTO does. Object
//! emission is most of a merge's time and runs on one thread otherwise.
//!
//! Every partition is the whole module, read back from bitcode into a
//! context of its own, in which the definitions that belong to other
//! partitions become declarations; `codegen::emit_partitions` reads them
//! one after another and compiles each on its own thread. Before that,
//! local symbols are made external and hidden so that one partition's code
//! can call another's; the final link sees every symbol defined exactly
//! once, and the version script keeps all of them out of the binary's
//! dynamic symbols. Functions
//! go to partitions by size, largest first, each to the lightest partition
//! (ties to the lowest); data stays in partition 0. The cut depends only on
//! the module and `n`, so a merge is deterministic for a given `n`.

use crate::ir;
use anyhow::{Result, anyhow};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use std::collections::HashMap;

/// Aliases (which the optimizer makes for identical functions) must sit
/// with their targets; uses go to the targets instead, and unused local
/// aliases are removed.
pub fn remove_aliases(
    module: &Module<'_>,
    machine: &inkwell::targets::TargetMachine,
) -> Result<()> {
    ir::bypass_aliases(module);
    module
        .run_passes(
            "globaldce",
            machine,
            inkwell::passes::PassBuilderOptions::create(),
        )
        .map_err(|e| {
            anyhow!(
                "LLVM's globaldce failed before the split: {}",
                e.to_string().trim()
            )
        })
}

/// The optimized module cut for parallel emission: its bitcode, with every
/// local symbol made visible across partitions, and the partition of each
/// defined function.
#[derive(PartialEq)]
pub struct Cut {
    bitcode: Vec<u8>,
    plan: HashMap<String, usize>,
    n: usize,
}

impl Cut {
    pub fn partitions(&self) -> usize {
        self.n
    }
}

/// Plans `n` partitions and writes the module out for them; `None` when the
/// module cannot be cut (aliases or ifuncs left, or fewer functions than
/// partitions).
pub fn cut(module: &Module<'_>, n: usize) -> Option<Cut> {
    let plan = plan(module, n)?;
    prepare(module);
    let bitcode = module.write_bitcode_to_memory().as_slice().to_vec();
    Some(Cut { bitcode, plan, n })
}

/// The partition of each defined function, by name; `None` when the module
/// cannot be cut or `n` < 2.
fn plan(module: &Module<'_>, n: usize) -> Option<HashMap<String, usize>> {
    if n < 2 || ir::has_aliases_or_ifuncs(module) {
        return None;
    }
    let mut functions: Vec<(usize, String)> = ir::global_values(module)
        .into_iter()
        .filter(|v| ir::is_function(*v) && !ir::is_declaration(*v))
        .map(|f| (ir::instruction_count(f), ir::name(f)))
        .collect();
    if functions.len() < n {
        return None;
    }
    functions.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut load = vec![0usize; n];
    let mut plan = HashMap::new();
    for (size, name) in functions {
        let lightest = (0..n).min_by_key(|&p| (load[p], p)).expect("n >= 2");
        load[lightest] += size.max(1);
        plan.insert(name, lightest);
    }
    Some(plan)
}

/// Makes every local symbol visible across partitions (see the module doc).
fn prepare(module: &Module<'_>) {
    for (i, v) in ir::global_values(module).into_iter().enumerate() {
        if !ir::is_declaration(v) && !ir::name(v).starts_with("llvm.") {
            ir::promote_hidden(v, &format!("fmerge.split.{i}"));
        }
    }
}

/// Partition `p` of the cut module, in `ctx`; `codegen::verify` checks it.
pub fn partition<'ctx>(ctx: &'ctx Context, cut: &Cut, p: usize) -> Result<Module<'ctx>> {
    let plan = &cut.plan;
    let buffer = MemoryBuffer::create_from_memory_range(&cut.bitcode, "fmerge.partition");
    let module = Module::parse_bitcode_from_buffer(&buffer, ctx)
        .map_err(|e| anyhow!("cannot read back the merged module: {e}"))?;
    for v in ir::global_values(&module) {
        if ir::is_declaration(v) {
            continue;
        }
        let name = ir::name(v);
        if ir::is_function(v) {
            if plan.get(&name).copied().unwrap_or(0) != p {
                ir::make_declaration(v);
            }
        } else if p != 0 {
            // Constructor tables and keep-alive lists once, or constructors
            // would run once per partition.
            if matches!(
                name.as_str(),
                "llvm.used" | "llvm.compiler.used" | "llvm.global_ctors" | "llvm.global_dtors"
            ) {
                ir::delete_global(v);
            } else if !name.starts_with("llvm.") {
                ir::drop_initializer(v);
            }
        }
    }
    Ok(module)
}
