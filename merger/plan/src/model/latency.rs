//! What a plan does to latency: each entry point's critical path (its
//! functions' rounds one after another, a round as long as its expected longest
//! call), the expected cost in all, and the gain the latency objective
//! maximizes, with the bound the exact search prunes by.

use super::{CallEdge, CallsTo, Model, NO_CALLER, Round, Set, bit};
use std::collections::BTreeMap;

impl Model {
    /// The expected latency `groups` remove, ms per request of the
    /// application: each entry point's critical path before less after,
    /// weighted by its requests; a gateway call at its measured cost, else
    /// `--hop-ms` ([`Constraints::hop_ms`](super::Constraints::hop_ms)).
    pub fn gain_ms(&self, groups: &[Set]) -> f64 {
        self.gain_bound(groups, Set::EMPTY, &self.critical_alone())
    }

    /// Each function's critical path with no group, ms (the latency before).
    pub fn critical_alone(&self) -> Vec<f64> {
        let alone: Vec<Set> = (0..self.n()).map(bit).collect();
        let mut memo = BTreeMap::new();
        (0..self.n())
            .map(|e| {
                self.walk(
                    (e, NO_CALLER),
                    e,
                    &alone,
                    &|u, v| self.hop_cost(u, v),
                    Set::EMPTY,
                    &mut memo,
                )
                .0
            })
            .collect()
    }

    /// [`gain_ms`](Self::gain_ms) when the groups of the roots in `open` are
    /// still to be chosen: below such a deployment every call is taken as
    /// in-process, so no choice of theirs gains more.
    pub fn gain_bound(&self, groups: &[Set], open: Set, before: &[f64]) -> f64 {
        let mut memo = BTreeMap::new();
        let (mut gain, mut requests) = (0.0, 0.0);
        for e in self.entries() {
            let (after, _) = self.walk(
                (e, NO_CALLER),
                e,
                groups,
                &|u, v| self.hop_cost(u, v),
                open,
                &mut memo,
            );
            gain += self.external[e] * (before[e] - after);
            requests += self.external[e];
        }
        if requests == 0.0 {
            0.0
        } else {
            gain / requests
        }
    }

    /// One gateway call `u → v`, ms: measured, else the bench's figure for
    /// it, else the default.
    pub fn hop_cost(&self, u: usize, v: usize) -> f64 {
        self.measured_hop_ms
            .get(&CallEdge { from: u, to: v })
            .copied()
            .unwrap_or(self.constraints.hop_ms)
    }

    /// Gateway hops per request at `entry` under `groups`: on the critical
    /// path (each function's [`rounds`](Self::rounds) one after another, a
    /// round as long as its expected longest call) and in all, before (no groups)
    /// and after.
    pub fn hops(&self, entry: usize, groups: &[Set]) -> Hops {
        self.costs(entry, groups, &|_, _| 1.0)
    }

    /// [`hops`](Self::hops) in ms: each gateway call at
    /// [`hop_cost`](Self::hop_cost).
    pub fn latency(&self, entry: usize, groups: &[Set]) -> Hops {
        self.costs(entry, groups, &|u, v| self.hop_cost(u, v))
    }

    fn costs(&self, entry: usize, groups: &[Set], cost: &dyn Fn(usize, usize) -> f64) -> Hops {
        let alone: Vec<Set> = (0..self.n()).map(bit).collect();
        let start = (entry, NO_CALLER);
        let (critical_before, total_before) =
            self.walk(start, entry, &alone, cost, Set::EMPTY, &mut BTreeMap::new());
        let (critical_after, total_after) =
            self.walk(start, entry, groups, cost, Set::EMPTY, &mut BTreeMap::new());
        Hops {
            critical_before,
            critical_after,
            total_before,
            total_after,
        }
    }

