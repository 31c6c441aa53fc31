//! Definitions turned into declarations, and linkage changed: what the
//! split does to each partition's copy of the module, and what the allocator
//! pass does to a function it replaces.

use super::{Value, name};
use inkwell::llvm_sys::core::*;
use inkwell::module::Module;

/// Makes a local symbol (internal or private) visible to the other
/// partitions' objects, but not outside the binary: external and hidden.
/// An unnamed one gets `name`.
pub fn promote_hidden(v: Value, name: &str) {
    use inkwell::llvm_sys::{LLVMLinkage, LLVMVisibility};
    unsafe {
        let linkage = LLVMGetLinkage(v);
        if matches!(
            linkage,
            LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
        ) {
            if LLVMGetValueName2(v, &mut 0).is_null() || self::name(v).is_empty() {
                LLVMSetValueName2(v, name.as_ptr() as *const _, name.len());
            }
            LLVMSetLinkage(v, LLVMLinkage::LLVMExternalLinkage);
            LLVMSetVisibility(v, LLVMVisibility::LLVMHiddenVisibility);
        }
    }
}

/// Turns a defined function into a declaration of itself: its body, its
/// personality, its metadata and its comdat go; calls to it stay.
pub fn make_declaration(f: Value) {
    unsafe {
        // Uses of its own instructions go first, so the blocks can be deleted
        // in any order.
        for i in super::instructions(f) {
            let ty = LLVMTypeOf(i);
            if LLVMGetTypeKind(ty) != inkwell::llvm_sys::LLVMTypeKind::LLVMVoidTypeKind {
                LLVMReplaceAllUsesWith(i, LLVMGetPoison(ty));
            }
        }
        while !LLVMGetFirstBasicBlock(f).is_null() {
            LLVMDeleteBasicBlock(LLVMGetFirstBasicBlock(f));
        }
        if LLVMHasPersonalityFn(f) != 0 {
            LLVMSetPersonalityFn(f, std::ptr::null_mut());
        }
        LLVMGlobalClearMetadata(f);
        drop_comdat(f);
        LLVMSetLinkage(f, inkwell::llvm_sys::LLVMLinkage::LLVMExternalLinkage);
    }
}

/// Turns a defined global variable into a declaration of itself.
pub fn drop_initializer(g: Value) {
    unsafe {
        LLVMSetInitializer(g, std::ptr::null_mut());
        LLVMGlobalClearMetadata(g);
        drop_comdat(g);
        LLVMSetLinkage(g, inkwell::llvm_sys::LLVMLinkage::LLVMExternalLinkage);
    }
}

fn drop_comdat(v: Value) {
    unsafe {
        if !inkwell::llvm_sys::comdat::LLVMGetComdat(v).is_null() {
            inkwell::llvm_sys::comdat::LLVMSetComdat(v, std::ptr::null_mut());
        }
    }
}

/// Deletes a global variable (`llvm.used` in all partitions but one).
pub fn delete_global(g: Value) {
    unsafe { LLVMDeleteGlobal(g) }
}

/// Points every use of each alias at what it aliases (when that is a
/// function or a global variable), so that unused aliases can be removed.
pub fn bypass_aliases(module: &Module) {
    unsafe {
        let mut a = LLVMGetFirstGlobalAlias(module.as_mut_ptr());
        while !a.is_null() {
            let target = LLVMAliasGetAliasee(a);
            if !LLVMIsAFunction(target).is_null() || !LLVMIsAGlobalVariable(target).is_null() {
                LLVMReplaceAllUsesWith(a, target);
                // A Rust-mangled alias is never called by name from outside.
                let n = name(a);
                if n.starts_with("_ZN") || n.starts_with("_R") {
                    LLVMSetLinkage(a, inkwell::llvm_sys::LLVMLinkage::LLVMInternalLinkage);
                }
            }
            a = LLVMGetNextGlobalAlias(a);
        }
    }
}
