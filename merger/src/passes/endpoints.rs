//! Endpoint rewrite: a callee's data-store addresses, changed in its literals.
//!
//! A callee moved into the caller's binary now runs where the caller runs,
//! and the address it was built with (`sn-redis-master…:6379` inside its own
//! cluster) may not be reachable from there. `--rewrite FROM=TO` replaces
//! FROM inside the string literals of callee-owned code only. A Rust `&str`
//! is a pointer and a length, and the length lives at each use, not in the
//! literal; so every use must be one whose length fmerge can see and fix (a
//! `(ptr, len)` call argument pair, as `config!` passes its default), and
//! any other use stops the merge rather than leave a wrong length behind.
//!
//! The pass runs on each crate's module before linking, when it still knows
//! which crate owns each literal: a literal in a crate the caller links too
//! is never changed.

use crate::ir::{self, Value};
use anyhow::{Result, bail};
use inkwell::llvm_sys::core::*;
use inkwell::module::{Linkage, Module};
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
        let usage = "expected [CALLEE:]FROM=TO, e.g. --rewrite social-graph-get-followers:sn-redis-master.openfaas-fn.svc.cluster.local:6379=10.0.0.7:6379";
        let (mut from, to) = match arg.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => (from, to),
            _ => bail!("malformed --rewrite `{arg}`: {usage}"),
        };
        let mut callee = None;
        if let Some((prefix, rest)) = from.split_once(':')
            && functions.iter().any(|f| f == prefix) {
                callee = Some(prefix.to_string());
                from = rest;
            }
        if from.is_empty() {
            bail!("malformed --rewrite `{arg}`: FROM is empty; {usage}");
        }
        if from == to {
            bail!("--rewrite `{arg}` replaces `{from}` with itself; drop it or fix TO");
        }
        Ok(Rewrite { callee, from: from.to_string(), to: to.to_string() })
    }

    /// The functions whose code this rewrite may change.
    pub fn targets(&self, callees: &[String]) -> BTreeSet<String> {
        match &self.callee {
            Some(c) => BTreeSet::from([c.clone()]),
            None => callees.iter().cloned().collect(),
        }
    }
}

/// One use of a literal as a `&str`: operand `arg` of `call` is the pointer
/// (to `offset` bytes in) and operand `arg + 1` is the length.
struct Slice {
    call: Value,
    arg: u32,
    offset: u64,
    len: u64,
}

/// Rewrites the literals of one crate's module. `owners` are the functions
/// that link this crate. Returns how many literals each rewrite changed.
pub fn run(
    module: &Module<'_>,
    crate_name: &str,
    owners: &BTreeSet<String>,
    rewrites: &[Rewrite],
    callees: &[String],
) -> Result<Vec<usize>> {
    let mut hits = vec![0; rewrites.len()];
    for (i, rewrite) in rewrites.iter().enumerate() {
        let targets = rewrite.targets(callees);
        if owners.is_disjoint(&targets) {
            continue;
        }
        for global in ir::globals(module) {
            let Some(bytes) = ir::string_bytes(global) else { continue };
            let matches = positions(&bytes, rewrite.from.as_bytes());
            if matches.is_empty() {
                continue;
            }
            if !owners.is_subset(&targets) {
                let others: Vec<_> = owners.difference(&targets).cloned().collect();
                bail!(
                    "--rewrite {}: `{}` is in a literal of crate {crate_name}, which {} link too, so rewriting it would change them as well.\n\
                     Fix: make FROM specific to the callee's own literal, or move the address into the callee's own crate \
                     (a `config!(\"REDIS_URL\", \"...\")` default there), or set it at deploy time through the callee's namespaced variable.",
                    rewrite.from,
                    rewrite.from,
                    others.join(", ")
                );
            }
            rewrite_global(module, global, &bytes, &matches, rewrite, crate_name)?;
            hits[i] += 1;
        }
    }
    Ok(hits)
}

