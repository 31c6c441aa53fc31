//! A rewritten literal: the new string beside the old one, and every use
//! found by [`super::uses`] pointed at it with its length fixed (a
//! `format!` template through `fmt_args`).

use super::uses::{Use, describe, uses};
use super::{Scope, positions, refusal, replace};
use crate::ir::{self, Value};
use crate::passes::fmt_args;
use anyhow::{Result, bail};
use inkwell::module::Module;

/// Rewrites one literal and every use of it; `false` when FROM only spans
/// bytes that are not text (a template's length prefixes).
pub(super) fn rewrite(
    module: &Module<'_>,
    global: Value,
    bytes: &[u8],
    scope: &Scope,
) -> Result<bool> {
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
    let mut structs: Vec<(Value, Vec<ir::FieldValue>)> = Vec::new();
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
                let fields = vec![
                    ir::FieldValue {
                        index: field,
                        value: ptr,
                    },
                    ir::FieldValue {
                        index: field + 1,
                        value: ir::const_byte_array(agg, &tail),
                    },
                ];
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
