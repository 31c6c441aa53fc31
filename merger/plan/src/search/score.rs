//! What a plan is worth under the model's objective, in one place for every
//! search that compares whole plans (the local search, the incumbent the
//! branch and bound starts from, the deadline's best so far), and the
//! plan made of a search's groups ([`finish`]).

use crate::model::{Figures, Model, Plan, Resource, Set, bit, members};

/// The objective's figure for `groups`, higher better
/// ([`Objective::score`](crate::model::Objective::score)); `None` when a
/// group breaks the model's rules, the plan leaves more deployed than a
/// total cap allows, or it misses a minimum. At the leaves of the branch
/// and bound this is its own bound's figure, so the two compare.
pub fn score(model: &Model, groups: &[Set]) -> Option<f64> {
    let feasible = (0..groups.len()).all(|r| {
        groups[r].contains(r) && (groups[r].count_ones() == 1 || model.admits(r, groups[r]))
    });
    if !feasible || !model.within_caps(groups) {
        return None;
    }
    let c = &model.constraints;
    let removed = model.value(groups).removed;
    let gain = if c.objective.needs_gain() || c.min_gain_ms.is_some() {
        model.gain_ms(groups)
    } else {
        0.0
    };
    let meets = c.min_calls_removed.is_none_or(|min| removed >= min - 1e-9)
        && c.min_gain_ms.is_none_or(|min| gain >= min - 1e-9);
    if !meets {
        return None;
    }
    Some(
        c.objective.score(&Figures {
            removed,
            gain_ms: gain,
            copies: (0..groups.len())
                .map(|r| model.copies(Resource::Memory, r, groups[r]))
                .sum::<f64>(),
            cost: if c.objective.needs_cost() {
                model.cost(groups)
            } else {
                0.0
            },
        }),
    )
}

/// Merged members in all: at an equal score, fewer win.
pub(super) fn extra(groups: &[Set]) -> usize {
    groups
        .iter()
        .map(|&g| members(g).count().saturating_sub(1))
        .sum()
}

/// Drops groups that remove nothing (no request arrives at their caller) and
/// members that remove nothing, then values the plan. Under the cost
/// objective a group no request reaches stays: what it lets go is its worth.
pub(super) fn finish(model: &Model, mut groups: Vec<Set>) -> Plan {
    let arrivals = model.value(&groups).arrivals;
    for r in 0..model.n() {
        if arrivals[r] == 0.0 && !model.constraints.objective.needs_cost() {
            groups[r] = bit(r);
        }
    }
    let removed = model.value(&groups).removed;
    let gain_ms = model.gain_ms(&groups);
    Plan {
        groups,
        removed,
        gain_ms,
    }
}
