//! The heuristic search: greedy growth of each root's group, callers
//! first, then members the objective does not need dropped, then the local
//! search of [`super::improve`].

use super::improve::adds;
use super::{EPS, Limits, finish, improve, score};
use crate::model::{Model, Objective, Plan, Resource, Set, bit, members};

/// Greedy: callers first, each root grows its group by the member that
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
    if model.max_total_memory.is_some() || model.max_total_cpu.is_some() {
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
    let room = [
        (Resource::Memory, model.left(Resource::Memory, &groups)),
        (Resource::Cpu, model.left(Resource::Cpu, &groups)),
    ];
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
    let mut left = [
        model.left(Resource::Memory, &groups),
        model.left(Resource::Cpu, &groups),
    ];
    let fits = |r: usize, set: Set, left: &[f64; 2]| {
        model.copies(Resource::Memory, r, set) <= left[0]
            && model.copies(Resource::Cpu, r, set) <= left[1]
    };
    for &r in &model.order {
        let a = arrivals[r];
        if a > 0.0 && model.left_out[r].is_none() {
            // What a group of r is worth: the objective's figure first.
            let worth = |set: Set, groups: &mut Vec<Set>| -> (f64, f64) {
                let (hops, _, _) = model.flow(r, set);
                if model.objective == Objective::Calls {
                    return (hops, 0.0);
                }
                groups[r] = set;
                let gain = model.gain_ms(groups);
                groups[r] = bit(r);
                (gain, hops)
            };
            let better = |a: (f64, f64), b: (f64, f64)| {
                a.0 > b.0 + EPS || (a.0 > b.0 - EPS && a.1 > b.1 + EPS)
            };
            let mut set = bit(r);
            let mut value = worth(set, &mut groups);
            loop {
                let mut best: Option<((f64, f64), Set)> = None;
                for u in members(set) {
                    for &(v, _) in &model.calls[u] {
                        let next = set | bit(v);
                        if next == set || v == r || !model.feasible(next) || !fits(r, next, &left) {
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
            left[0] -= model.copies(Resource::Memory, r, set);
            left[1] -= model.copies(Resource::Cpu, r, set);
        }
        let (_, out, _) = model.flow(r, groups[r]);
        for (v, calls) in out {
            arrivals[v] += a * calls;
        }
    }
    trim(model, groups)
}

/// Drops members, one at a time, while the objective does not get worse
/// and the minimums still hold: for latency, members off every critical
/// path; for memory, the largest first. Each group stays connected from
/// its root.
fn trim(model: &Model, mut groups: Vec<Set>) -> Vec<Set> {
    let score = |groups: &[Set]| -> (f64, f64) {
        let (removed, _) = model.value(groups);
        (removed, model.gain_ms(groups))
    };
    let meets = |groups: &[Set]| {
        let (removed, gain) = score(groups);
        model.min_removed.is_none_or(|m| removed >= m - EPS)
            && model.min_gain_ms.is_none_or(|m| gain >= m - EPS)
    };
    if !meets(&groups) {
        return groups; // solve() says which minimum no plan found reaches
    }
    loop {
        let (removed, gain) = score(&groups);
        let mut best: Option<(f64, Vec<Set>)> = None;
        for r in 0..groups.len() {
            for v in members(groups[r]).filter(|&v| v != r) {
                let set = groups[r] & !bit(v);
                if model.reach_within(r, set) != set {
                    continue; // v carries another member's calls
                }
                let mut next = groups.clone();
                next[r] = set;
                let (now_removed, now_gain) = score(&next);
                let kept = match model.objective {
                    Objective::Calls => now_removed >= removed - EPS,
                    Objective::Latency => now_gain >= gain - EPS,
                    Objective::Memory => true,
                };
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
