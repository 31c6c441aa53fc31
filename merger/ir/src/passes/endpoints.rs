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

use crate::ir::{self, Value};
use crate::passes::{Crate, Facts};
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
        let usage = "expected [CALLEE:]FROM=TO, e.g. --rewrite social-graph-get-followers:sn-redis-master.openfaas-fn.svc.cluster.local:6379=10.0.0.7:6379";
        let (mut from, to) = match arg.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => (from, to),
            _ => bail!("malformed --rewrite `{arg}`: {usage}"),
        };
        let mut callee = None;
        if let Some((prefix, rest)) = from.split_once(':')
            && functions.iter().any(|f| f == prefix)
        {
            callee = Some(prefix.to_string());
            from = rest;
        }
        if from.is_empty() {
            bail!("malformed --rewrite `{arg}`: FROM is empty; {usage}");
        }
        if from == to {
            bail!("--rewrite `{arg}` replaces `{from}` with itself; drop it or fix TO");
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

/// Rewrites the literals of one crate's module. Returns how many literals
/// each of `facts.rewrites` changed.
pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts) -> Result<Vec<usize>> {
    let (crate_name, owners) = (krate.name, krate.owners);
    let mut hits = vec![0; facts.rewrites.len()];
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
                    "--rewrite {}: `{}` is in a literal of crate {crate_name}, which {} link too, so rewriting it would change them as well.\n\
                     Fix: make FROM specific to the callee's own literal, or move the address into the callee's own crate \
                     (a `config!(\"REDIS_URL\", \"...\")` default there), or set it at deploy time through the callee's namespaced variable.",
                    rewrite.from,
                    rewrite.from,
                    others.join(", ")
                );
            }
            if rewrite_global(module, global, &bytes, &scope)? {
                hits[i] += 1;
            }
        }
    }
    Ok(hits)
}

/// After every crate: a rewrite that changed nothing is an error (a typo in
/// FROM would otherwise ship the old address); the others give one note each.
pub fn outcome(rewrites: &[Rewrite], hits: &[usize], callees: &[String]) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for (i, rewrite) in rewrites.iter().enumerate() {
        let n = hits.get(i).copied().unwrap_or(0);
        if n == 0 {
            let targets: Vec<_> = rewrite.targets(callees).into_iter().collect();
            bail!(
                "--rewrite {}: no string literal in the code of {} contains `{}`.\n\
                 Check FROM: it is matched byte for byte (the endpoints each function reads are listed by `fmerge build … --emit-ll` in the .ll, \
                 and by the config report of a merge without this rewrite).",
                rewrite.from,
                targets.join(", "),
                rewrite.from
            );
        }
        notes.push(format!(
            "rewrote `{}` → `{}` in {n} literal(s)",
            rewrite.from, rewrite.to
        ));
    }
    Ok(notes)
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

fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
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
        let Some(new) = template::rewrite(
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
        "--rewrite {}: cannot rewrite the literal holding `{}` in function {} (crate {}): {what}.\nFix: {fix}.",
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

/// The `format!` template of rustc 1.95 (`core::fmt::Arguments::new`): a
/// byte string of parts ending in `0x00`. A literal part is `0x01..=0x7F`
/// (its length) or `0x80` plus a little-endian `u16`, then its text; `0xC0`
/// is a plain `{}`. Other bytes start placeholders with format specs, whose
/// layout fmerge does not read: text after the first of them is left alone,
/// and a FROM found there is refused.
pub mod template {
    /// The template with FROM replaced in its text parts; `Ok(None)` when no
    /// text part holds FROM; `Err` when one does but cannot be rewritten.
    pub fn rewrite(bytes: &[u8], from: &[u8], to: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let mut out = Vec::with_capacity(bytes.len());
        let mut changed = false;
        let mut i = 0;
        while i < bytes.len() {
            let (text, next) = match bytes[i] {
                0x00 if i + 1 == bytes.len() => {
                    out.push(0);
                    return Ok(changed.then_some(out));
                }
                n @ 0x01..=0x7f => (i + 1..i + 1 + n as usize, i + 1 + n as usize),
                0x80 if i + 3 <= bytes.len() => {
                    let n = u16::from_le_bytes([bytes[i + 1], bytes[i + 2]]) as usize;
                    (i + 3..i + 3 + n, i + 3 + n)
                }
                0xc0 => {
                    out.push(0xc0);
                    i += 1;
                    continue;
                }
                _ => {
                    let rest = &bytes[i..];
                    if super::positions(rest, from).is_empty() {
                        out.extend_from_slice(rest);
                        return Ok(changed.then_some(out));
                    }
                    return Err("the address follows a placeholder with format specs (`{:?}`, `{:5}`…) in a `format!` template, whose layout fmerge does not read".into());
                }
            };
            let Some(text) = bytes.get(text) else {
                return Err(
                    "its `format!` template is not laid out as rustc 1.95 writes it".into(),
                );
            };
            let new = super::replace(text, from, to);
            changed |= new != text;
            match new.len() {
                n @ 1..=0x7f => out.push(n as u8),
                n @ 0x80..=0xffff => out.extend([0x80, n as u8, (n >> 8) as u8]),
                _ => {
                    return Err(
                        "the rewritten `format!` piece would be empty or longer than 65535 bytes"
                            .into(),
                    );
                }
            }
            out.extend_from_slice(&new);
            i = next;
        }
        Err("its `format!` template does not end as rustc 1.95 writes it".into())
    }

    #[cfg(test)]
    mod tests {
        use super::rewrite;

        #[test]
        fn a_piece_is_rewritten_with_its_new_length() {
            let t = b"\x11redis://abc:6390/\xc0\x00";
            assert_eq!(
                rewrite(t, b"abc:6390", b"127.0.0.1:7").unwrap().unwrap(),
                b"\x14redis://127.0.0.1:7/\xc0\x00"
            );
            assert_eq!(rewrite(t, b"nowhere", b"x").unwrap(), None);
        }

        #[test]
        fn a_piece_that_grows_past_127_bytes_takes_the_long_form() {
            let t = b"\x03abc\xc0\x00";
            let long = vec![b'x'; 200];
            let mut want = vec![0x80, 200, 0];
            want.extend(&long);
            want.extend([0xc0, 0]);
            assert_eq!(rewrite(t, b"abc", &long).unwrap().unwrap(), want);
        }

        #[test]
        fn text_after_a_placeholder_with_specs_is_refused_only_if_it_matches() {
            let t = b"\xc0\x01:\xc3 \x00\x00h\x05\x00\x00";
            assert_eq!(rewrite(t, b":", b";").unwrap().unwrap()[..3], *b"\xc0\x01;");
            let t = b"\x02a:\xc3 \x00\x00h\x05\x00host\x00";
            assert!(rewrite(t, b"host", b"x").is_err());
            assert_eq!(rewrite(t, b"a:", b"b:").unwrap().unwrap()[..3], *b"\x02b:");
        }
    }
}
