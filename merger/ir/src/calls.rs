//! What one crate's bitcode tells the planner (`fmerge graph`, `fmerge plan`):
//! the functions it invokes, and whether `fmerge build` would refuse to merge
//! it with others.
//!
//! The call graph is read from the calls to `fmerge_runtime::invoke` (and
//! `invoke_request`, the same with a whole request) and the name each
//! passes, exactly: `invoke(function: &str, payload)` takes the
//! name as a pointer and a length, and a call whose two are a string constant
//! and a constant length names its callee, as does a helper's call that
//! passes its own `&str` parameter on, for each call of the helper with a
//! literal there (`helpers.rs`); any other call (a name built at run time, `invoke` taken
//! as a function pointer) names an unknown callee, never a guess. In optimized code `invoke` is inlined into the caller's
//! state machine and the name is only a store into it, so the planner's build
//! compiles the user's own crates at opt-level 0, where every call is still a
//! call (`fmerge_cargo::emit::Profile::unoptimized`).
//!
//! The refusals are the build's own rules, run on the same units: a
//! function's entry ([`entry::find`]), the mutable statics of a crate
//! several functions link ([`statics::run`], with the build's
//! `--allow-shared-static`), and the two rules that need two crates, which
//! the planner applies to pairs of units: the allocator a crate sets
//! ([`Allocator::of`], paired by [`Allocator::beside`]) and the exported
//! symbols (those the `exports` pass checks, paired by
//! [`exports::clash`](crate::passes::exports::clash)).

mod helpers;

use crate::ir;
use crate::passes::allocator::Allocator;
use crate::passes::{Crate, Facts, Found, entry, statics};
use crate::symbols;
use anyhow::Result;
use inkwell::llvm_sys::core::{
    LLVMGetCallSiteEnumAttribute, LLVMGetCalledValue, LLVMGetEnumAttributeKindForName,
};
use inkwell::module::Module;
use rayon::prelude::*;
use std::path::Path;

/// The runtime's `invoke`, as a demangled symbol without its hash. Its
/// instances are `…::invoke::<P>` under v0 mangling.
pub const INVOKE: &str = "fmerge_runtime::invoke::invoke";
/// The runtime's other call, of a whole request (`invoke_request`): the
/// callee's name is its first parameter too.
pub const INVOKE_REQUEST: &str = "fmerge_runtime::invoke::invoke_request";

/// One call of `invoke`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The function name it passes, when that is a literal.
    pub callee: Option<String>,
    /// The Rust function the call sits in (demangled, without hash).
    pub within: String,
}

/// Every call of `invoke` in `module`, in module order.
pub fn invoke_sites(module: &Module<'_>) -> Vec<Site> {
    let functions = helpers::Functions::of(module);
    let mut out = Vec::new();
    for f in module.get_functions() {
        let name = f.get_name().to_string_lossy();
        let path = ir::demangle(&name);
        let runtime_call = |call: &str| path == call || path.starts_with(&format!("{call}::<"));
        if !runtime_call(INVOKE) && !runtime_call(INVOKE_REQUEST) {
            continue;
        }
        let value = inkwell::values::AsValueRef::as_value_ref(&f);
        for ir::UseSite { user, index } in ir::uses(value) {
            let within = ir::demangle(&ir::enclosing_function(user));
            // SAFETY: `user` is a live instruction or constant of `module`.
            let called = ir::is_call(user) && unsafe { LLVMGetCalledValue(user) } == value;
            if called && index == ir::operand_count(user) - 1 {
                out.extend(helpers::names_at(&functions, user, name_index(user), 0));
            } else {
                // `invoke` passed around as a value: its callee is unknown.
                out.push(Site {
                    callee: None,
                    within,
                });
            }
        }
    }
    out
}

/// The argument at which a call of `invoke` passes its callee's name: the
/// first (after the returned future's `sret` slot, when it has one).
fn name_index(call: ir::Value) -> u32 {
    let sret = {
        let kind = b"sret";
        // SAFETY: a plain lookup by name; `call` is a live call instruction,
        // and attribute index 1 is its first argument.
        unsafe {
            let id = LLVMGetEnumAttributeKindForName(kind.as_ptr() as *const _, kind.len());
            !LLVMGetCallSiteEnumAttribute(call, 1, id).is_null()
        }
    };
    u32::from(sret)
}

/// One unit to survey: its bitcode and the crate it is.
pub struct Unit<'a> {
    pub bytes: &'a [u8],
    pub path: &'a Path,
    pub krate: Crate<'a>,
}

/// What one unit says.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    pub sites: Vec<Site>,
    pub exported: Vec<String>,
    /// The `#[global_allocator]` the crate sets, if it sets one.
    pub allocator: Option<Allocator>,
    /// For a function's bin: why it cannot be merged at all (no entry).
    pub entry: Option<String>,
    /// For one of the user's crates that several functions link: why those
    /// functions cannot be merged with each other (its mutable statics).
    pub shared_static: Option<String>,
}

/// Surveys every unit, in parallel (each in an LLVM context of its own);
/// `allow_shared_static` is the build's `--allow-shared-static`.
pub fn survey(units: &[Unit<'_>], allow_shared_static: &[String]) -> Result<Vec<Survey>> {
    let facts = Facts {
        allow_shared_static: allow_shared_static.to_vec(),
        ..Facts::default()
    };
    units
        .par_iter()
        .map(|unit| {
            let ctx = inkwell::context::Context::create();
            let module = crate::link::parse(&ctx, unit.bytes, unit.krate.name, unit.path)?;
            let krate = &unit.krate;
            let shared_static = (krate.local && krate.owners.len() > 1)
                .then(|| statics::run(&module, krate, &facts, &mut Found::default()).err())
                .flatten()
                .map(|e| format!("{e:#}"));
            let entry = krate
                .function
                .and_then(|f| entry::find(&module, f).err())
                .map(|e| format!("{e:#}"));
            Ok(Survey {
                sites: invoke_sites(&module),
                exported: symbols::exported(&module)
                    .iter()
                    .map(|g| g.get_name().to_string_lossy().into_owned())
                    .collect(),
                allocator: Allocator::of(&module, krate),
                entry,
                shared_static,
            })
        })
        .collect()
}
