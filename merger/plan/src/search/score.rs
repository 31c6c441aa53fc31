//! What a plan is worth under the model's objective, in one place for every
//! search that compares whole plans (the local search, the incumbent the
//! branch and bound starts from, the deadline's best so far).

use crate::model::{Model, Objective, Resource, Set, members};

/// The objective's figure for `groups`, higher better: latency removed
/// (ms per request), gateway calls removed (per request), or the memory
/// copies reserve, negated; `None` when a group breaks the model's rules or
/// a cap, or the plan misses a minimum. At the leaves of the branch and
/// bound this is its own bound's figure, so the two compare.
pub fn score(model: &Model, groups: &[Set]) -> Option<f64> {
    let feasible = (0..groups.len()).all(|r| {
        groups[r].contains(r) && (groups[r].count_ones() == 1 || model.feasible(groups[r]))
    });
    if !feasible
        || model.left(Resource::Memory, groups) < 0.0
        || model.left(Resource::Cpu, groups) < 0.0
    {
        return None;
    }
    let removed = || model.value(groups).0;
    let gain = || model.gain_ms(groups);
    let meets = model.min_removed.is_none_or(|min| removed() >= min - 1e-9)
        && model.min_gain_ms.is_none_or(|min| gain() >= min - 1e-9);
    if !meets {
        return None;
    }
    Some(match model.objective {
        Objective::Latency => gain(),
        Objective::Calls => removed(),
        Objective::Memory => -(0..groups.len())
            .map(|r| model.copies(Resource::Memory, r, groups[r]))
            .sum::<f64>(),
    })
}

/// Merged members in all: at an equal score, fewer win.
pub(super) fn extra(groups: &[Set]) -> usize {
    groups
        .iter()
        .map(|&g| members(g).count().saturating_sub(1))
        .sum()
}
