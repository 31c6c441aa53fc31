//! Symbol helpers that `exports` and `internalize` share.

use inkwell::GlobalVisibility;
use inkwell::module::{Linkage, Module};
use inkwell::values::GlobalValue;

/// An unmangled symbol that the merge contract does not own.
pub fn is_exported(name: &str) -> bool {
    let owned = ["_ZN", "_R", "fmerge.", "llvm."];
    !(name.is_empty() || owned.iter().any(|p| name.starts_with(p)))
}

/// Whether a symbol stays external when the crates that define it are
/// optimized as one: `main`, the unmangled symbols that native code may
/// call, and the allocator's `___rustc` symbols that the standard library
/// and the shim call.
pub fn stays_external(name: &str) -> bool {
    name == "main"
        || name.starts_with("llvm.")
        || name.contains("___rustc")
        || is_exported(name)
        // A process-form callee's `main`, run entry and handler-library
        // entry, which the shim calls.
        || name.starts_with(fmerge_contract::MAIN_PREFIX)
        || name.starts_with(fmerge_contract::RUN_PREFIX)
        || name.starts_with(fmerge_contract::HANDLE_PREFIX)
}

/// Makes every symbol the module defines internal but those `keep` names
/// (and the local ones and appending lists, which already are or cannot
/// be); returns how many it changed.
pub fn internalize_all(module: &Module<'_>, keep: impl Fn(&str) -> bool) -> usize {
    let mut changed = 0;
    for global in defined(module) {
        let name = global.get_name().to_string_lossy();
        let linkage = global.get_linkage();
        if !keep(&name)
            && !matches!(
                linkage,
                Linkage::Internal | Linkage::Private | Linkage::Appending
            )
        {
            internalize(global);
            changed += 1;
        }
    }
    changed
}

pub fn internalize(global: GlobalValue<'_>) {
    global.set_visibility(GlobalVisibility::Default);
    global.set_linkage(Linkage::Internal);
    global.set_dll_storage_class(inkwell::DLLStorageClass::Default);
}

/// The unmangled symbols the module defines with external linkage: what
/// two crates may clash on. The `exports` pass checks them as it links each
/// crate, and `fmerge graph` pairs them across crates (`calls`).
pub fn exported<'ctx>(module: &Module<'ctx>) -> Vec<GlobalValue<'ctx>> {
    defined(module)
        .into_iter()
        .filter(|g| matches!(g.get_linkage(), Linkage::External))
        .filter(|g| is_exported(&g.get_name().to_string_lossy()))
        .collect()
}

/// Every function, global variable and alias defined (not just declared)
/// here: an alias defines its name as much as a function does.
pub fn defined<'ctx>(module: &Module<'ctx>) -> Vec<GlobalValue<'ctx>> {
    let functions = module.get_functions().map(|f| f.as_global_value());
    let globals = module.get_globals();
    functions
        .chain(globals)
        .filter(|g| !g.is_declaration())
        .chain(crate::ir::aliases(module))
        .collect()
}
