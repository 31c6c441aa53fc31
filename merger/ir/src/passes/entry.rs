//! Entry check: a function's bin must export its handler entry.
//!
//! In-process dispatch calls a merged function through the entry its
//! `fmerge_runtime::function!` exports (`fmerge.entry.<name>`); a function
//! with a hand-written `main` has none, and could only be reached over the
//! network. Checked on each function's own bin, before linking, so the error
//! names that function. A watchdog-process member has no entry: its `main`
//! is what runs ([`Facts::process`]).

use crate::passes::{Crate, Facts, Found};
use anyhow::{Result, bail};
use inkwell::module::Module;
use inkwell::values::FunctionValue;

pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, _: &mut Found) -> Result<()> {
    if let Some(function) = krate.function.filter(|_| !facts.process) {
        find(module, function)?;
    }
    Ok(())
}

/// The handler entry `function` exports (`fmerge.entry.<function>`), or an
/// error saying it never declared one. `routes` uses it too.
pub fn find<'ctx>(module: &Module<'ctx>, function: &str) -> Result<FunctionValue<'ctx>> {
    let symbol = fmerge_contract::entry_symbol(function);
    match module
        .get_function(&symbol)
        .filter(|f| f.count_basic_blocks() > 0)
    {
        Some(entry) => Ok(entry),
        None => bail!(
            "{function} depends on fmerge-runtime but exports no `{symbol}`: it never declares its handler\n\
             fix: end its main.rs with `fmerge_runtime::function!(handler);` instead of a hand-written main"
        ),
    }
}
