//! The oracle's valuation of a plan on its own reading of the graph
//! (`oracle.rs`), and the enumeration of every plan of a small graph.
//!
//! A plan gives each function the group it is the caller of (a bit set,
//! itself alone when none). A call made in a deployment's process of a member
//! other than its caller stays in the process; any other goes over the gateway
//! to the callee's own deployment. Per request of the application: the
//! gateway calls removed, and the expected latency removed (each entry
//! point's critical path before less after, weighted by its share), a round
//! as long as the most its sites can take together given each one's share
//! (computed here as the integral over lengths of the chance that some site
//! that long is made, at most 1).

use crate::oracle::Reading;
use fmerge_plan::model::Objective;
use std::collections::HashMap;

pub type Set = u128;

pub fn bit(i: usize) -> Set {
    1 << i
}

/// Every function alone: no group.
pub fn alone(n: usize) -> Vec<Set> {
    (0..n).map(bit).collect()
}

/// What a plan reserves of one figure every function sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Reserved {
    /// `memory limits`, `cpu limits`, `memory requests`, `cpu requests`.
    pub what: &'static str,
    /// Every function's own deployment (each stays deployed).
    pub base: f64,
    /// Each group's members beyond its caller: the merged pod reserves their
    /// sum in place of the caller's.
    pub copies: f64,
}

/// What a plan reserves: the one place the oracle says it (a figure some
/// function does not set is left out).
pub fn reserved(a: &Reading, groups: &[Set]) -> Vec<Reserved> {
    let rows = [
        ("memory limits", &a.memory),
        ("cpu limits", &a.cpu),
        ("memory requests", &a.requests_memory),
        ("cpu requests", &a.requests_cpu),
    ];
    rows.into_iter()
        .filter(|(_, amounts)| amounts.iter().all(Option::is_some))
        .map(|(what, amounts)| {
            let amount = |i: usize| amounts[i].unwrap();
            let copies = (0..a.n())
                .flat_map(|r| (0..a.n()).filter(move |&i| i != r && groups[r] & bit(i) != 0))
                .map(amount)
                .sum();
            Reserved {
                what,
                base: (0..a.n()).map(amount).sum(),
                copies,
            }
        })
        .collect()
}

/// A plan's figures, per request of the application.
#[derive(Debug, Clone)]
pub struct Figures {
    /// Gateway calls removed.
    pub removed: f64,
    /// Expected latency removed, ms.
    pub gain_ms: f64,
    pub reserved: Vec<Reserved>,
}

impl Figures {
    /// The copies of `what` (0 when not every function sets it).
    pub fn copies(&self, what: &str) -> f64 {
        self.reserved
            .iter()
            .find(|r| r.what == what)
            .map_or(0.0, |r| r.copies)
    }
}

pub fn figures(a: &Reading, groups: &[Set]) -> Figures {
    let mut memo = HashMap::new();
    let removed = (0..a.n())
        .map(|e| a.share[e] * hops(a, groups, e, e, &mut memo))
        .sum();
    Figures {
        removed,
        gain_ms: gain_ms(a, groups),
        reserved: reserved(a, groups),
    }
}

/// `v` runs in deployment `d`'s process.
fn inside(groups: &[Set], d: usize, v: usize) -> bool {
    v != d && groups[d] & bit(v) != 0
}

/// Figures of one run of a function in a deployment, by `(function,
/// deployment)`, each worked out once.
pub type Memo = HashMap<(usize, usize), f64>;

/// `memo`'s figure for `key`, or `work`'s, remembered.
fn remembered(memo: &mut Memo, key: (usize, usize), work: impl FnOnce(&mut Memo) -> f64) -> f64 {
    if let Some(&figure) = memo.get(&key) {
        return figure;
    }
    let figure = work(memo);
    memo.insert(key, figure);
    figure
}

/// Gateway calls removed below one run of `u` in deployment `d`.
fn hops(a: &Reading, groups: &[Set], u: usize, d: usize, memo: &mut Memo) -> f64 {
    remembered(memo, (u, d), |memo| {
        let mut h = 0.0;
        for &(v, m) in &a.calls[u] {
            h += if inside(groups, d, v) {
                m * (1.0 + hops(a, groups, v, d, memo))
            } else {
                m * hops(a, groups, v, v, memo)
            };
        }
        h
    })
}

