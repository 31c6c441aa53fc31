//! Exports: one `main`, and no two definitions of an exported symbol.
//!
//! Each function was built as its own binary, so each has a C `main` that
//! starts its server; in the merged binary only the caller's may stay, and a
//! callee's becomes internal under another name. Each may also export
//! unmangled (`#[no_mangle]`) symbols, and two definitions of one name would
//! make the link fail or, worse, pick one silently: a clash between two
//! functions' own crates is settled by renaming the later one (unless native
//! code calls it by name), any other clash is refused. Runs on each crate
//! before linking, against the symbols of the crates linked before it.

use crate::passes::{Crate, Facts, Found};
use crate::symbols::{defined, internalize, is_exported};
use anyhow::{Result, bail};
use inkwell::module::{Linkage, Module};

pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    if let Some(function) = krate.function.filter(|f| *f != facts.caller)
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
        let Some((crate_name, function)) = found.exported.get(&name).cloned() else {
            found.exported.insert(
                name,
                (krate.name.to_string(), krate.function.map(str::to_string)),
            );
            continue;
        };
        match (&function, krate.function) {
            // Native code calls it by name: renaming would send that call elsewhere.
            (Some(first), Some(mine)) if facts.native_refs.contains_key(&name) => bail!(
                "symbol clash: functions {first} (crate {crate_name}) and {mine} (crate {}) both export `{name}`, \
                 and native code calls it by name ({} refers to it).\n\
                 fmerge cannot give each function its own `{name}`: the C code would call one function's version from both.\n\
                 Fix: give one of them another name with #[unsafe(export_name = \"...\")] (and in its C code), or merge these functions separately.",
                krate.name,
                facts.native_refs[&name]
            ),
            // Both in functions' own code, and nothing native calls it by
            // name: each function keeps its own.
            (Some(_), Some(mine)) => {
                let new = format!("{name}.{mine}");
                global.set_name(&new);
                found.warnings.push(format!(
                    "two functions export one symbol; {name} in {mine} is now {new}"
                ));
            }
            _ => bail!(
                "symbol clash: crates {crate_name} and {} both define the exported symbol `{name}`.\n\
                 fmerge cannot rename it, because code outside these crates may call it by name.\n\
                 Fix: make the functions use one version of the crate that defines it (`cargo tree -i <crate>` shows who pulls in each), \
                 or give one definition another name with #[unsafe(export_name = \"...\")].",
                krate.name
            ),
        }
    }
    Ok(())
}
