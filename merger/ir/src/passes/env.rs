//! Settings isolation for code that reads `std::env` directly.
//!
//! `config!` namespaces a merged callee's settings at run time
//! (`<CALLEE>__KEY`), but code written against plain `std::env::var("KEY")`
//! would read the caller's `KEY` once merged, and so talk to the caller's
//! database. In callee-owned crates this pass gives each such call the same
//! rule: a literal key passed to `std::env::{var, var_os, set_var,
//! remove_var}` becomes `<CALLEE>__KEY`. A key fmerge cannot see (built at
//! run time) or `std::env::vars()` cannot be isolated, and is reported as a
//! warning naming the function and the Rust item. It runs per crate module,
//! before linking, while the crate's owner is known.

use crate::ir::{self, Value};
use crate::passes::config::namespaced;
use crate::passes::{Crate, Facts, Found};
use anyhow::Result;
use inkwell::module::Module;
use std::collections::BTreeSet;

/// The `std::env` functions that take a variable's name, as demangled
/// without generics or hash.
const BY_NAME: &[&str] = &[
    "std::env::var",
    "std::env::var_os",
    "std::env::_var",
    "std::env::_var_os",
    "std::env::set_var",
    "std::env::remove_var",
    "std::env::_set_var",
    "std::env::_remove_var",
];
const ALL: &[&str] = &["std::env::vars", "std::env::vars_os"];

/// A `std::env` read, now namespaced: `function`'s read of `key`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EnvRead {
    pub function: String,
    pub key: String,
}

/// Rewrites the env reads of one of the user's crates, when a single callee
/// links it (into `found.isolated`); in a crate that the caller (or several
/// callees) link too, reads are only reported (`found.warnings`).
pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    // A process-form callee gets its own environment in its own process.
    if !krate.local || facts.process {
        return Ok(());
    }
    let (crate_name, owner, shared_by) = (krate.name, krate.callee_owner(facts), krate.owners);
    for (call, target) in env_calls(module) {
        let site = ir::demangle(&ir::enclosing_function(call));
        if site.starts_with("std::env::") {
            continue; // std's own generic wrapper, instantiated here; its callers are what count
        }
        if ALL.contains(&target.as_str()) {
            if owner.is_some() || shared_by.len() > 1 {
                found.warnings.push(format!(
                    "{} (crate {crate_name}) lists every environment variable in `{site}` (`{target}`): merged, it sees the caller's environment",
                    who(owner, shared_by)
                ));
            }
            continue;
        }
        let key = (0..ir::arg_count(call)).find_map(|i| ir::str_arg(call, i).map(|k| (i, k)));
        match (owner, key) {
            (Some(function), Some((i, key))) => {
                let new = namespaced(function, &key);
                let global = ir::add_private_string(module, &format!("fmerge.env.{function}.{key}"), new.as_bytes());
                let len = ir::operand(call, i + 1);
                ir::set_operand(call, i, global);
                ir::set_operand(call, i + 1, ir::const_int_like(len, new.len() as u64));
                found.touched = true;
                found.isolated.insert(EnvRead {
                    function: function.to_string(),
                    key,
                });
            }
            (Some(function), None) => found.warnings.push(format!(
                "{function} (crate {crate_name}) reads an environment variable whose name is computed at run time in `{site}`: \
                 fmerge cannot namespace it, so merged it reads the caller's variable of that name\n\
                 fix: use a literal name, or `fmerge_runtime::config!`"
            )),
            (None, Some((_, key))) if shared_by.len() > 1 => found.warnings.push(format!(
                "crate {crate_name} reads the environment variable {key} in `{site}` and is linked by {}: merged, they all read the caller's {key}\n\
                 fix: read it in each function's own crate (`fmerge_runtime::config!`) and pass it in",
                shared_by.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            _ => {}
        }
    }
    Ok(())
}

fn who(owner: Option<&str>, shared_by: &BTreeSet<String>) -> String {
    owner
        .map(str::to_string)
        .unwrap_or_else(|| shared_by.iter().cloned().collect::<Vec<_>>().join(", "))
}

/// Every call to a `std::env` function of [`BY_NAME`] or [`ALL`], with that
/// function's demangled path.
fn env_calls(module: &Module<'_>) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    for f in module.get_functions() {
        let name = f.get_name().to_string_lossy().into_owned();
        let path = ir::demangle(&name);
        let path = path.split("::<").next().unwrap_or_default().to_string();
        if !(BY_NAME.contains(&path.as_str()) || ALL.contains(&path.as_str())) {
            continue;
        }
        let value =
            inkwell::values::AsValueRef::as_value_ref(&f.as_global_value().as_pointer_value());
        for ir::UseSite { user, .. } in ir::uses(value) {
            if ir::is_call(user) && ir::callee_name(user).as_deref() == Some(name.as_str()) {
                out.push((user, path.clone()));
            }
        }
    }
    out.sort_by_key(|(call, _)| ir::demangle(&ir::enclosing_function(*call)));
    out
}
