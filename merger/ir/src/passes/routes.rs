//! Routes: an `invoke` of a merged callee calls its handler in-process.
//!
//! The runtime's `invoke` consults the table `fmerge.routes` before it goes
//! to the network, and every unmerged binary carries that table empty. This
//! pass fills it with the merged callees' entries (`fmerge.entry.<name>`) and
//! makes it a constant, so that `invoke` of a merged callee never opens a
//! socket, and the optimizer may resolve a lookup by a constant name to a
//! direct call. Functions that are not merged have no entry in the table, so
//! their calls still go through the gateway. A callee the `blocking` pass
//! found blocking its thread is marked to run on threads of its own.

use crate::passes::{Facts, Found, entry};
use anyhow::{Context as _, Result};
use inkwell::AddressSpace;
use inkwell::module::{Linkage, Module};
use inkwell::values::{BasicValue, GlobalValue, PointerValue, StructValue};

pub use fmerge_contract::{ENTRY_PREFIX, ROUTES};
use fmerge_contract::{Field, ROUTE_LAYOUT, ROUTES_LAYOUT};
use inkwell::context::ContextRef;
use inkwell::types::{BasicTypeEnum, StructType};

/// A `repr(C)` struct of the contract's layout as an LLVM type.
fn layout<'ctx>(ctx: &ContextRef<'ctx>, fields: &[Field]) -> StructType<'ctx> {
    let types: Vec<BasicTypeEnum> = fields
        .iter()
        .map(|f| match f {
            Field::Ptr => ctx.ptr_type(AddressSpace::default()).into(),
            Field::Usize => ctx.i64_type().into(),
        })
        .collect();
    ctx.struct_type(&types, false)
}

/// Fills the dispatch table with the callees. Fails if a callee exports no
/// entry, which means it does not declare its handler with `function!`.
pub fn run(module: &Module<'_>, facts: &Facts, found: &mut Found) -> Result<()> {
    if facts.process {
        return Ok(()); // no runtime, no table: the shim runs process-form callees
    }
    let old = module.get_global(ROUTES).context(
        "the merged module has no `fmerge.routes` table: the functions were built with an fmerge-runtime \
         that predates in-process dispatch\n\
         fix: update the functions' fmerge-runtime dependency",
    )?;
    let mut entries = Vec::new();
    for callee in &facts.callees {
        let entry = entry::find(module, callee)?
            .as_global_value()
            .as_pointer_value();
        entries.push((
            callee.as_str(),
            entry,
            found.blocking.contains_key(callee.as_str()),
        ));
    }
    let new = table(module, &entries);
    old.as_pointer_value()
        .replace_all_uses_with(new.as_pointer_value());
    // SAFETY: every use was moved to `new` just above.
    unsafe { old.delete() };
    new.set_name(ROUTES);
    found.routes = facts.callees.len();
    Ok(())
}

/// Adds the table of `entries` (each callee, its entry, whether it runs on
/// threads of its own) to `module`, as the internal constant
/// `fmerge.routes.merged`.
pub(crate) fn table<'ctx>(
    module: &Module<'ctx>,
    entries: &[(&str, PointerValue<'ctx>, bool)],
) -> GlobalValue<'ctx> {
    let ctx = module.get_context();
    let usize = ctx.i64_type();
    let route = layout(&ctx, &ROUTE_LAYOUT);
    let mut routes: Vec<StructValue> = Vec::new();
    for &(callee, entry, isolate) in entries {
        let name = ctx.const_string(callee.as_bytes(), false);
        let name_global =
            module.add_global(name.get_type(), None, &format!("fmerge.route.{callee}"));
        name_global.set_initializer(&name);
        name_global.set_constant(true);
        name_global.set_linkage(Linkage::Private);
        name_global.set_unnamed_addr(true);
        routes.push(route.const_named_struct(&[
            name_global.as_pointer_value().into(),
            usize.const_int(callee.len() as u64, false).into(),
            entry.into(),
            usize.const_int(isolate as u64, false).into(),
        ]));
    }
    let array = route.const_array(&routes);
    let table = module.add_global(array.get_type(), None, "fmerge.routes.table");
    table.set_initializer(&array);
    table.set_constant(true);
    table.set_linkage(Linkage::Private);

    let header = layout(&ctx, &ROUTES_LAYOUT);
    let value = header.const_named_struct(&[
        table.as_pointer_value().into(),
        usize.const_int(entries.len() as u64, false).into(),
    ]);
    let new = module.add_global(header, None, "fmerge.routes.merged");
    new.set_initializer(&value.as_basic_value_enum());
    new.set_constant(true);
    new.set_linkage(Linkage::Internal);
    new.set_alignment(8);
    new
}
