//! The run entry: a watchdog-process callee's Rust `main`, callable on a
//! thread of the caller's process.
//!
//! A callee's C `main` (renamed [`fmerge_contract::main_symbol`] by
//! `exports`) starts std's runtime, which a process does once: it sets up
//! stdio, the stack guard and SIGPIPE, and ends in `exit`. To run the callee
//! in the caller's process the shim needs what `main` runs inside that: std's
//! `lang_start::{{closure}}`, which calls the user's `main` and maps its
//! `Termination` to an exit code (a panic unwinds out of it). rustc builds
//! `main` one of two ways, and both name the closure only through
//! `lang_start_internal`'s vtable:
//!
//! - optimized, `lang_start` is inlined: `main` stores the user's `main`
//!   into a slot and calls `std::rt::lang_start_internal(slot, vtable, argc,
//!   argv, sigpipe)`, the vtable's last method being the closure;
//! - unoptimized, `main` calls `std::rt::lang_start::<T>(user_main, …)`,
//!   which does the same inside.
//!
//! This pass defines `i32 fmerge.run.<package>()` (external, may unwind) that
//! puts the user's `main` in a slot and calls the closure with it, and
//! records in [`Found::run_entries`] whether it could; where `main` has
//! another shape it defines nothing and records why (the `in_process`
//! conclusion then keeps that callee in a process of its own). Runs on a
//! process-form callee's bin, after `exports`.

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::{Context as _, Result, bail};
use inkwell::AddressSpace;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, FunctionValue, ValueKind};

/// std's runtime start, which `main` hands the closure to.
const LANG_START_INTERNAL: &str = "std::rt::lang_start_internal";
/// Its generic wrapper, which unoptimized `main`s call.
const LANG_START: &str = "std::rt::lang_start";

/// What a crate's `main` hands std's runtime: the user's `main` and the
/// closure that runs it.
struct Shape {
    user_main: ir::Value,
    closure: ir::Value,
}

pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    let Some(function) = krate
        .function
        .filter(|f| facts.process && *f != facts.caller)
    else {
        return Ok(());
    };
    let Some(main) = module.get_function(&fmerge_contract::main_symbol(function)) else {
        return Ok(());
    };
    let verdict = match shape(main.as_value_ref()) {
        Ok(shape) => {
            define(module, function, &shape)?;
            found.touched = true;
            Ok(())
        }
        Err(why) => Err(why),
    };
    found.run_entries.insert(function.to_string(), verdict);
    Ok(())
}

/// Where `main` hands the user's `main` and the closure to std's runtime,
/// or why it was not found.
fn shape(main: ir::Value) -> Result<Shape, String> {
    let unknown = |what: &str| {
        format!(
            "its `main` {what}, unlike the `main` rustc builds (std::rt::lang_start, or \
             lang_start_internal with the user's `main` and std's closure), so there is no \
             entry to run it by"
        )
    };
    for call in ir::calls_in(main) {
        let Some(callee) = ir::called_function(call) else {
            continue;
        };
        let path = ir::demangle(&ir::name(callee));
        if path == LANG_START_INTERNAL {
            return match internal(call) {
                Some((Some(user_main), closure)) => Ok(Shape { user_main, closure }),
                _ => Err(unknown(
                    "calls lang_start_internal with no `main` and closure fmerge can read",
                )),
            };
        }
        if path == LANG_START || path.starts_with(&format!("{LANG_START}::<")) {
            // `lang_start` stores its parameter: the user's `main` is this
            // call's first operand.
            let user_main = (ir::arg_count(call) > 0)
                .then(|| ir::operand(call, 0))
                .filter(|&v| ir::is_function(v));
            let closure = ir::calls_in(callee)
                .into_iter()
                .filter(|&c| {
                    ir::called_function(c)
                        .is_some_and(|f| ir::demangle(&ir::name(f)) == LANG_START_INTERNAL)
                })
                .find_map(internal)
                .map(|(_, closure)| closure);
            return match (user_main, closure) {
                (Some(user_main), Some(closure)) => Ok(Shape { user_main, closure }),
                _ => Err(unknown(
                    "calls std::rt::lang_start with no closure fmerge can read",
                )),
            };
        }
    }
    Err(unknown(
        "never calls std::rt::lang_start or lang_start_internal",
    ))
}

/// What one `lang_start_internal(slot, vtable, …)` call hands over: the
/// function stored in the slot, if one is (an unoptimized `lang_start`
/// stores its parameter), and the vtable's closure, which must be
/// `i32 (ptr)`.
fn internal(call: ir::Value) -> Option<(Option<ir::Value>, ir::Value)> {
    if ir::arg_count(call) < 2 {
        return None;
    }
    let closure = ir::last_method(ir::operand(call, 1))?;
    // SAFETY: `closure` is a function of a live module.
    let ty = unsafe { FunctionValue::new(closure) }?.get_type();
    let returns_i32 = ty
        .get_return_type()
        .is_some_and(|t| t.is_int_type() && t.into_int_type().get_bit_width() == 32);
    let params = ty.get_param_types();
    if !returns_i32 || params.len() != 1 || !params[0].is_pointer_type() {
        return None;
    }
    Some((ir::function_stored_in(ir::operand(call, 0)), closure))
}

/// Defines `i32 fmerge.run.<function>()`: the user's `main` in a slot, the
/// closure called with it, its exit code returned.
fn define(module: &Module<'_>, function: &str, shape: &Shape) -> Result<()> {
    let ctx = module.get_context();
    let ptr = ctx.ptr_type(AddressSpace::default());
    let entry = module.add_function(
        &fmerge_contract::run_symbol(function),
        ctx.i32_type().fn_type(&[], false),
        Some(Linkage::External),
    );
    // SAFETY: both are functions of this module.
    let (closure, user_main) = unsafe {
        (
            FunctionValue::new(shape.closure).context("the closure is a function")?,
            FunctionValue::new(shape.user_main).context("the user's main is a function")?,
        )
    };
    // The closure's codegen settings (target CPU, probe-stack, unwind
    // tables), so that the entry unwinds and inlines as std's code does;
    // never `nounwind`: a panic unwinds out of it to the shim.
    for attribute in closure.attributes(AttributeLoc::Function) {
        let keep = attribute.is_string()
            || (attribute.is_enum()
                && ["uwtable", "nonlazybind"].iter().any(|name| {
                    attribute.get_enum_kind_id() == Attribute::get_named_enum_kind_id(name)
                }));
        if keep {
            entry.add_attribute(AttributeLoc::Function, attribute);
        }
    }
    let builder = ctx.create_builder();
    builder.position_at_end(ctx.append_basic_block(entry, "start"));
    let slot = builder.build_alloca(ptr, "main")?;
    builder.build_store(slot, user_main.as_global_value().as_pointer_value())?;
    let ValueKind::Basic(code) = builder
        .build_call(closure, &[slot.into()], "code")?
        .try_as_basic_value()
    else {
        bail!("std's closure returns nothing");
    };
    builder.build_return(Some(&code))?;
    Ok(())
}