fn positions(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
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

fn rewrite_global(module: &Module<'_>, global: Value, bytes: &[u8], matches: &[usize], rw: &Rewrite, crate_name: &str) -> Result<()> {
    let slices = slices(global, rw, crate_name)?;
    let (from, to) = (rw.from.len() as i64, rw.to.len() as i64);
    // Where old byte `p` lands in the new literal; `None` inside a match.
    let map = |p: u64| -> Option<u64> {
        let mut shift = 0i64;
        for &m in matches {
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
    let mut new_bytes = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for &m in matches {
        new_bytes.extend_from_slice(&bytes[last..m]);
        new_bytes.extend_from_slice(rw.to.as_bytes());
        last = m + rw.from.len();
    }
    new_bytes.extend_from_slice(&bytes[last..]);

    let ctx = module.get_context();
    let value = ctx.const_string(&new_bytes, false);
    let new = module.add_global(value.get_type(), None, &format!("{}.rewritten", ir::name(global)));
    new.set_initializer(&value);
    new.set_constant(true);
    new.set_linkage(Linkage::Private);
    new.set_unnamed_addr(true);
    new.set_alignment(1);
    let new_ptr = inkwell::values::AsValueRef::as_value_ref(&new.as_pointer_value());
    for s in &slices {
        let (Some(start), Some(end)) = (map(s.offset), map(s.offset + s.len)) else {
            bail!(
                "--rewrite {}: in crate {crate_name}, function {} uses only part of `{}`, so no length can be right after the rewrite.\n\
                 Fix: choose a FROM that covers the whole host:port as the code uses it.",
                rw.from,
                ir::demangle(&ir::enclosing_function(s.call)),
                rw.from
            );
        };
        unsafe {
            let ptr = if start == 0 {
                new_ptr
            } else {
                let i8t = LLVMInt8TypeInContext(LLVMGetTypeContext(LLVMTypeOf(new_ptr)));
                let mut index = [LLVMConstInt(LLVMInt64TypeInContext(LLVMGetTypeContext(LLVMTypeOf(new_ptr))), start, 0)];
                LLVMConstInBoundsGEP2(i8t, new_ptr, index.as_mut_ptr(), 1)
            };
            let len_ty = LLVMTypeOf(ir::operand(s.call, s.arg + 1));
            ir::set_operand(s.call, s.arg, ptr);
            ir::set_operand(s.call, s.arg + 1, LLVMConstInt(len_ty, end - start, 0));
        }
    }
    Ok(())
}

/// Every use of `global` as a `&str` argument, or an error naming a use
/// whose length fmerge cannot see.
fn slices(global: Value, rw: &Rewrite, crate_name: &str) -> Result<Vec<Slice>> {
    let mut out = Vec::new();
    let mut todo: Vec<(Value, u32, u64)> = ir::uses(global).into_iter().map(|(u, i)| (u, i, 0)).collect();
    while let Some((user, arg, offset)) = todo.pop() {
        if ir::is_call(user) && arg + 1 < ir::arg_count(user)
            && let Some(len) = ir::const_u64(ir::operand(user, arg + 1)) {
                out.push(Slice { call: user, arg, offset, len });
                continue;
            }
        if let Some((_, k)) = ir::byte_offset(user) {
            todo.extend(ir::uses(user).into_iter().map(|(u, i)| (u, i, offset + k)));
            continue;
        }
        bail!(
            "--rewrite {}: the literal holding `{}` in crate {crate_name} is used by {} in a way whose length fmerge cannot fix \
             (not as a pointer-and-length argument).\n\
             Fix: read the address through `config!(KEY, DEFAULT)` in the callee's crate (that default can be rewritten), \
             or leave the literal alone and set the callee's namespaced variable at deploy time.",
            rw.from,
            rw.from,
            ir::demangle(&ir::enclosing_function(user))
        );
    }
    Ok(out)
}
