//! Internalize: every symbol but `main` becomes internal.
//!
//! The crates were compiled to be linked with each other, so their symbols
//! are external; once they are all in one module, internalizing all but
//! `main` lets the optimizer inline across functions and drop what the
//! merged program never reaches, as fat LTO does. Kept external: what
//! `stays_external` names.

use crate::passes::{Facts, Found};
use crate::symbols::{internalize_all, stays_external};
use anyhow::Result;
use inkwell::module::Module;

pub fn run(module: &Module<'_>, _: &Facts, found: &mut Found) -> Result<()> {
    found.internalized += internalize_all(module, stays_external);
    Ok(())
}