    /// (critical-path cost, expected cost) below `u` called by `from` (its
    /// calls at that call path's rates, [`rate`](Self::rate)), running in the
    /// deployment rooted at `root`, a gateway call `u → v` costing `cost(u, v)`
    /// and an in-process one nothing; nothing below a deployment whose root
    /// is in `open` (its group not chosen yet). The critical path sums `u`'s
    /// rounds, each its expected longest call ([`expected_longest`]: a site
    /// made on a share of the invocations, a looped site once per
    /// iteration, from the calls per invocation, [`share`](Self::share)).
    fn walk(
        &self,
        (u, from): (usize, usize),
        root: usize,
        groups: &[Set],
        cost: &dyn Fn(usize, usize) -> f64,
        open: Set,
        memo: &mut Memo,
    ) -> (f64, f64) {
        if open.contains(root) {
            return (0.0, 0.0);
        }
        let from = self.context(from, u);
        if let Some(&known) = memo.get(&(u, from, root)) {
            return known;
        }
        // A call back's run makes no call: the hop alone, if any.
        let below = |v: usize, memo: &mut Memo| {
            if self.back_of(u).iter().any(|c| c.callee == v) {
                let hop = if self.in_process(root, groups[root], v) {
                    0.0
                } else {
                    cost(u, v)
                };
                return (hop, hop);
            }
            let inside = v != root && groups[root].contains(v);
            let (next, hop) = if inside { (root, 0.0) } else { (v, cost(u, v)) };
            let (c, t) = self.walk((v, u), next, groups, cost, open, memo);
            (hop + c, hop + t)
        };
        let mut total = 0.0;
        for c in &self.calls[u] {
            total += self.rate(from, u, c) * below(c.callee, memo).1;
        }
        for &CallsTo {
            callee: v,
            calls: m,
        } in self.back_of(u)
        {
            total += m * below(v, memo).1;
        }
        let mut critical = 0.0;
        for round in &self.rounds[u] {
            let mut sites: Vec<(f64, f64)> = Vec::new();
            for (v, looped) in round.sites() {
                let (chance, times) = self.share((u, from), v, looped);
                if chance > 0.0 {
                    sites.push((chance, times * below(v, memo).0));
                }
            }
            critical += expected_longest(sites);
        }
        memo.insert((u, from, root), (critical, total));
        (critical, total)
    }
}

/// Walks already made: by function, its caller and its deployment's root.
type Memo = BTreeMap<(usize, usize, usize), (f64, f64)>;

/// The expected length of a round whose sites are made with these chances,
/// each as long as given when made: the most any way of making them
/// together (consistent with each one's chance) can take, so exact for
/// calls always made at once and for branches of which one is taken. Sorted
/// longest first, each site adds its length times the chance that it is
/// made and no longer one is (at most what is left of 1).
fn expected_longest(mut sites: Vec<(f64, f64)>) -> f64 {
    sites.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (mut taken, mut expected) = (0.0f64, 0.0);
    for (chance, length) in sites {
        let next = (taken + chance).min(1.0);
        expected += (next - taken) * length;
        taken = next;
    }
    expected
}

impl Model {
    /// One site of `v` in `u`'s rounds (`u` called by `from`), from `u`'s
    /// calls of `v` per invocation on that path: the chance it is made, and how many times one after
    /// another when it is. The calls are shared among `v`'s sites: up to
    /// one each, evenly; past one each, sites made once take one and
    /// looped sites the rest (iterations); without a looped site, the
    /// surplus is repeats made at once (`join_all` over a list), one long.
    fn share(&self, (u, from): (usize, usize), v: usize, looped: bool) -> (f64, f64) {
        let m: f64 = self.calls[u]
            .iter()
            .filter(|c| c.callee == v)
            .map(|c| self.rate(from, u, c))
            .chain(
                self.back_of(u)
                    .iter()
                    .filter(|c| c.callee == v)
                    .map(|c| c.calls),
            )
            .sum();
        let (mut once, mut loops) = (0usize, 0usize);
        for (w, l) in self.rounds[u].iter().flat_map(Round::sites) {
            if w == v {
                if l {
                    loops += 1;
                } else {
                    once += 1;
                }
            }
        }
        let sites = (once + loops) as f64;
        if m <= 0.0 || sites == 0.0 {
            return (0.0, 0.0);
        }
        if m <= sites {
            return (m / sites, 1.0);
        }
        if looped {
            (1.0, (m - once as f64) / loops as f64)
        } else {
            (1.0, 1.0)
        }
    }
}

/// Gateway hops per request at one entry point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hops {
    pub critical_before: f64,
    pub critical_after: f64,
    pub total_before: f64,
    pub total_after: f64,
}
