//! Every group a function may be the caller of, for the branch and bound: each
//! connected set of its callees once, within the model's rules.

use super::Limits;
use crate::model::{Model, Set, bit};

/// Every group with `caller` as its caller: connected from it (each member
/// reached from the caller through members), feasible, not slowing the caller
/// ([`Model::admits`]); `None` past the limit.
pub fn candidates(model: &Model, caller: usize, limit: usize) -> Option<Vec<Set>> {
    let limits = Limits {
        candidates: limit,
        ..Limits::default()
    };
    candidates_within(model, caller, &limits)
}

/// [`candidates`] up to `limits.candidates`, `None` past it or past the
/// deadline.
pub(super) fn candidates_within(model: &Model, caller: usize, limits: &Limits) -> Option<Vec<Set>> {
    let mut out = vec![bit(caller)];
    if model.left_out[caller].is_some() || !model.feasible(bit(caller)) {
        return Some(out);
    }
    // Each connected set once: a member, once passed over, is never added
    // later in the same branch.
    fn grow(
        model: &Model,
        caller: usize,
        set: Set,
        frontier: Vec<usize>,
        excluded: Set,
        out: &mut Vec<Set>,
        limits: &Limits,
    ) -> bool {
        for (i, &v) in frontier.iter().enumerate() {
            let next = set | bit(v);
            if !model.feasible(next) {
                continue;
            }
            // A group that slows its caller may grow into one that does
            // not (a member that removes the longer hop): grown, not kept.
            if !model.slower(caller, next) {
                out.push(next);
            }
            if out.len() > limits.candidates || (out.len().is_multiple_of(256) && limits.late()) {
                return false;
            }
            let mut skip = excluded;
            for &w in &frontier[..i] {
                skip |= bit(w);
            }
            let mut more: Vec<usize> = frontier[i + 1..].to_vec();
            for w in model.callees(v) {
                if !next.contains(w) && !skip.contains(w) && !more.contains(&w) {
                    more.push(w);
                }
            }
            if !grow(model, caller, next, more, skip, out, limits) {
                return false;
            }
        }
        true
    }
    let frontier: Vec<usize> = model.callees(caller).collect();
    let mut unique = Vec::new();
    for v in frontier {
        if !unique.contains(&v) && v != caller {
            unique.push(v);
        }
    }
    grow(
        model,
        caller,
        bit(caller),
        unique,
        bit(caller),
        &mut out,
        limits,
    )
    .then_some(out)
}
