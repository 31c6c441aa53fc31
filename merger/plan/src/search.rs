//! The two searches over [`Model`]: exact (branch and bound over each root's
//! possible groups, callers first) for applications of socialNetwork's size,
//! and a greedy heuristic for large ones. Both pursue the model's
//! [`Objective`] under its caps and minimums; at an equal objective, fewer
//! merged members (smaller binaries) win.

use crate::model::{Figures, Model, Plan, Reserved, Resource, Set, bit, members};

/// How hard the exact search may try before it gives up (and says so).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Candidate groups per root.
    pub candidates: usize,
    /// Search nodes in all.
    pub nodes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            candidates: 50_000,
            nodes: 20_000_000,
        }
    }
}

const EPS: f64 = 1e-9;

/// Every group `root` may root: connected from it (each member reached
/// from the root through members), feasible; `None` past the limit.
pub fn candidates(model: &Model, root: usize, limit: usize) -> Option<Vec<Set>> {
    let mut out = vec![bit(root)];
    if model.left_out[root].is_some() || !model.feasible(bit(root)) {
        return Some(out);
    }
    // Each connected set once: a member, once passed over, is never added
    // later in the same branch.
    fn grow(
        model: &Model,
        set: Set,
        frontier: Vec<usize>,
        excluded: Set,
        out: &mut Vec<Set>,
        limit: usize,
    ) -> bool {
        for (i, &v) in frontier.iter().enumerate() {
            let next = set | bit(v);
            if !model.feasible(next) {
                continue;
            }
            out.push(next);
            if out.len() > limit {
                return false;
            }
            let mut skip = excluded;
            for &w in &frontier[..i] {
                skip |= bit(w);
            }
            let mut more: Vec<usize> = frontier[i + 1..].to_vec();
            for &(w, _) in &model.calls[v] {
                if next & bit(w) == 0 && skip & bit(w) == 0 && !more.contains(&w) {
                    more.push(w);
                }
            }
            if !grow(model, next, more, skip, out, limit) {
                return false;
            }
        }
        true
    }
    let frontier: Vec<usize> = model.calls[root].iter().map(|&(v, _)| v).collect();
    let mut unique = Vec::new();
    for v in frontier {
        if !unique.contains(&v) && v != root {
            unique.push(v);
        }
    }
    grow(model, bit(root), unique, bit(root), &mut out, limit).then_some(out)
}

/// One candidate group of a root with what one request there does.
struct Candidate {
    set: Set,
    /// Its members' memory beyond the root's ([`Model::copies`]).
    copies: f64,
    /// What its deployment reserves when it stays: requests and limits,
    /// memory and cpu ([`Model::pod`]).
    pod: [f64; 4],
    hops: f64,
    out: Vec<(usize, f64)>,
    inside: Vec<(usize, f64)>,
}

