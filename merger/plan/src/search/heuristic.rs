//! The heuristic search: greedy growth of each caller's group, callers
//! first, then members the objective does not need dropped, then the local
//! search of [`super::improve`].

use super::improve::adds;
use super::{EPS, Limits, finish, improve, score};
use crate::model::{CallsTo, Figures, GroupWorth, Model, Plan, Resource, Set, bit, members};

/// Greedy: callers first, each caller grows its group by the member that
/// adds the most to the objective (latency removed, then hops removed; for
/// calls, hops), while any does; then `trim` drops what the objective
/// does not need, and the local search ([`improve`]) takes it from there
/// until no single change (or move of one member) helps.
pub fn heuristic(model: &Model) -> Plan {
    heuristic_within(model, &Limits::default())
}

/// [`heuristic`], its local search stopped at `limits`' deadline. Under a
/// total cap it starts from the better of two greedy plans: callers first,
/// and the one that spends the room where it removes the most.
pub fn heuristic_within(model: &Model, limits: &Limits) -> Plan {
    let mut groups = grow(model);
    let c = &model.constraints;
    if c.max_total_memory.is_some() || c.max_total_cpu.is_some() {
        let spent = by_room(model, limits);
        if score(model, &spent).unwrap_or(f64::NEG_INFINITY)
            > score(model, &groups).unwrap_or(f64::NEG_INFINITY) + EPS
        {
            groups = spent;
        }
    }
    finish(model, improve(model, groups, limits))
}

/// Greedy over all groups at once: the member added is the one that adds
/// the most to the objective for the share of the caps' room it takes,
/// while any adds something and fits (or until the deadline).
fn by_room(model: &Model, limits: &Limits) -> Vec<Set> {
    let mut groups: Vec<Set> = (0..model.n()).map(bit).collect();
    // The room each total cap leaves unmerged (none: no cap).
    let unmerged = model.reserved(&groups).limits;
    let caps = [
        model.constraints.max_total_memory,
        model.constraints.max_total_cpu,
    ];
    let room = [Resource::Memory, Resource::Cpu].map(|res| {
        let k = res.index();
        let left = caps[k].map_or(f64::INFINITY, |cap| cap - unmerged[k].unwrap_or(0.0));
        (res, left)
    });
    let Some(mut now) = score(model, &groups) else {
        return groups;
    };
    while !limits.late() {
        let mut best: Option<(f64, f64, usize, Set)> = None;
        for (r, set) in adds(model, &groups) {
            let old = std::mem::replace(&mut groups[r], set);
            let value = score(model, &groups);
            groups[r] = old;
            let Some(value) = value.filter(|v| *v > now + EPS) else {
                continue;
            };
            let share: f64 = room
                .iter()
                .filter(|(_, left)| left.is_finite() && *left > 0.0)
                .map(|&(res, left)| {
                    (model.copies(res, r, set) - model.copies(res, r, groups[r])) / left
                })
                .sum();
            let ratio = (value - now) / share.max(1e-12);
            if best.is_none_or(|(b, _, _, _)| ratio > b) {
                best = Some((ratio, value, r, set));
            }
        }
        match best {
            Some((_, value, r, set)) => {
                groups[r] = set;
                now = value;
            }
            None => return groups,
        }
    }
    groups
}

/// The greedy growth and `trim` alone: where [`heuristic`] and
/// [`super::within`] start from.
pub fn greedy(model: &Model) -> Plan {
    finish(model, grow(model))
}

fn grow(model: &Model) -> Vec<Set> {
    let n = model.n();
    let mut groups: Vec<Set> = (0..n).map(bit).collect();
    let mut arrivals = model.external.clone();
    // Within the total caps with `set` as r's group, the callers not decided
    // yet alone.
    let fits = |r: usize, set: Set, groups: &mut Vec<Set>| {
        groups[r] = set;
        let fits = model.within_caps(groups);
        groups[r] = bit(r);
        fits
    };
    for &r in &model.order {
        let a = arrivals[r];
        if a > 0.0 && model.left_out[r].is_none() {
            // What a group of r is worth: the objective's figure first.
            let worth = |set: Set, groups: &mut Vec<Set>| -> GroupWorth {
                let hops = model.flow(r, set).removed;
                groups[r] = set;
                let worth = model.constraints.objective.worth(model, groups, hops);
                groups[r] = bit(r);
                worth
            };
            let better = |a: GroupWorth, b: GroupWorth| {
                a.figure > b.figure + EPS
                    || (a.figure > b.figure - EPS && a.tie_break > b.tie_break + EPS)
            };
            let mut set = bit(r);
            let mut value = worth(set, &mut groups);
            loop {
                let mut best: Option<(GroupWorth, Set)> = None;
                for u in members(set) {
                    for v in model.callees(u) {
                        let next = set | bit(v);
                        if next == set
                            || v == r
                            || !model.admits(r, next)
                            || !fits(r, next, &mut groups)
                        {
                            continue;
                        }
                        let now = worth(next, &mut groups);
                        if better(now, value) && best.is_none_or(|(b, _)| better(now, b)) {
                            best = Some((now, next));
                        }
                    }
                }
                match best {
                    Some((now, next)) => {
                        value = now;
                        set = next;
                    }
                    None => break,
                }
            }
            groups[r] = set;
        }
        for CallsTo { callee: v, calls } in model.flow(r, groups[r]).out {
            arrivals[v] += a * calls;
        }
    }
    trim(model, groups)
}

/// Drops members, one at a time, while the objective does not get worse
/// and the minimums still hold: for latency, members off every critical
/// path; for memory, the largest first. Each group stays connected from
/// its caller.
fn trim(model: &Model, mut groups: Vec<Set>) -> Vec<Set> {
    let c = &model.constraints;
    let score = |groups: &[Set]| Figures {
        removed: model.value(groups).removed,
        gain_ms: model.gain_ms(groups),
        copies: 0.0,
        cost: if c.objective.needs_cost() {
            model.cost(groups)
        } else {
            0.0
        },
    };
    let meets = |groups: &[Set]| {
        let f = score(groups);
        c.min_calls_removed.is_none_or(|m| f.removed >= m - EPS)
            && c.min_gain_ms.is_none_or(|m| f.gain_ms >= m - EPS)
            && model.within_caps(groups)
    };
    if !meets(&groups) {
        return groups; // solve() says which minimum no plan found reaches
    }
    loop {
        let was = score(&groups);
        let mut best: Option<(f64, Vec<Set>)> = None;
        for r in 0..groups.len() {
            for v in members(groups[r]).filter(|&v| v != r) {
                let set = groups[r] & !bit(v);
                if model.reach_within(r, set) != set {
                    continue; // v carries another member's calls
                }
                let mut next = groups.clone();
                next[r] = set;
                let kept = c.objective.keeps(&was, &score(&next));
                let saved = model.memory[v].unwrap_or(0.0) + 1.0;
                if kept && meets(&next) && best.as_ref().is_none_or(|(s, _)| saved > *s) {
                    best = Some((saved, next));
                }
            }
        }
        match best {
            Some((_, next)) => groups = next,
            None => return groups,
        }
    }
}
