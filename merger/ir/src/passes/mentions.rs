//! Mentions: which callees each merged function's code names.
//!
//! A caller invokes a callee by name, so the name is a string literal in its
//! code. A callee that no merged function names is never invoked: merging it
//! saves no RPC, and it is most likely the wrong function (`uncalled` warns
//! about it once every crate has been seen). Runs on each function's own bin.

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::Result;
use inkwell::module::Module;

pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    let Some(function) = krate.function else {
        return Ok(());
    };
    let literals: Vec<Vec<u8>> = ir::globals(module)
        .into_iter()
        .filter_map(ir::string_bytes)
        .collect();
    for callee in facts.callees.iter().filter(|c| *c != function) {
        // A process-form function is called by its OpenFaaS name, which a
        // CamelCase package's is not.
        let names = [callee.clone(), fmerge_contract::function_name(callee)];
        let named = names.iter().any(|name| {
            let needle = name.as_bytes();
            literals
                .iter()
                .any(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
        });
        if named {
            found.mentioned.insert(callee.clone());
        }
    }
    Ok(())
}