/// The exact plan, or `None` when the search passed its limits.
///
/// Roots are decided callers first, so the requests arriving at a root are
/// final when it is decided. The bound: each run of a function not yet
/// decided is either in-process somewhere or arrives over the gateway, so
/// the hops still to be removed are at most its runs not yet accounted for
/// (neither already in-process in a decided group, nor already sent to it).
pub fn exact(model: &Model, limits: Limits) -> Option<Plan> {
    let n = model.n();
    let runs = model.invocations();
    let mut options: Vec<Vec<Candidate>> = Vec::with_capacity(n);
    for (r, &run) in runs.iter().enumerate() {
        let sets = if run > 0.0 {
            candidates(model, r, limits.candidates)?
        } else {
            vec![bit(r)]
        };
        let mut list: Vec<Candidate> = sets
            .into_iter()
            .map(|set| {
                let flow = model.flow(r, set);
                let pod = model.pod(r, set);
                let amount = |f: crate::model::Figure| f.amount.unwrap_or(0.0);
                Candidate {
                    set,
                    copies: model.copies(Resource::Memory, r, set),
                    pod: [
                        amount(pod.requests[0]),
                        amount(pod.requests[1]),
                        amount(pod.limits[0]),
                        amount(pod.limits[1]),
                    ],
                    hops: flow.removed,
                    out: flow.out,
                    inside: flow.inside,
                }
            })
            .collect();
        list.sort_by(|a, b| {
            b.hops
                .total_cmp(&a.hops)
                .then(a.set.count_ones().cmp(&b.set.count_ones()))
                .then(a.set.cmp(&b.set))
        });
        options.push(list);
    }
    struct Search<'a> {
        model: &'a Model,
        options: &'a [Vec<Candidate>],
        runs: &'a [f64],
        /// Each entry point's critical path with no group.
        before: Vec<f64>,
        /// The roots from `order[k]` on, as a set, per `k`.
        open: Vec<Set>,
        choice: Vec<Set>,
        /// (objective, merged members, groups) of the best plan so far.
        best: Option<(f64, u32, Vec<Set>)>,
        nodes: u64,
        limit: u64,
        /// What the application reserves unmerged ([`Model::cost`]).
        unmerged: Reserved,
        /// Functions whose deployment stays whatever is merged: declared,
        /// called from outside, or called by none.
        sure: Vec<bool>,
    }
    /// What the roots decided so far did.
    #[derive(Clone, Copy)]
    struct Done {
        removed: f64,
        extra: u32,
        /// Memory copies reserve.
        copies: f64,
        /// What deployments sure to stay reserve: the roots decided with
        /// requests arriving (requests and limits, memory and cpu, and a
        /// pod each), and the limits and pod of each undecided function
        /// that stays whatever is merged (a merged pod's limits are never
        /// below its root's own). A bound from below on the plan's.
        floor: [f64; 5],
    }
    impl Search<'_> {
        /// `arrivals` and `inside`: runs of each function already sent over
        /// the gateway / already in-process, by the roots decided so far.
        fn go(&mut self, k: usize, arrivals: &[f64], inside: &[f64], done: Done) -> bool {
            self.nodes += 1;
            if self.nodes > self.limit {
                return false;
            }
            let model = self.model;
            let open = self.open[k];
            // Upper bounds of what the plans below this node remove: the
            // runs not yet accounted for, each in-process at best; the
            // latency with every call below an open root in-process.
            let removed_bound = done.removed
                + model.order[k..]
                    .iter()
                    .map(|&j| (self.runs[j] - arrivals[j] - inside[j]).max(0.0))
                    .sum::<f64>();
            let c = &model.constraints;
            let gain_bound = (c.objective.needs_gain() || c.min_gain_ms.is_some())
                .then(|| model.gain_bound(&self.choice, open, &self.before));
            if c.min_calls_removed
                .is_some_and(|min| removed_bound < min - EPS)
                || c.min_gain_ms
                    .zip(gain_bound)
                    .is_some_and(|(min, bound)| bound < min - EPS)
            {
                return true;
            }
            // Every root decided: the plan's own cost and caps.
            let leaf = k == model.n();
            if leaf && !model.within_caps(&self.choice) {
                return true;
            }
            let cost = if !c.objective.needs_cost() {
                0.0
            } else if leaf {
                model.cost(&self.choice)
            } else {
                let f = done.floor;
                let floor = Reserved {
                    pods: f[4] as usize,
                    requests: [f[0], f[1]],
                    limits: [Some(f[2]), Some(f[3])],
                };
                model.cost_of(&floor, &self.unmerged)
            };
            let bound = c.objective.score(&Figures {
                removed: removed_bound,
                gain_ms: gain_bound.unwrap_or(0.0),
                copies: done.copies,
                cost,
            });
            if let Some((best, members, _)) = &self.best
                && (bound < best - EPS || (bound <= best + EPS && done.extra >= *members))
            {
                return true;
            }
            if leaf {
                // Every root decided: the bounds are the plan's own figures.
                self.best = Some((bound, done.extra, self.choice.clone()));
                return true;
            }
            let r = model.order[k];
            let a = arrivals[r];
            let options = &self.options[r];
            let alone = options
                .iter()
                .position(|o| o.set == bit(r))
                .expect("the root alone is a candidate");
            // Nobody arrives: no group pays off here.
            let tried: Vec<usize> = if a == 0.0 {
                vec![alone]
            } else {
                (0..options.len()).collect()
            };
            for i in tried {
                let o = &options[i];
                let mut floor = done.floor;
                if a > 0.0 {
                    // Requests arrive: this deployment stays.
                    for (f, p) in floor.iter_mut().zip(o.pod) {
                        *f += p;
                    }
                    floor[4] += 1.0;
                    if self.sure[r] {
                        // Counted undecided already: its own limits and pod.
                        floor[2] -= model.limit(Resource::Memory, r).unwrap_or(0.0);
                        floor[3] -= model.limit(Resource::Cpu, r).unwrap_or(0.0);
                        floor[4] -= 1.0;
                    }
                }
                if !model.caps_hold(&[floor[2], floor[3]]) {
                    continue; // past --max-total-memory or --max-total-cpu
                }
                let mut next = arrivals.to_vec();
                for &(v, calls) in &o.out {
                    next[v] += a * calls;
                }
                let mut within = inside.to_vec();
                for &(v, calls) in &o.inside {
                    within[v] += a * calls;
                }
                self.choice[r] = o.set;
                let now = Done {
                    removed: done.removed + a * o.hops,
                    extra: done.extra + o.set.count_ones() - 1,
                    copies: done.copies + o.copies,
                    floor,
                };
                if !self.go(k + 1, &next, &within, now) {
                    return false;
                }
            }
            self.choice[r] = bit(r);
            true
        }
    }
    let alone: Vec<Set> = (0..n).map(bit).collect();
    let called = |i: usize| model.calls.iter().any(|c| c.iter().any(|&(v, _)| v == i));
    let sure: Vec<bool> = (0..n)
        .map(|i| model.declared[i] || model.external[i] > 0.0 || !called(i))
        .collect();
    let mut floor = [0.0; 5];
    for i in (0..n).filter(|&i| sure[i]) {
        floor[2] += model.limit(Resource::Memory, i).unwrap_or(0.0);
        floor[3] += model.limit(Resource::Cpu, i).unwrap_or(0.0);
        floor[4] += 1.0;
    }
    let mut open = vec![0; n + 1];
    for k in (0..n).rev() {
        open[k] = open[k + 1] | bit(model.order[k]);
    }
    let mut search = Search {
        model,
        options: &options,
        runs: &runs,
        before: model.critical_alone(),
        open,
        choice: alone.clone(),
        best: None,
        nodes: 0,
        limit: limits.nodes,
        unmerged: model.reserved(&alone),
        sure: sure.clone(),
    };
    let start = Done {
        removed: 0.0,
        extra: 0,
        copies: 0.0,
        floor,
    };
    if !search.go(0, &model.external, &vec![0.0; n], start) {
        return None;
    }
    // No plan meets the minimums: the plan of no groups, which
    // `fmerge::plan::solve` refuses with the reason.
    let groups = search.best.map_or(alone, |(_, _, groups)| groups);
    Some(finish(model, groups))
}

