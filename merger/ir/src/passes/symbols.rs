//! Symbol policy: one `main`, no clashes, and everything else internal.
//!
//! Each function was built as its own binary, so each has a C `main` that
//! starts its server; in the merged binary only the caller's may stay. Each
//! may also export unmangled (`#[no_mangle]`) symbols, and two definitions of
//! one name would make the link fail or, worse, pick one silently. Finally,
//! the crates were compiled to be linked with each other, so their symbols are
//! external; internalizing all but `main` lets the optimizer inline across
//! functions and drop what the merged program never reaches, as fat LTO does.

use crate::ir;
use crate::passes::{Crate, Facts};
use anyhow::{Result, bail};
use inkwell::GlobalVisibility;
use inkwell::module::{Linkage, Module};
use std::collections::HashMap;

/// A crate as this pass remembers it: its name, and the function it is the bin of.
struct Unit {
    crate_name: String,
    function: Option<String>,
}

/// Unmangled symbols defined so far, and by which unit.
#[derive(Default)]
pub struct Exports {
    defined: HashMap<String, (String, Option<String>)>,
    /// Symbols renamed to settle a clash between two functions' own crates.
    pub renamed: Vec<String>,
}

/// Prepares one crate before it is linked: drops a callee's `main` and checks
/// (or settles) clashes of exported symbols with the crates linked before it.
pub fn prepare(
    module: &Module<'_>,
    krate: &Crate,
    facts: &Facts,
    exports: &mut Exports,
) -> Result<()> {
    let unit = Unit {
        crate_name: krate.name.to_string(),
        function: krate.function.map(str::to_string),
    };
    if let Some(function) = unit.function.as_deref().filter(|f| *f != facts.caller)
        && let Some(main) = module.get_function("main")
    {
        main.as_global_value()
            .set_name(&format!("fmerge.main.{function}"));
        internalize(main.as_global_value());
    }
    for global in defined(module) {
        let name = global.get_name().to_string_lossy().into_owned();
        if !is_exported(&name) || !matches!(global.get_linkage(), Linkage::External) {
            continue;
        }
        let Some((crate_name, function)) = exports.defined.get(&name).cloned() else {
            exports
                .defined
                .insert(name, (unit.crate_name.clone(), unit.function.clone()));
            continue;
        };
        match (&function, &unit.function) {
            // Native code calls it by name: renaming would send that call elsewhere.
            (Some(first), Some(mine)) if facts.native_refs.contains_key(&name) => bail!(
                "symbol clash: functions {first} (crate {crate_name}) and {mine} (crate {}) both export `{name}`, \
                 and native code calls it by name ({} refers to it).\n\
                 fmerge cannot give each function its own `{name}`: the C code would call one function's version from both.\n\
                 Fix: give one of them another name with #[unsafe(export_name = \"...\")] (and in its C code), or merge these functions separately.",
                unit.crate_name,
                facts.native_refs[&name]
            ),
            // Both in functions' own code, and nothing native calls it by
            // name: each function keeps its own.
            (Some(_), Some(mine)) => {
                let new = format!("{name}.{mine}");
                global.set_name(&new);
                exports
                    .renamed
                    .push(format!("{name} in {mine} is now {new}"));
            }
            _ => bail!(
                "symbol clash: crates {crate_name} and {} both define the exported symbol `{name}`.\n\
                 fmerge cannot rename it, because code outside these crates may call it by name.\n\
                 Fix: make the functions use one version of the crate that defines it (`cargo tree -i <crate>` shows who pulls in each), \
                 or give one definition another name with #[unsafe(export_name = \"...\")].",
                unit.crate_name
            ),
        }
    }
    Ok(())
}

/// Internalizes every defined symbol except `main`, the unmangled symbols
/// that native code may call, and the allocator shim's `___rustc` symbols
/// that the standard library calls. Returns how many were internalized.
pub fn run(module: &Module<'_>) -> usize {
    let mut count = 0;
    for global in defined(module) {
        let name = global.get_name().to_string_lossy().into_owned();
        let keep = name == "main"
            || name.starts_with("llvm.")
            || name.contains("___rustc")
            || is_exported(&name);
        let local = matches!(global.get_linkage(), Linkage::Internal | Linkage::Private);
        if !keep && !local && !matches!(global.get_linkage(), Linkage::Appending) {
            internalize(global);
            count += 1;
        }
    }
    count
}

/// The allocator shim fmerge links is rustc's default one (it calls the
/// system allocator); a function with its own `#[global_allocator]` would be
/// silently switched to it, so that is refused instead.
pub fn check_allocator(module: &Module<'_>) -> Result<()> {
    let custom = defined(module).into_iter().find(|g| {
        let name = g.get_name().to_string_lossy();
        name.contains("___rg_alloc") || name.ends_with("___rustc12___rust_alloc")
    });
    if let Some(symbol) = custom {
        bail!(
            "a merged function sets its own #[global_allocator] ({}), and fmerge links rustc's default allocator shim.\n\
             Fix: remove the #[global_allocator] from the functions you merge (merged functions share one heap anyway).",
            ir::demangle(&symbol.get_name().to_string_lossy())
        );
    }
    Ok(())
}

/// An unmangled symbol that the merge contract does not own.
fn is_exported(name: &str) -> bool {
    let owned = ["_ZN", "_R", "fmerge.", "llvm."];
    !(name.is_empty() || owned.iter().any(|p| name.starts_with(p)))
}

fn internalize(global: inkwell::values::GlobalValue<'_>) {
    global.set_visibility(GlobalVisibility::Default);
    global.set_linkage(Linkage::Internal);
    global.set_dll_storage_class(inkwell::DLLStorageClass::Default);
}

/// Every function and global variable defined (not just declared) here.
fn defined<'ctx>(module: &Module<'ctx>) -> Vec<inkwell::values::GlobalValue<'ctx>> {
    let functions = module.get_functions().map(|f| f.as_global_value());
    let globals = module.get_globals();
    functions
        .chain(globals)
        .filter(|g| !g.is_declaration())
        .collect()
}
