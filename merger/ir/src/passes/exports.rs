//! Exports: one `main`, and no two definitions of an exported symbol.
//!
//! Each function was built as its own binary, so each has a C `main` that
//! starts its server; in the merged binary only the caller's may stay, and a
//! callee's becomes internal under another name. Each may also export
//! unmangled (`#[no_mangle]`) symbols, and two definitions of one name would
//! make the link fail or, worse, pick one silently: a clash between two
//! functions' own crates is settled by renaming the later one (unless native
//! code calls it by name), any other clash is refused ([`clash`], the rule
//! `fmerge graph` applies too). Runs on each crate before linking, against
//! the symbols of the crates linked before it.

use crate::passes::{Crate, Facts, Found};
use crate::symbols::{exported, internalize};
use anyhow::{Result, bail};
use inkwell::module::Module;
use std::collections::BTreeMap;

/// Who defines an exported symbol: a crate, and the function whose own bin
/// it is (none for a library).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definer {
    pub crate_name: String,
    pub function: Option<String>,
}

impl Definer {
    pub fn of(krate: &Crate) -> Definer {
        Definer {
            crate_name: krate.name.to_string(),
            function: krate.function.map(str::to_string),
        }
    }
}

/// The rule for a second definition of the exported symbol `name`: `Ok`
/// when the second one can be renamed (both are in functions' own bins, and
/// no native code calls it by name), else the refusal.
pub fn clash(
    name: &str,
    first: &Definer,
    second: &Definer,
    native_refs: &BTreeMap<String, String>,
) -> Result<()> {
    match (&first.function, &second.function) {
        // Native code calls it by name: renaming would send that call elsewhere.
        (Some(one), Some(other)) if native_refs.contains_key(name) => bail!(
            "symbol clash: functions {one} (crate {}) and {other} (crate {}) both export `{name}`, \
             and native code calls it by name ({} refers to it).\n\
             fmerge cannot give each function its own `{name}`: the C code would call one function's version from both\n\
             fix: give one of them another name with #[unsafe(export_name = \"...\")] (and in its C code), or merge these functions separately",
            first.crate_name,
            second.crate_name,
            native_refs[name]
        ),
        // Both in functions' own code, and nothing native calls it by
        // name: each function keeps its own.
        (Some(_), Some(_)) => Ok(()),
        _ => bail!(
            "symbol clash: crates {} and {} both define the exported symbol `{name}`.\n\
             fmerge cannot rename it, because code outside these crates may call it by name\n\
             fix: make the functions use one version of the crate that defines it (`cargo tree -i <crate>` shows who pulls in each), \
             or give one definition another name with #[unsafe(export_name = \"...\")]",
            first.crate_name,
            second.crate_name
        ),
    }
}

/// Renames a callee's `main` and makes it internal, so that the caller's
/// starts the merged binary; whether there was one. The reuse path makes it
/// weak in the callee's object instead ([`Found::dropped_main`]).
pub fn drop_main(module: &Module<'_>, function: &str) -> bool {
    let Some(main) = module.get_function("main") else {
        return false;
    };
    main.as_global_value()
        .set_name(&format!("fmerge.main.{function}"));
    internalize(main.as_global_value());
    true
}

/// Renames a watchdog-process callee's `main` to
/// [`fmerge_contract::main_symbol`], still exported: the merged binary's
/// shim calls it to run that callee in a process of its own. Whether there
/// was one.
pub fn keep_main(module: &Module<'_>, function: &str) -> bool {
    let Some(main) = module.get_function("main") else {
        return false;
    };
    main.as_global_value()
        .set_name(&fmerge_contract::main_symbol(function));
    true
}

pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    if let Some(function) = krate.function.filter(|f| *f != facts.caller) {
        match facts.process {
            true => found.touched |= keep_main(module, function),
            false => found.dropped_main = drop_main(module, function),
        }
    }
    let this = Definer::of(krate);
    for global in exported(module) {
        let name = global.get_name().to_string_lossy().into_owned();
        let Some(first) = found.exported.get(&name) else {
            found.exported.insert(name, this.clone());
            continue;
        };
        clash(&name, first, &this, &facts.native_refs)?;
        let mine = this.function.as_deref().expect("renamed: a function's bin");
        let new = format!("{name}.{mine}");
        global.set_name(&new);
        found.touched = true;
        found.warnings.push(format!(
            "two functions export one symbol; {name} in {mine} is now {new}"
        ));
    }
    Ok(())
}
