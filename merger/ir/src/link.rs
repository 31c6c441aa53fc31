//! Stage 3: load every unit's bitcode and link it all into one module, the
//! way `llvm-link` does, with the LLVM that rustc itself ships (rustc's IR is
//! only readable by an LLVM at least as new as its own).

use anyhow::{Result, anyhow};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;

/// Parses one crate's bitcode (read from `path`) into `ctx`.
pub fn parse<'ctx>(
    ctx: &'ctx Context,
    bytes: &[u8],
    crate_name: &str,
    path: &std::path::Path,
) -> Result<Module<'ctx>> {
    let buffer = MemoryBuffer::create_from_memory_range_copy(bytes, crate_name);
    Module::parse_bitcode_from_buffer(&buffer, ctx).map_err(|e| {
        anyhow!(
            "cannot parse the bitcode of {} ({}): {}; it was written by a different rustc than the one fmerge was built with\n\
             fix: rebuild fmerge with the active toolchain (`cargo install --path merger --force`)",
            crate_name,
            path.display(),
            e.to_string().trim()
        )
    })
}

/// A module to link, with what [`all`] needs to know of it.
pub struct Linkable<'ctx> {
    pub module: Module<'ctx>,
    /// The crates it holds, for errors.
    pub crates: String,
    /// Its size, in bitcode bytes.
    pub size: usize,
}

/// Links every module into one, as `llvm-link` does, and returns it.
///
/// Every link first scans its whole destination module, so linking unit
/// after unit into one growing module costs the square of its size (it was
/// most of the stage). Instead, the two neighbours that are smallest
/// together are linked first, until one module is left, the later always
/// into the earlier: where `linkonce` copies meet, the earliest unit's wins,
/// as in a left-to-right `llvm-link`, and the order of units is kept.
pub fn all<'ctx>(mut modules: Vec<Linkable<'ctx>>) -> Result<Module<'ctx>> {
    while modules.len() > 1 {
        // The neighbours whose link is cheapest: the smallest pair.
        let i = (0..modules.len() - 1)
            .min_by_key(|&i| modules[i].size + modules[i + 1].size)
            .expect("two or more");
        let src = modules.remove(i + 1);
        let dest = &mut modules[i];
        into(&dest.module, src.module, &src.crates)?;
        dest.crates = format!("{}, {}", dest.crates, src.crates);
        dest.size += src.size;
    }
    modules
        .pop()
        .map(|linkable| linkable.module)
        .ok_or_else(|| anyhow!("cargo built nothing to merge"))
}

/// Links `src` into `dest`; `src` is consumed, as with `llvm-link`.
fn into<'ctx>(dest: &Module<'ctx>, src: Module<'ctx>, crates: &str) -> Result<()> {
    dest.link_in_module(src).map_err(|e| {
        anyhow!(
            "LLVM could not link crate(s) {} into the merged module: {}\n\
             This usually means two crates define the same symbol; fmerge checks for the ones it knows of, so please report this one.",
            crates,
            e.to_string().trim()
        )
    })
}

/// Parses a textual `.ll` file, as `--emit-ll` writes it, with the same LLVM.
pub fn parse_ll(path: &std::path::Path) -> Result<()> {
    let ctx = Context::create();
    let buffer = MemoryBuffer::create_from_file(path)
        .map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    let module = ctx.create_module_from_ir(buffer).map_err(|e| {
        anyhow!(
            "{} does not parse: {}",
            path.display(),
            e.to_string().trim()
        )
    })?;
    module.verify().map_err(|e| {
        anyhow!(
            "{} parses but does not verify: {}",
            path.display(),
            e.to_string().trim()
        )
    })
}