/// Greedy: callers first, each root grows its group by the member that
/// adds the most to the objective (latency removed, then hops removed; for
/// calls, hops), while any does; then `trim` drops what the objective
/// does not need.
pub fn heuristic(model: &Model) -> Plan {
    let n = model.n();
    let mut groups: Vec<Set> = (0..n).map(bit).collect();
    let mut arrivals = model.external.clone();
    // Within the total caps with `set` as r's group, the roots not decided
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
            let worth = |set: Set, groups: &mut Vec<Set>| -> (f64, f64) {
                let hops = model.flow(r, set).removed;
                groups[r] = set;
                let worth = model.constraints.objective.worth(model, groups, hops);
                groups[r] = bit(r);
                worth
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
                        if next == set
                            || v == r
                            || !model.feasible(next)
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
        for (v, calls) in model.flow(r, groups[r]).out {
            arrivals[v] += a * calls;
        }
    }
    let groups = trim(model, groups);
    finish(model, groups)
}

/// Drops members, one at a time, while the objective does not get worse
/// and the minimums still hold: for latency, members off every critical
/// path; for memory, the largest first. Each group stays connected from
/// its root.
fn trim(model: &Model, mut groups: Vec<Set>) -> Vec<Set> {
    let c = &model.constraints;
    let score = |groups: &[Set]| Figures {
        removed: model.value(groups).0,
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

/// Drops groups that remove nothing (no request arrives at their root) and
/// members that remove nothing, then values the plan.
fn finish(model: &Model, mut groups: Vec<Set>) -> Plan {
    let (_, arrivals) = model.value(&groups);
    for r in 0..model.n() {
        if arrivals[r] == 0.0 {
            groups[r] = bit(r);
        }
    }
    let (removed, _) = model.value(&groups);
    let gain_ms = model.gain_ms(&groups);
    Plan {
        groups,
        removed,
        gain_ms,
    }
}
