//! The reuse path (`--lto off` and `own`): link the objects cargo already compiled,
//! and compile from IR only what the merge changed, as rustc's own final
//! link does with the crates' objects.
//!
//! Every pass still reads every crate (`merge` links them all), but
//! the merged module is not compiled. Instead each crate is one [`Piece`]:
//! a crate no crate pass touched links cargo's object, since its bitcode is
//! the module rustc compiled that object from (a library's rlib, a bin's
//! object, which `--emit=obj` keeps; a callee's `main`, which `exports`
//! drops, is made weak there instead); a crate a pass changed is compiled
//! from its module after the crate passes, on its own, so that its
//! object's content decides its cache key. Of the module passes, two change
//! code ([`crate::passes::REDONE_BY_REUSE`]): `internalize` is left out (a
//! crate must keep the symbols the other crates' objects call), and the
//! table `routes` fills becomes an object of its own ([`table`]), whose
//! strong `fmerge.routes` wins over the runtime's empty one (made weak in
//! its object, or a declaration in its IR).
//!
//! With `--lto own`, the group's own crates (`Unit::joint`) compile
//! from IR whether a pass changed them or not, all into one object: their
//! modules are linked and optimized together ([`compile`]).

use crate::passes::routes::{self, ROUTES};
use crate::{Target, codegen, ir, link, symbols};
use anyhow::{Result, anyhow};
use inkwell::context::Context;
use inkwell::module::Linkage;
use inkwell::passes::PassBuilderOptions;
use inkwell::values::AsValueRef;
use std::collections::BTreeMap;
use std::path::Path;

/// How one crate gets into the merged binary.
pub struct Piece {
    /// The unit's place in what `merge` was given.
    pub unit: usize,
    /// What compiles from IR; `None` when cargo's object is linked as it is.
    pub compiled: Option<Compiled>,
    /// The symbols to make weak in cargo's object, for what the merge
    /// changes in other ways: the runtime's (empty) `fmerge.routes`, which
    /// the table's object defines, and a callee's `main`, which the caller's
    /// wins over ([`crate::passes::Found::dropped_main`]).
    pub weaken: Vec<&'static str>,
    /// It lists `#[used]` items (`llvm.used`), which the merged module keeps
    /// and rustc's own link keeps too (its `symbols.o` names them) even when
    /// nothing calls the crate: its object is then linked whole, not as an
    /// archive member the linker may leave out.
    pub keeps_used: bool,
    /// It compiles with the other joint pieces, as one module (`Unit::joint`).
    pub joint: bool,
}

/// A crate compiled from IR.
pub struct Compiled {
    /// Why, for people ([`why_compiled`]).
    pub why: &'static str,
    /// Its module after the crate passes, as bitcode.
    pub bitcode: Vec<u8>,
}

/// Why the joint crates compile from IR (`Unit::joint`), for people.
pub const JOINT: &str = "--lto own optimizes the group's own crates together";

/// Why a crate compiles from IR, for people; `None`: cargo's object serves.
pub fn why_compiled(
    object: bool,
    unoptimized: bool,
    touched: bool,
    joint: bool,
) -> Option<&'static str> {
    match () {
        _ if !object => Some("cargo kept no object of it"),
        _ if unoptimized => Some("cargo built it at opt-level 0 for --rewrite"),
        _ if touched => Some("a pass changed it"),
        _ if joint => Some(JOINT),
        _ => None,
    }
}

/// The symbols [`Piece::weaken`] lists for a crate.
pub(crate) fn weaken(
    module: &inkwell::module::Module<'_>,
    dropped_main: bool,
) -> Vec<&'static str> {
    let routes = module
        .get_global(ROUTES)
        .is_some_and(|g| !g.is_declaration());
    let mut out = Vec::new();
    out.extend(routes.then_some(ROUTES));
    out.extend(dropped_main.then_some("main"));
    out
}

/// Whether `module` lists `#[used]` items.
pub(crate) fn keeps_used(module: &inkwell::module::Module<'_>) -> bool {
    ["llvm.used", "llvm.compiler.used"]
        .iter()
        .any(|name| module.get_global(name).is_some())
}