/// Expected latency removed, ms per request of the application.
pub fn gain_ms(a: &Reading, groups: &[Set]) -> f64 {
    entry_gains(a, groups)
        .iter()
        .map(|&(e, gain)| a.share[e] * gain)
        .sum()
}

/// Each entry point (a function with a share of the requests) and the
/// expected latency one request at it loses, ms: its critical path with no
/// group less with `groups`.
pub fn entry_gains(a: &Reading, groups: &[Set]) -> Vec<(usize, f64)> {
    let (mut before, mut after) = (HashMap::new(), HashMap::new());
    let none = alone(a.n());
    (0..a.n())
        .filter(|&e| a.share[e] > 0.0)
        .map(|e| {
            let gain =
                critical(a, &none, e, e, &mut before) - critical(a, groups, e, e, &mut after);
            (e, gain)
        })
        .collect()
}

/// The critical path of one run of `u` in deployment `d`, ms: its rounds
/// one after another.
pub fn critical(a: &Reading, groups: &[Set], u: usize, d: usize, memo: &mut Memo) -> f64 {
    remembered(memo, (u, d), |memo| {
        let mut path = 0.0;
        for round in &a.rounds[u] {
            let made: Vec<(f64, f64)> = round
                .iter()
                .map(|s| {
                    let v = s.callee;
                    let one = if inside(groups, d, v) {
                        critical(a, groups, v, d, memo)
                    } else {
                        a.hop(u, v) + critical(a, groups, v, v, memo)
                    };
                    (s.chance, s.times * one)
                })
                .collect();
            path += longest(&made);
        }
        path
    })
}

/// The most the sites `(chance, length)` can take together: E[max] is the
/// integral over t of P(some site longer than t is made), and that chance
/// is at most the sum of those sites' chances and at most 1; both bounds
/// are reached at once by making the longer sites on disjoint invocations.
fn longest(sites: &[(f64, f64)]) -> f64 {
    let mut cuts: Vec<f64> = sites.iter().map(|s| s.1).filter(|&l| l > 0.0).collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let (mut from, mut total) = (0.0, 0.0);
    for t in cuts {
        let chance: f64 = sites.iter().filter(|s| s.1 >= t).map(|s| s.0).sum();
        total += chance.min(1.0) * (t - from);
        from = t;
    }
    total
}

/// Whether `caller` may be `set`'s caller: alone always; else no left-out
/// member, no pair kept apart, within `--max-memory`, and every member reached
/// from the caller through members.
pub fn valid(a: &Reading, caller: usize, set: Set) -> bool {
    if set == bit(caller) {
        return true;
    }
    let members: Vec<usize> = (0..a.n()).filter(|&i| set & bit(i) != 0).collect();
    if set & bit(caller) == 0 || members.iter().any(|&i| a.left_out[i]) {
        return false;
    }
    if a.apart
        .iter()
        .any(|&(x, y)| set & bit(x) != 0 && set & bit(y) != 0)
    {
        return false;
    }
    if let Some(max) = a.flags.max_memory {
        let sum: f64 = members.iter().map(|&i| a.memory[i].unwrap()).sum();
        if sum > max * (1.0 + 1e-12) {
            return false;
        }
    }
    let mut reached = bit(caller);
    let mut todo = vec![caller];
    while let Some(u) = todo.pop() {
        for &(v, _) in &a.calls[u] {
            if set & bit(v) != 0 && reached & bit(v) == 0 {
                reached |= bit(v);
                todo.push(v);
            }
        }
    }
    reached == set
}

/// Within `--max-total-memory` and `--max-total-cpu`.
pub fn within_caps(a: &Reading, reserved: &[Reserved]) -> bool {
    [
        ("memory limits", a.flags.max_total_memory),
        ("cpu limits", a.flags.max_total_cpu),
    ]
    .into_iter()
    .all(|(what, cap)| {
        cap.is_none_or(|max| {
            let r = reserved.iter().find(|r| r.what == what).unwrap();
            r.base + r.copies <= max * (1.0 + 1e-9)
        })
    })
}

/// Removes what `--min-gain-ms` and `--min-calls-removed` ask.
pub fn meets(a: &Reading, f: &Figures) -> bool {
    a.flags.min_gain_ms.is_none_or(|m| f.gain_ms >= m - 1e-9)
        && a.flags
            .min_calls_removed
            .is_none_or(|m| f.removed >= m - 1e-9)
}

