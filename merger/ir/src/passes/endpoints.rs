//! Endpoint rewrite: a callee's data-store addresses, changed in its literals.
//!
//! A callee moved into the caller's binary now runs where the caller runs,
//! and the address it was built with (`sn-redis-master…:6379` inside its own
//! cluster) may not be reachable from there. `--rewrite FROM=TO` replaces
//! FROM inside the string literals of callee-owned code only.
//!
//! A Rust `&str` is a pointer and a length, and the length lives at each use,
//! not in the literal. Optimized code spreads one length over unrelated
//! constants (a `memcpy` size, a heap allocation, a `String`'s capacity), so
//! fmerge has cargo build callee-owned crates unoptimized (`emit`), where
//! every use is one of three shapes whose length it can see and fix:
//! - a call's `(ptr, len)` argument pair (`String::from`, `to_string`,
//!   `Client::open`, `config!`), never an LLVM intrinsic such as `memcpy`;
//! - a constant struct field pair `ptr, [len as 8 bytes, …]`, which is how
//!   rustc writes a `&str` inside a `static` or a `const` aggregate;
//! - a `format!` template handed to `core::fmt::Arguments::new`, whose
//!   literal pieces carry their own length prefix.
//!
//! Any other use stops the merge with the function, crate and Rust item that
//! made it, rather than leave a wrong length behind. The pass runs on each
//! crate's module before linking, when it still knows which crate owns each
//! literal: a literal in a crate the caller links too is never changed.

use crate::fmt_args;
use crate::ir::{self, Value};
use crate::passes::{Crate, Facts, Found};
use anyhow::{Result, bail};
use inkwell::module::Module;
use std::collections::BTreeSet;

/// One `--rewrite [CALLEE:]FROM=TO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// Only this callee's code, or every callee's when `None`.
    pub callee: Option<String>,
    pub from: String,
    pub to: String,
}

impl Rewrite {
    /// Parses `[CALLEE:]FROM=TO`. FROM often holds a `:` itself (`host:port`),
    /// so a prefix counts as CALLEE only when it names a merged function.
    pub fn parse(arg: &str, functions: &[String]) -> Result<Rewrite> {
        let usage = "fix: write [CALLEE:]FROM=TO, e.g. --rewrite social-graph-get-followers:sn-redis-master.openfaas-fn.svc.cluster.local:6379=10.0.0.7:6379";
        let (mut from, to) = match arg.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => (from, to),
            _ => bail!("malformed --rewrite `{arg}`\n{usage}"),
        };
        let mut callee = None;
        if let Some((prefix, rest)) = from.split_once(':')
            && functions.iter().any(|f| f == prefix)
        {
            callee = Some(prefix.to_string());
            from = rest;
        }
        if from.is_empty() {
            bail!("malformed --rewrite `{arg}`: FROM is empty\n{usage}");
        }
        if from == to {
            bail!("--rewrite `{arg}` replaces `{from}` with itself\nfix: drop it, or correct TO");
        }
        Ok(Rewrite {
            callee,
            from: from.to_string(),
            to: to.to_string(),
        })
    }

    /// The functions whose code this rewrite may change.
    pub fn targets(&self, callees: &[String]) -> BTreeSet<String> {
        match &self.callee {
            Some(c) => BTreeSet::from([c.clone()]),
            None => callees.iter().cloned().collect(),
        }
    }
}

/// One use of a literal that fmerge can prove is a `&str`, starting `offset`
/// bytes into it and `len` bytes long.
enum Use {
    /// Operand `arg` of `call` is the pointer, operand `arg + 1` the length.
    Call {
        call: Value,
        arg: u32,
        offset: u64,
        len: u64,
    },
    /// Field `field` of the constant struct `agg` is the pointer; field
    /// `field + 1` is a byte array whose first 8 bytes are the length.
    Field {
        agg: Value,
        field: u32,
        offset: u64,
        len: u64,
    },
    /// The literal is a `format!` template passed to `fmt::Arguments::new`.
    Template,
}

/// Where one rewrite may apply: the crate being rewritten and the merged
/// functions that link it (named in every refusal).
struct Scope<'a> {
    crate_name: &'a str,
    functions: String,
    rewrite: &'a Rewrite,
}

