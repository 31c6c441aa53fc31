//! Config report: the settings each function reads, found in the IR.
//!
//! A merged callee reads `<FUNCTION>__KEY` instead of `KEY` (the runtime
//! decides that at run time, from the function name that `config!` passes).
//! People deploying the merged binary need to know those names, so this
//! pass lists every `fmerge.config(function, key, default)` call site with
//! its literal arguments, after the endpoint rewrite has changed defaults.
//! It reads crate by crate, so no merge links the crates for it: an argument
//! whose bytes live in another crate's static counts as not literal (rustc
//! keeps a string literal, or a `const`, in the crate that uses it).

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::Result;
use inkwell::module::Module;

pub use fmerge_contract::CONFIG;

/// One setting read through `config!`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Setting {
    pub function: String,
    pub key: String,
    pub default: String,
    /// Read with `std::env` (isolated by the `env` pass): no default, unset
    /// stays unset.
    #[serde(default)]
    pub from_env: bool,
}

impl Setting {
    /// The environment variable this setting is read from when `caller` is
    /// the group's caller, the function whose main runs (the same rule as
    /// the runtime's).
    pub fn variable(&self, caller: &str) -> String {
        if self.function == caller {
            self.key.clone()
        } else {
            namespaced(&self.function, &self.key)
        }
    }
}

pub use fmerge_contract::namespaced;

/// Adds every setting read in this crate with literal arguments, and every
/// `std::env` read that `env` isolated so far, so after the last crate
/// `found.settings` lists them all.
pub fn run(module: &Module<'_>, _: &Crate, _: &Facts, found: &mut Found) -> Result<()> {
    found.settings.extend(read(module));
    found
        .settings
        .extend(found.isolated.iter().map(|read| Setting {
            function: read.function.clone(),
            key: read.key.clone(),
            default: String::new(),
            from_env: true,
        }));
    Ok(())
}

/// Every `config!` call with literal arguments.
fn read(module: &Module<'_>) -> Vec<Setting> {
    let Some(reader) = module.get_function(CONFIG) else {
        return Vec::new();
    };
    ir::uses(reader.as_global_value().as_pointer_value().as_value_ref())
        .into_iter()
        .map(|site| site.user)
        .filter(|&user| ir::is_call(user) && ir::callee_name(user).as_deref() == Some(CONFIG))
        // Rust ABI: (sret String, function, function len, key, key len, default, default len).
        .filter_map(|call| {
            Some(Setting {
                function: ir::str_arg(call, 1)?,
                key: ir::str_arg(call, 3)?,
                default: ir::str_arg(call, 5)?,
                from_env: false,
            })
        })
        .collect()
}

use inkwell::values::AsValueRef;
