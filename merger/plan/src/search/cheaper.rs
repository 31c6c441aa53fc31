//! After the search, among the plans its objective values the same, one the
//! cluster pays less for. The latency and calls objectives see no gain in a
//! merge at a caller no request reaches, yet it may let a callee's own
//! deployment go: a deployment kept only because calls reach it over the
//! gateway goes once every deployment that calls it holds it in-process.
//! Each such move is taken while the objective's figure, every group rule,
//! cap and minimum hold and the cluster reserves less ([`Model::cost`]);
//! the objective's figure is unchanged, so a proven plan stays proven.

use super::score::score;
use super::{EPS, Limits};
use crate::model::{Kept, Model, Plan, Set, bit, members};

/// `plan`, with the deployments dropped that can go at no loss to the
/// objective, until none can or the deadline passes.
pub fn cheaper(model: &Model, plan: Plan, limits: &Limits) -> Plan {
    let Some(mut now) = score(model, &plan.groups) else {
        return plan;
    };
    let mut groups = plan.groups.clone();
    let mut cost = model.cost(&groups);
    while !limits.late() {
        let kept = model.kept(&groups);
        let mut best: Option<(f64, f64, Vec<Set>)> = None;
        for v in (0..model.n()).filter(|&v| may_go(model, &groups, kept[v], v)) {
            let Some(next) = held_by_its_callers(model, &groups, &kept, v) else {
                continue;
            };
            if model.kept(&next)[v].is_some() {
                continue;
            }
            let Some(s) = score(model, &next) else {
                continue;
            };
            let c = model.cost(&next);
            if s >= now - EPS && c < cost - EPS && best.as_ref().is_none_or(|b| c < b.1) {
                best = Some((s, c, next));
            }
        }
        let Some((s, c, next)) = best else {
            break;
        };
        (groups, now, cost) = (next, s, c);
    }
    if groups == plan.groups {
        return plan;
    }
    Plan {
        gain_ms: model.gain_ms(&groups),
        removed: model.value(&groups).removed,
        groups,
    }
}

/// Whether `v`'s deployment stays only because of calls over the gateway
/// (or because no group holds it yet): not declared, no requests from
/// outside, rooting no group.
fn may_go(model: &Model, groups: &[Set], kept: Option<Kept>, v: usize) -> bool {
    matches!(kept, Some(Kept::NoCopy | Kept::Called { .. }))
        && !model.declared[v]
        && model.external[v] <= 0.0
        && groups[v] == bit(v)
}

/// `groups` with `v` in-process in every deployment that stays and holds a
/// caller of `v`; `None` when such a group may not hold it.
fn held_by_its_callers(
    model: &Model,
    groups: &[Set],
    kept: &[Option<Kept>],
    v: usize,
) -> Option<Vec<Set>> {
    let mut next = groups.to_vec();
    for d in (0..model.n()).filter(|&d| d != v && kept[d].is_some()) {
        let calls_v = |u: usize| model.callees(u).any(|w| w == v);
        if members(groups[d]).any(calls_v) {
            let set = next[d] | bit(v);
            if !model.admits(d, set) {
                return None;
            }
            next[d] = set;
        }
    }
    Some(next)
}
