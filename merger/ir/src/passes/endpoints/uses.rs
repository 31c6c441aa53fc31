//! The uses of a literal `--rewrite` may change, each with the length it is
//! read with: a call's `(ptr, len)` pair, a constant struct's pointer and
//! length fields, or a `format!` template; any other use is refused.

use super::{Scope, refusal};
use crate::ir::{self, Value};
use anyhow::{Result, bail};

/// One use of a literal that fmerge can prove is a `&str`, starting `offset`
/// bytes into it and `len` bytes long.
pub(super) enum Use {
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

/// Every use of `global` as a `&str`, or an error naming a use whose length
/// fmerge cannot see.
pub(super) fn uses(global: Value, size: u64, scope: &Scope) -> Result<Vec<Use>> {
    let mut out = Vec::new();
    let mut todo: Vec<(Value, u32, u64)> = ir::uses(global)
        .into_iter()
        .map(|site| (site.user, site.index, 0))
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
        if let Some(at) = ir::byte_offset(user) {
            let k = at.offset;
            todo.extend(
                ir::uses(user)
                    .into_iter()
                    .map(|s| (s.user, s.index, offset + k)),
            );
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
pub(super) fn describe(user: Value) -> String {
    if ir::is_instruction(user) {
        return format!("`{}`", ir::demangle(&ir::enclosing_function(user)));
    }
    match ir::holding_global(user) {
        Some(g) => format!("the static `{}`", ir::demangle(&ir::name(g))),
        None => "a constant expression".into(),
    }
}
