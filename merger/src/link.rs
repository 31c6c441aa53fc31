//! Stage 3: load every unit's bitcode and link it all into one module, the
//! way `llvm-link` does, with the LLVM that rustc itself ships (rustc's IR is
//! only readable by an LLVM at least as new as its own).

use crate::emit::Unit;
use anyhow::{Context as _, Result, anyhow};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use rayon::prelude::*;

/// Reads every unit's bitcode, in parallel: the files are independent and
/// reading them is most of the I/O of a merge.
pub fn read(units: &[Unit]) -> Result<Vec<Vec<u8>>> {
    units
        .par_iter()
        .map(|u| std::fs::read(&u.bitcode).with_context(|| format!("cannot read bitcode {}", u.bitcode.display())))
        .collect()
}

/// Parses one unit's bitcode into `ctx`.
pub fn parse<'ctx>(ctx: &'ctx Context, bytes: &[u8], unit: &Unit) -> Result<Module<'ctx>> {
    let buffer = MemoryBuffer::create_from_memory_range_copy(bytes, &unit.crate_name);
    Module::parse_bitcode_from_buffer(&buffer, ctx).map_err(|e| {
        anyhow!(
            "cannot parse the bitcode of {} ({}): {}\n\
             It was written by a different rustc than the one fmerge was built with; rebuild fmerge with the active toolchain (`cargo install --path merger --force`).",
            unit.crate_name,
            unit.bitcode.display(),
            e.to_string().trim()
        )
    })
}

/// Links `src` into `dest`; `src` is consumed, as with `llvm-link`.
pub fn into<'ctx>(dest: &Module<'ctx>, src: Module<'ctx>, unit: &Unit) -> Result<()> {
    dest.link_in_module(src).map_err(|e| {
        anyhow!(
            "LLVM could not link crate {} into the merged module: {}\n\
             This usually means two crates define the same symbol; fmerge checks for the ones it knows of, so please report this one.",
            unit.crate_name,
            e.to_string().trim()
        )
    })
}

/// Parses a textual `.ll` file, as `--emit-ll` writes it, with the same LLVM.
pub fn parse_ll(path: &std::path::Path) -> Result<()> {
    let ctx = Context::create();
    let buffer = MemoryBuffer::create_from_file(path).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    let module = ctx.create_module_from_ir(buffer).map_err(|e| anyhow!("{} does not parse: {}", path.display(), e.to_string().trim()))?;
    module.verify().map_err(|e| anyhow!("{} parses but does not verify: {}", path.display(), e.to_string().trim()))
}