/// What the objective maximizes.
pub fn score(a: &Reading, f: &Figures) -> f64 {
    match a.flags.objective {
        Objective::Latency => f.gain_ms,
        Objective::Calls => f.removed,
        Objective::Memory => -f.copies("memory limits"),
        other => panic!("objective {}", other.name()),
    }
}

/// A plan that is valid by every rule: each group, the caps, the minimums.
pub fn allowed(a: &Reading, groups: &[Set], f: &Figures) -> bool {
    (0..a.n()).all(|r| valid(a, r, groups[r])) && within_caps(a, &f.reserved) && meets(a, f)
}

/// The best plan by exhaustive enumeration (every valid group at every
/// deployment a request reaches; a deployment none reaches gains nothing
/// from a group, so it is none's caller), with its score; `None` when no plan
/// meets the minimums.
pub fn best(a: &Reading) -> Option<(f64, Vec<Set>)> {
    assert!(a.n() <= 8, "the enumeration is for small graphs");
    let options: Vec<Vec<Set>> = (0..a.n()).map(|r| groups_of(a, r)).collect();
    let mut best = None;
    let mut groups = alone(a.n());
    enumerate(a, &options, 0, a.share.clone(), &mut groups, &mut best);
    best
}

fn enumerate(
    a: &Reading,
    options: &[Vec<Set>],
    k: usize,
    arrivals: Vec<f64>,
    groups: &mut Vec<Set>,
    best: &mut Option<(f64, Vec<Set>)>,
) {
    if k == a.n() {
        let f = figures(a, groups);
        if allowed(a, groups, &f) && best.as_ref().is_none_or(|b| score(a, &f) > b.0 + 1e-12) {
            *best = Some((score(a, &f), groups.clone()));
        }
        return;
    }
    let r = a.order[k];
    let reached = arrivals[r] > 0.0;
    for &g in options[r].iter().filter(|&&g| reached || g == bit(r)) {
        groups[r] = g;
        let mut next = arrivals.clone();
        for (v, calls) in leaving(a, r, g).into_iter().enumerate() {
            next[v] += arrivals[r] * calls;
        }
        enumerate(a, options, k + 1, next, groups, best);
    }
    groups[r] = bit(r);
}

/// Calls one request at `caller`'s deployment (group `set`) sends over the
/// gateway, per callee.
pub fn leaving(a: &Reading, caller: usize, set: Set) -> Vec<f64> {
    let mut runs = vec![0.0; a.n()];
    let mut out = vec![0.0; a.n()];
    runs[caller] = 1.0;
    for &u in &a.order {
        for &(v, m) in &a.calls[u] {
            if runs[u] == 0.0 {
                continue;
            }
            if v != caller && set & bit(v) != 0 {
                runs[v] += runs[u] * m;
            } else {
                out[v] += runs[u] * m;
            }
        }
    }
    out
}

/// Every group `r` may be the caller of, itself alone first: grown one callee
/// of a member at a time, each set once.
pub fn groups_of(a: &Reading, r: usize) -> Vec<Set> {
    let mut seen = std::collections::BTreeSet::from([bit(r)]);
    let mut todo = vec![bit(r)];
    while let Some(set) = todo.pop() {
        for u in (0..a.n()).filter(|&u| set & bit(u) != 0) {
            for &(v, _) in &a.calls[u] {
                let next = set | bit(v);
                if next != set && valid(a, r, next) && seen.insert(next) {
                    todo.push(next);
                }
            }
        }
    }
    let mut list: Vec<Set> = seen.into_iter().collect();
    list.sort_by_key(|&g| g != bit(r));
    list
}

/// The most expected latency any plan removes when no total cap or minimum
/// couples the deployments, by dynamic programming, callees first: a
/// critical path only grows with its callees' deployments' critical paths,
/// so the plan that gives each deployment its shortest own critical path
/// (its callees' deployments already so) is the best for every entry point
/// at once.
pub fn best_latency_uncoupled(a: &Reading) -> f64 {
    assert!(a.flags.max_total_memory.is_none() && a.flags.max_total_cpu.is_none());
    let mut groups = alone(a.n());
    for &v in a.order.iter().rev() {
        let mut shortest = (f64::INFINITY, bit(v));
        for g in groups_of(a, v) {
            groups[v] = g;
            let c = critical(a, &groups, v, v, &mut HashMap::new());
            if c < shortest.0 - 1e-12 {
                shortest = (c, g);
            }
        }
        groups[v] = shortest.1;
    }
    gain_ms(a, &groups)
}