/// Rewrites the literals of one crate's module, and adds how many literals
/// each of `facts.rewrites` changed to `found.rewritten`.
pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    let (crate_name, owners) = (krate.name, krate.owners);
    found.rewritten.resize(facts.rewrites.len(), 0);
    for (i, rewrite) in facts.rewrites.iter().enumerate() {
        let targets = rewrite.targets(&facts.callees);
        if owners.is_disjoint(&targets) {
            continue;
        }
        let functions = owners
            .intersection(&targets)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let scope = Scope {
            crate_name,
            functions,
            rewrite,
        };
        for global in ir::globals(module) {
            let Some(bytes) = ir::string_bytes(global) else {
                continue;
            };
            if positions(&bytes, rewrite.from.as_bytes()).is_empty() {
                continue;
            }
            if !owners.is_subset(&targets) {
                let others: Vec<_> = owners.difference(&targets).cloned().collect();
                bail!(
                    "--rewrite {}: `{}` is in a literal of crate {crate_name}, which {} link too, so rewriting it would change them as well\n\
                     fix: make FROM specific to the callee's own literal, or move the address into the callee's own crate \
                     (a `config!(\"REDIS_URL\", \"...\")` default there), or set it at deploy time through the callee's namespaced variable",
                    rewrite.from,
                    rewrite.from,
                    others.join(", ")
                );
            }
            // Whether or not it changes: a literal up for rewriting is enough.
            found.touched = true;
            if rewrite_global(module, global, &bytes, &scope)? {
                found.rewritten[i] += 1;
            }
        }
    }
    Ok(())
}

pub(crate) fn positions(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + needle.len() <= haystack.len() {
        if haystack[at..at + needle.len()] == *needle {
            out.push(at);
            at += needle.len();
        } else {
            at += 1;
        }
    }
    out
}

pub(crate) fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for m in positions(bytes, from) {
        out.extend_from_slice(&bytes[last..m]);
        out.extend_from_slice(to);
        last = m + from.len();
    }
    out.extend_from_slice(&bytes[last..]);
    out
}

/// Rewrites one literal and every use of it; `false` when FROM only spans
/// bytes that are not text (a template's length prefixes).
fn rewrite_global(module: &Module<'_>, global: Value, bytes: &[u8], scope: &Scope) -> Result<bool> {
    let uses = uses(global, bytes.len() as u64, scope)?;
    let templates = uses.iter().filter(|u| matches!(u, Use::Template)).count();
    let name = format!("{}.rewritten", ir::name(global));
    if templates > 0 {
        if templates != uses.len() {
            bail!(
                "{}",
                refusal(
                    scope,
                    &format!(
                        "the `format!` template `{}` is also used as plain bytes",
                        printable(bytes)
                    ),
                    "a separate `&str` for the address"
                )
            );
        }
        let Some(new) = fmt_args::rewrite(
            bytes,
            scope.rewrite.from.as_bytes(),
            scope.rewrite.to.as_bytes(),
        )
        .map_err(|why| {
            anyhow::anyhow!(
                "{}",
                refusal(
                    scope,
                    &why,
                    "write the address as its own literal (`let url = \"…\"; format!(\"{url}…\")`)"
                )
            )
        })?
        else {
            return Ok(false);
        };
        let new_global = ir::add_private_string(module, &name, &new);
        ir::replace_all_uses(global, new_global);
        return Ok(true);
    }

    let rw = scope.rewrite;
    let matches = positions(bytes, rw.from.as_bytes());
    let (from, to) = (rw.from.len() as i64, rw.to.len() as i64);
    // Where old byte `p` lands in the new literal; `None` inside a match.
    let map = |p: u64| -> Option<u64> {
        let mut shift = 0i64;
        for &m in &matches {
            let m = m as u64;
            if p > m && p < m + from as u64 {
                return None;
            }
            if p >= m + from as u64 {
                shift += to - from;
            }
        }
        Some((p as i64 + shift) as u64)
    };
    let new_ptr = ir::add_private_string(
        module,
        &name,
        &replace(bytes, rw.from.as_bytes(), rw.to.as_bytes()),
    );
    let span = |offset: u64, len: u64, user: Value| -> Result<(Value, u64)> {
        match (map(offset), map(offset + len)) {
            (Some(start), Some(end)) => Ok((ir::const_byte_gep(new_ptr, start), end - start)),
            _ => bail!(
                "{}",
                refusal(
                    scope,
                    &format!(
                        "{} uses only part of `{}`, so no length can be right after the rewrite",
                        describe(user),
                        rw.from
                    ),
                    "choose a FROM that covers the whole host:port as the code uses it"
                )
            ),
        }
    };
    // Constant structs are rebuilt whole: group the fields of each first.
    let mut structs: Vec<(Value, Vec<(u32, Value)>)> = Vec::new();
    for u in &uses {
        match *u {
            Use::Call {
                call,
                arg,
                offset,
                len,
            } => {
                let (ptr, len) = span(offset, len, call)?;
                let len_ty_value = ir::operand(call, arg + 1);
                ir::set_operand(call, arg, ptr);
                ir::set_operand(call, arg + 1, ir::const_int_like(len_ty_value, len));
            }
            Use::Field {
                agg,
                field,
                offset,
                len,
            } => {
                let (ptr, len) = span(offset, len, agg)?;
                let mut tail =
                    ir::const_bytes(ir::operand(agg, field + 1)).expect("checked in uses()");
                tail[..8].copy_from_slice(&len.to_le_bytes());
                let fields = vec![(field, ptr), (field + 1, ir::const_byte_array(agg, &tail))];
                match structs.iter_mut().find(|(a, _)| *a == agg) {
                    Some((_, f)) => f.extend(fields),
                    None => structs.push((agg, fields)),
                }
            }
            Use::Template => unreachable!(),
        }
    }
    for (agg, fields) in structs {
        ir::replace_all_uses(agg, ir::with_struct_fields(agg, &fields));
    }
    Ok(true)
}

