//! Allocator: which `#[global_allocator]` the merged binary uses.
//!
//! A binary has one heap. rustc links each function's own binary with the
//! allocator that function sets (`#[global_allocator]` defines
//! `__rust_alloc` and its siblings in the crate that declares it), or with
//! the default one. Merged, every function allocates with one allocator:
//! - none set: the default, as before;
//! - one crate sets one, or several set the same one (the same code over
//!   the same constant data, like `std::alloc::System` in two functions):
//!   that allocator, kept once; `allocator_users` warns about the functions
//!   that did not set it, and the merged link uses rustc's shim for a
//!   binary with a global allocator;
//! - two different ones: refused, naming both, since one of them would
//!   silently allocate with the other's allocator.
//!
//! Runs on each crate before linking, where the crate that sets one is
//! known (after linking, two definitions of one symbol would not link).

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::{Result, bail};
use inkwell::module::{Linkage, Module};
use inkwell::values::{AnyValue, AsValueRef, FunctionValue};
use std::collections::BTreeSet;

/// The allocator functions `#[global_allocator]` defines (as rustc 1.95
/// names them, `__rustc::__rust_alloc`; older rustc: `__rg_alloc`).
const FUNCTIONS: &[&str] = &[
    "__rust_alloc",
    "__rust_dealloc",
    "__rust_realloc",
    "__rust_alloc_zeroed",
];

/// The global allocator the merged functions set.
#[derive(Debug, Clone)]
pub struct Allocator {
    /// Who sets it, for people: `alloc-caller (crate alloc_caller)`.
    pub set_by: Vec<String>,
    /// The merged functions that link a crate that sets it.
    pub users: BTreeSet<String>,
    /// Its functions' code, without what only differs between crates.
    code: String,
}

pub fn run(module: &Module<'_>, krate: &Crate, _: &Facts, found: &mut Found) -> Result<()> {
    let Some(this) = Allocator::of(module, krate) else {
        return Ok(());
    };
    match &mut found.allocator {
        None => found.allocator = Some(this),
        Some(first) => {
            first.beside(&this)?;
            // The same allocator: the first crate's definitions serve all.
            for f in allocator_functions(module) {
                ir::make_declaration(f.as_value_ref());
                found.touched = true;
            }
            first.set_by.extend(this.set_by);
            first.users.extend(this.users);
        }
    }
    Ok(())
}

impl Allocator {
    /// The allocator `krate` sets, if it sets one.
    pub fn of(module: &Module<'_>, krate: &Crate) -> Option<Allocator> {
        let functions = allocator_functions(module);
        if functions.is_empty() {
            return None;
        }
        let code = functions
            .iter()
            .map(|f| normalized(module, *f))
            .collect::<Vec<_>>()
            .join("\n");
        Some(Allocator {
            set_by: vec![krate.describe()],
            users: krate.owners.clone(),
            code,
        })
    }

    /// The rule for two allocators in one binary (`fmerge graph` pairs
    /// functions by it too): the same one is kept once, two different ones
    /// are refused.
    pub fn beside(&self, other: &Allocator) -> Result<()> {
        if self.code != other.code {
            bail!(
                "the merged functions set different #[global_allocator]s: {} and {}.\n\
                 One binary has one heap, so one of them would silently allocate with the other's allocator\n\
                 fix: set the same allocator in both (or in neither), or merge these functions separately",
                self.set_by.join(", "),
                other.set_by.join(", ")
            );
        }
        Ok(())
    }
}

/// The allocator functions this crate defines, by name.
fn allocator_functions<'ctx>(module: &Module<'ctx>) -> Vec<FunctionValue<'ctx>> {
    let mut out: Vec<_> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .filter(|f| {
            let path = ir::demangle(&f.get_name().to_string_lossy());
            let item = path.strip_prefix("__rustc::").unwrap_or(&path);
            FUNCTIONS.contains(&item) || item.starts_with("__rg_")
        })
        .collect();
    out.sort_by_key(|f| f.get_name().to_owned());
    out
}

/// A function's IR without what differs between two crates compiled from
/// the same code: comments, attribute and metadata numbers, the names of
/// the crate's own constants (replaced by their contents), and the value
/// ranges the optimizer infers for arguments from the rest of the crate
/// (`i64 range(i64 0, -1) 8` in one crate, `i64 8` in the other: facts
/// about the same value, not another computation).
fn normalized(module: &Module<'_>, f: FunctionValue<'_>) -> String {
    let text = f.print_to_string().to_string();
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with(';')) {
        let line = &without_ranges(line);
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '#' | '!' if chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) => {
                    out.push(c);
                    while chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) {
                        chars.next();
                    }
                }
                '@' => {
                    let mut end = i + 1;
                    while let Some(&(j, d)) = chars.peek() {
                        if !(d.is_ascii_alphanumeric() || "$._-".contains(d)) {
                            break;
                        }
                        end = j + d.len_utf8();
                        chars.next();
                    }
                    out.push_str(
                        &constant(module, &line[i + 1..end])
                            .unwrap_or_else(|| line[i..end].to_string()),
                    );
                }
                c => out.push(c),
            }
        }
        out.push('\n');
    }
    out
}

/// `line` without its `range(…)` attributes.
fn without_ranges(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(" range(") {
        let Some(close) = rest[at..].find(')') else {
            break;
        };
        out.push_str(&rest[..at]);
        rest = &rest[at + close + 1..];
    }
    out.push_str(rest);
    out
}

/// A crate-local constant named `name`, as its contents.
fn constant(module: &Module<'_>, name: &str) -> Option<String> {
    let global = module.get_global(name)?;
    let local = matches!(global.get_linkage(), Linkage::Internal | Linkage::Private);
    if !(local && global.is_constant()) {
        return None;
    }
    Some(format!(
        "@const({})",
        global.get_initializer()?.print_to_string()
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn inferred_argument_ranges_are_not_code() {
        assert_eq!(
            super::without_ranges(
                "%m = tail call i64 @llvm.umax.i64(i64 range(i64 1, -9223372036854775807) %align, i64 range(i64 0, -1) 8)"
            ),
            "%m = tail call i64 @llvm.umax.i64(i64 %align, i64 8)"
        );
    }
}