/// A callee of the dispatch table.
pub struct RoutedCallee {
    pub name: String,
    /// It runs on threads of its own.
    pub isolate: bool,
}

/// The dispatch table alone, as bitcode: `fmerge.routes` (exported) naming
/// each callee's entry, which the callee's own object defines.
pub fn table(callees: &[RoutedCallee], target: &Target) -> Result<Vec<u8>> {
    let machine = codegen::machine(target.triple, target.opt_level)?;
    let ctx = Context::create();
    let module = ctx.create_module("fmerge.routes");
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    let entry_type = ctx.void_type().fn_type(&[], false);
    let entries: Vec<_> = callees
        .iter()
        .map(
            |RoutedCallee {
                 name: callee,
                 isolate,
             }| {
                let symbol = fmerge_contract::entry_symbol(callee);
                let entry = module.add_function(&symbol, entry_type, Some(Linkage::External));
                let pointer = entry.as_global_value().as_pointer_value();
                (callee.as_str(), pointer, *isolate)
            },
        )
        .collect();
    let table = routes::table(&module, &entries);
    table.set_name(ROUTES);
    table.set_linkage(Linkage::External);
    codegen::verify(&module, "the dispatch table")?;
    Ok(module.write_bitcode_to_memory().as_slice().to_vec())
}

/// The callees and whether each runs on threads of its own, for [`table`].
pub(crate) fn callees(
    callees: &[String],
    blocking: &BTreeMap<String, crate::passes::blocking::BlockingCall>,
) -> Vec<RoutedCallee> {
    callees
        .iter()
        .map(|c| RoutedCallee {
            name: c.clone(),
            isolate: blocking.contains_key(c),
        })
        .collect()
}

/// Compiles a piece's bitcode, or [`table`]'s (`is_table`), to the object
/// `object`, on the calling thread, in a context of its own: pieces compile
/// in parallel. Joint pieces come together (`bitcode` holds one module
/// each): they are linked into one module, their symbols made internal but
/// for what other objects call (`joint_internalize`), and optimized with
/// the pipeline of `--lto fat`, across each other. Otherwise code nothing
/// reaches any more (a callee's `main`) is dropped. In a piece, a
/// definition of `fmerge.routes` (the runtime's empty one) becomes a
/// declaration first, so that the table's object defines it.
pub fn compile(
    bitcode: &[Vec<u8>],
    what: &str,
    is_table: bool,
    target: &Target,
    object: &Path,
) -> Result<()> {
    let machine = codegen::machine(target.triple, target.opt_level)?;
    let ctx = Context::create();
    let modules = bitcode
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let module = link::parse(&ctx, b, what, Path::new(what))?;
            Ok(link::Linkable {
                module,
                crates: format!("{what} #{i}"),
                size: b.len(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let joint = modules.len() > 1;
    let module = link::all(modules)?;
    codegen::verify(&module, what)?;
    if let Some(old) = module
        .get_global(ROUTES)
        .filter(|g| !is_table && !g.is_declaration())
    {
        ir::drop_initializer(old.as_value_ref());
    }
    match joint {
        true => {
            joint_internalize(&module);
            codegen::optimize(&module, &machine, target.opt_level, codegen::Lto::Fat)?;
        }
        false => module
            .run_passes("globaldce", &machine, PassBuilderOptions::create())
            .map_err(|e| {
                anyhow!(
                    "LLVM's globaldce failed on {what}: {}",
                    e.to_string().trim()
                )
            })?,
    }
    codegen::emit_object(&module, &machine, object)
}

/// Makes the joint crates' symbols internal, as the `internalize` pass does
/// to the whole merged module, so that what is inlined everywhere and what
/// nothing calls is dropped. Cargo's objects of the other crates cannot
/// call them (only local crates that no other crate links are joint), so
/// what stays external is what `internalize` keeps, and the callees'
/// entries (`fmerge.entry.*`), which the table's object names.
fn joint_internalize(module: &inkwell::module::Module<'_>) {
    symbols::internalize_all(module, |name| {
        symbols::stays_external(name) || name.starts_with("fmerge.")
    });
}
