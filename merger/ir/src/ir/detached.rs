//! A module moved between threads together with its context.

use inkwell::llvm_sys::prelude::LLVMModuleRef;
use inkwell::module::Module;

/// A module and the context that owns it, handed from the thread that made
/// them to one that compiles them (inkwell's `Module` borrows its context,
/// so the pair cannot move as inkwell types).
pub struct Detached {
    ctx: inkwell::context::Context,
    module: LLVMModuleRef,
}

// SAFETY: an LLVM context and its modules may move between threads as long
// as one thread at a time uses them; `detached` keeps the only handle to the
// module, and `Detached` hands it back to exactly one user.
unsafe impl Send for Detached {}

/// Makes a module in a new context of its own, with `make`, detached.
pub fn detached<E>(
    make: impl FnOnce(&inkwell::context::Context) -> Result<Module<'_>, E>,
) -> Result<Detached, E> {
    let ctx = inkwell::context::Context::create();
    let module = make(&ctx)?;
    let raw = module.as_mut_ptr();
    // The module is owned by `ctx` from here on, until `with` takes it back.
    std::mem::forget(module);
    Ok(Detached { ctx, module: raw })
}

impl Detached {
    /// Runs `f` on the module, which stays.
    pub fn borrow<T>(&self, f: impl FnOnce(&Module<'_>) -> T) -> T {
        // SAFETY: as in `with`; the `Module` made here is forgotten, not
        // dropped, so the module stays owned by `self`.
        let module = unsafe { Module::new(self.module) };
        let out = f(&module);
        std::mem::forget(module);
        out
    }

    /// Runs `f` on the module, then frees the module and its context.
    pub fn with<T>(self, f: impl FnOnce(&Module<'_>) -> T) -> T {
        // SAFETY: `self.module` is the module `detached` made, alive and owned by
        // `self.ctx`; the `Module` made here drops it before the context.
        let module = unsafe { Module::new(self.module) };
        let out = f(&module);
        drop(module);
        drop(self.ctx);
        out
    }
}
