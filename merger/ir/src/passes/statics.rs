//! Shared state: a `static` in a crate that several merged functions link.
//!
//! Unmerged, each function's process has its own copy of every static. In
//! one binary, a crate linked by two functions is linked once, so a mutable
//! static in it (a counter, a `OnceLock` client cache, a pool) becomes one
//! shared by both: a callee would use the Redis client the caller cached.
//! Registry crates (tokio, redis…) are built to be shared within a process;
//! the user's own path crates are checked, and a mutable static in one that
//! two merged functions link stops the merge, unless the user says sharing
//! it is intended (`--allow-shared-static`). Runs per crate, before linking.
//!
//! Watchdog-process members share nothing this way while each call has a
//! process of its own; a callee run in the caller's process keeps its
//! statics from one call to the next, so for them this pass records the
//! mutable statics of each of the user's crates ([`Found::mutable_statics`])
//! for the `in_process` conclusion.

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::{Result, bail};
use inkwell::module::Module;
use std::collections::BTreeSet;

/// The mutable statics one of the user's crates defines, in a merge of
/// watchdog processes.
#[derive(Debug, Clone)]
pub struct CrateStatics {
    pub crate_name: String,
    /// The merged functions that link it.
    pub owners: BTreeSet<String>,
    /// Each static as [`mutable`] says it.
    pub statics: Vec<String>,
}

/// Checks one of the user's crates that several merged functions
/// (`krate.owners`) link; for watchdog processes, records its mutable
/// statics instead.
pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    if !krate.local {
        return Ok(());
    }
    // Process-form members share no static while each call has a process
    // of its own; `in_process` decides whether one may run without.
    if facts.process {
        let statics = mutable(module, &[]);
        if !statics.is_empty() {
            found.mutable_statics.push(CrateStatics {
                crate_name: krate.name.to_string(),
                owners: krate.owners.clone(),
                statics,
            });
        }
        return Ok(());
    }
    if krate.owners.len() < 2 {
        return Ok(());
    }
    let (package, crate_name, functions, allowed) = (
        krate.package,
        krate.name,
        krate.owners,
        &facts.allow_shared_static,
    );
    if allowed.iter().any(|a| a == package || a == crate_name) {
        return Ok(());
    }
    let found = mutable(module, allowed);
    if found.is_empty() {
        return Ok(());
    }
    let functions = functions.iter().cloned().collect::<Vec<_>>().join(", ");
    bail!(
        "shared state: crate {package} keeps mutable static{} {} and is linked by {functions}. \
         Unmerged, each function has its own copy; merged into one binary they would share one, \
         so one function would see the other's counters, caches or connections\n\
         fix: keep the static in each function's own crate (declare it in the function's main.rs and pass it to {package}), \
         or, if sharing it is what you want, pass `--allow-shared-static {}`",
        if found.len() > 1 { "s" } else { "" },
        found.join(", "),
        found[0]
            .trim_start_matches('`')
            .split('`')
            .next()
            .unwrap_or(package)
    )
}

/// The mutable statics (non-constant or thread-local) a crate's module
/// defines from its source, each as `` `path` `` or `` `path` (thread-local) ``,
/// but those `allowed` names by path.
pub fn mutable(module: &Module<'_>, allowed: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for global in module.get_globals() {
        if global.is_declaration() || (global.is_constant() && !global.is_thread_local()) {
            continue;
        }
        let name = global.get_name().to_string_lossy().into_owned();
        if name.starts_with("llvm.")
            || name.starts_with("__rustc")
            || !(name.starts_with("_ZN") || name.starts_with("_R"))
        {
            continue; // not a Rust static of this crate's source
        }
        let path = ir::demangle(&name);
        if allowed.contains(&path) {
            continue;
        }
        found.push(if global.is_thread_local() {
            format!("`{path}` (thread-local)")
        } else {
            format!("`{path}`")
        });
    }
    found
}
