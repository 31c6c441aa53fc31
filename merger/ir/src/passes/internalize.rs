//! Internalize: every symbol but `main` becomes internal.
//!
//! The crates were compiled to be linked with each other, so their symbols
//! are external; once they are all in one module, internalizing all but
//! `main` lets the optimizer inline across functions and drop what the
//! merged program never reaches, as fat LTO does. Kept external: `main`,
//! the unmangled symbols that native code may call, and the allocator's
//! `___rustc` symbols that the standard library and the shim call.

use crate::passes::{Facts, Found};
use crate::symbols::{defined, internalize, is_exported};
use anyhow::Result;
use inkwell::module::{Linkage, Module};

pub fn run(module: &Module<'_>, _: &Facts, found: &mut Found) -> Result<()> {
    for global in defined(module) {
        let name = global.get_name().to_string_lossy().into_owned();
        let keep = name == "main"
            || name.starts_with("llvm.")
            || name.contains("___rustc")
            || is_exported(&name);
        let local = matches!(global.get_linkage(), Linkage::Internal | Linkage::Private);
        if !keep && !local && !matches!(global.get_linkage(), Linkage::Appending) {
            internalize(global);
            found.internalized += 1;
        }
    }
    Ok(())
}