/// Every use of `global` as a `&str`, or an error naming a use whose length
/// fmerge cannot see.
fn uses(global: Value, size: u64, scope: &Scope) -> Result<Vec<Use>> {
    let mut out = Vec::new();
    let mut todo: Vec<(Value, u32, u64)> = ir::uses(global)
        .into_iter()
        .map(|(u, i)| (u, i, 0))
        .collect();
    let fits = |offset: u64, len: u64| offset.checked_add(len).is_some_and(|end| end <= size);
    while let Some((user, arg, offset)) = todo.pop() {
        if ir::is_call(user) && !ir::calls_intrinsic(user) && arg < ir::arg_count(user) {
            if offset == 0 && is_template_call(user) {
                out.push(Use::Template);
                continue;
            }
            if arg + 1 < ir::arg_count(user)
                && let Some(len) = ir::const_u64(ir::operand(user, arg + 1))
                && fits(offset, len)
            {
                out.push(Use::Call {
                    call: user,
                    arg,
                    offset,
                    len,
                });
                continue;
            }
        }
        if ir::is_const_struct(user)
            && arg + 1 < ir::operand_count(user)
            && let Some(tail) = ir::const_bytes(ir::operand(user, arg + 1))
            && tail.len() >= 8
        {
            let len = u64::from_le_bytes(tail[..8].try_into().expect("8 bytes"));
            if fits(offset, len) {
                out.push(Use::Field {
                    agg: user,
                    field: arg,
                    offset,
                    len,
                });
                continue;
            }
        }
        if let Some((_, k)) = ir::byte_offset(user) {
            todo.extend(ir::uses(user).into_iter().map(|(u, i)| (u, i, offset + k)));
            continue;
        }
        let what = if ir::is_call(user) && ir::calls_intrinsic(user) {
            format!(
                "{} copies it as raw bytes (`{}`), so its length is not visible",
                describe(user),
                ir::callee_name(user).unwrap_or_default()
            )
        } else {
            format!(
                "{} uses it in a way whose length fmerge cannot see (not a pointer-and-length pair)",
                describe(user)
            )
        };
        bail!(
            "{}",
            refusal(
                scope,
                &what,
                "read the address through `config!(KEY, DEFAULT)` or a `&str` literal in the callee's own crate, \
                 or leave the literal alone and set the address at deploy time"
            )
        );
    }
    Ok(out)
}

fn is_template_call(call: Value) -> bool {
    ir::callee_name(call).is_some_and(|n| ir::demangle(&n).starts_with("core::fmt::Arguments::new"))
}

/// Where a use sits, for people: the Rust function, or the static holding it.
fn describe(user: Value) -> String {
    if ir::is_instruction(user) {
        return format!("`{}`", ir::demangle(&ir::enclosing_function(user)));
    }
    match ir::holding_global(user) {
        Some(g) => format!("the static `{}`", ir::demangle(&ir::name(g))),
        None => "a constant expression".into(),
    }
}

fn refusal(scope: &Scope, what: &str, fix: &str) -> String {
    format!(
        "--rewrite {}: cannot rewrite the literal holding `{}` in function {} (crate {}): {what}\nfix: {fix}",
        scope.rewrite.from, scope.rewrite.from, scope.functions, scope.crate_name
    )
}

fn printable(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                (b as char).to_string()
            } else {
                format!("\\x{b:02x}")
            }
        })
        .collect()
}
