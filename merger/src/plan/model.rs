//! The planner's model of an application: functions, calls per invocation,
//! requests from outside, and what may share a binary; and the value of a
//! set of groups, which both searches ([`super::search`]) maximize.
//!
//! A group is a root (its merged binary replaces the root's deployment) and
//! members reached from it; an `invoke` made in that process of a member
//! other than the root runs in-process, any other goes through the gateway
//! to that function's deployment (its own group, if it roots one). A callee
//! may be a member of several groups: it stays deployed for the rest. Each
//! in-process call is a gateway hop removed. Requests that arrive at a
//! deployment are counted in topological order, so a group's value depends
//! on the traffic its callers' groups still send over the gateway.

use anyhow::{Result, bail};
use std::collections::{BTreeMap, BTreeSet};

/// Sets of functions as bits: a model holds at most `Set::BITS` (128)
/// functions.
pub type Set = u128;

/// Bytes in a MiB, for memory as people read it.
pub const MIB: f64 = 1048576.0;

#[derive(Debug, Clone, Default)]
pub struct Model {
    pub names: Vec<String>,
    /// Bytes of `limits.memory`, when set.
    pub memory: Vec<Option<f64>>,
    /// Callees and calls per invocation of the caller.
    pub calls: Vec<Vec<(usize, f64)>>,
    /// Requests from outside, per function.
    pub external: Vec<f64>,
    /// Why no group may hold the function.
    pub left_out: Vec<Option<String>>,
    /// Pairs no group may hold both of, with the reason.
    pub apart: BTreeMap<(usize, usize), String>,
    /// What the conflicts let functions share (the graph's
    /// `--allow-shared-static`): every group's file says it to `fmerge build`.
    pub allow_shared_static: Vec<String>,
    /// Sum of member memory a group may have.
    pub max_memory: Option<f64>,
    /// Memory the whole application may reserve: every function's own
    /// deployment ([`base_memory`](Self::base_memory)) plus every group's
    /// copies ([`copies_memory`](Self::copies_memory)).
    pub max_total_memory: Option<f64>,
    /// Functions in topological order (callers first).
    pub order: Vec<usize>,
    /// Calls left out to make the graph acyclic, as `(from, to)`.
    pub cycles: Vec<(usize, usize)>,
    /// Measured cost of one gateway call, ms, per `(from, to)` where known.
    pub hop_ms: BTreeMap<(usize, usize), f64>,
}

/// A plan: the members of the group each function roots (itself alone: no group).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub groups: Vec<Set>,
    /// Gateway hops removed per unit of outside traffic.
    pub removed: f64,
}

impl Plan {
    /// Groups with members besides their root, by root.
    pub fn merged(&self) -> Vec<(usize, Set)> {
        (0..self.groups.len())
            .filter(|&r| self.groups[r] != bit(r))
            .map(|r| (r, self.groups[r]))
            .collect()
    }

    pub fn members(&self) -> u32 {
        self.merged().iter().map(|(_, s)| s.count_ones() - 1).sum()
    }
}

pub fn bit(i: usize) -> Set {
    1 << i
}

pub fn members(set: Set) -> impl Iterator<Item = usize> {
    (0..Set::BITS as usize).filter(move |&i| set & bit(i) != 0)
}

impl Model {
    pub fn n(&self) -> usize {
        self.names.len()
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Orders the functions callers first; calls that close a cycle are
    /// dropped from the model (and listed), since a merged cycle has no root.
    pub fn finish(&mut self) -> Result<()> {
        let n = self.n();
        if n > Set::BITS as usize {
            bail!(
                "the planner handles at most {} functions; this application has {n}",
                Set::BITS
            );
        }
        // Depth-first from each function in name order; an edge to a function
        // on the current path closes a cycle.
        let mut state = vec![0u8; n]; // 0 new, 1 on path, 2 done
        let mut post = Vec::with_capacity(n);
        let mut cut = Vec::new();
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack = vec![(start, 0usize)];
            state[start] = 1;
            while let Some((u, k)) = stack.pop() {
                if k < self.calls[u].len() {
                    stack.push((u, k + 1));
                    let v = self.calls[u][k].0;
                    match state[v] {
                        0 => {
                            state[v] = 1;
                            stack.push((v, 0));
                        }
                        1 => cut.push((u, v)),
                        _ => {}
                    }
                } else {
                    state[u] = 2;
                    post.push(u);
                }
            }
        }
        for &(u, v) in &cut {
            self.calls[u].retain(|(w, _)| *w != v);
        }
        self.cycles = cut;
        post.reverse();
        self.order = post;
        Ok(())
    }

    /// Whether a group may hold `set`: no left-out member, no two apart,
    /// memory within the limit.
    pub fn feasible(&self, set: Set) -> bool {
        if members(set).any(|i| self.left_out[i].is_some()) {
            return false;
        }
        if self
            .apart
            .keys()
            .any(|&(a, b)| set & bit(a) != 0 && set & bit(b) != 0)
        {
            return false;
        }
        match self.max_memory {
            Some(max) => {
                let total: f64 = members(set).map(|i| self.memory[i].unwrap_or(0.0)).sum();
                total <= max * (1.0 + 1e-12)
            }
            None => true,
        }
    }

    /// What every function's own deployment reserves (each stays deployed).
    pub fn base_memory(&self) -> f64 {
        self.memory.iter().map(|m| m.unwrap_or(0.0)).sum()
    }

    /// What the group `set` of `root` adds: its merged pod reserves its
    /// members' sum (as `fmerge build` writes it) in place of the root's.
    pub fn copies_memory(&self, root: usize, set: Set) -> f64 {
        members(set)
            .filter(|&i| i != root)
            .map(|i| self.memory[i].unwrap_or(0.0))
            .sum()
    }

    /// The memory `groups` leave for more copies under
    /// [`max_total_memory`](Self::max_total_memory) (infinite without it).
    pub fn memory_left(&self, groups: &[Set]) -> f64 {
        let Some(max) = self.max_total_memory else {
            return f64::INFINITY;
        };
        let copies: f64 = (0..groups.len())
            .map(|r| self.copies_memory(r, groups[r]))
            .sum();
        max * (1.0 + 1e-12) - self.base_memory() - copies
    }

    /// For one request at `root`'s deployment whose group is `set`: the
    /// in-process calls (hops removed), the calls that leave, per callee, and
    /// the in-process runs, per member.
    pub fn flow(&self, root: usize, set: Set) -> Flow {
        let mut runs = vec![0.0; self.n()];
        runs[root] = 1.0;
        let mut removed = 0.0;
        let mut out: BTreeMap<usize, f64> = BTreeMap::new();
        for &u in &self.order {
            if runs[u] == 0.0 {
                continue;
            }
            for &(v, m) in &self.calls[u] {
                let calls = runs[u] * m;
                if v != root && set & bit(v) != 0 {
                    runs[v] += calls;
                    removed += calls;
                } else {
                    *out.entry(v).or_default() += calls;
                }
            }
        }
        runs[root] = 0.0;
        let inside = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| **r > 0.0)
            .map(|(i, r)| (i, *r))
            .collect();
        (removed, out.into_iter().collect(), inside)
    }

    /// The hops `groups` remove per unit of outside traffic, with the
    /// requests that arrive at each deployment.
    pub fn value(&self, groups: &[Set]) -> (f64, Vec<f64>) {
        let mut arrivals = self.external.clone();
        let mut removed = 0.0;
        for &r in &self.order {
            if arrivals[r] == 0.0 {
                continue;
            }
            let (hops, out, _) = self.flow(r, groups[r]);
            removed += arrivals[r] * hops;
            for (v, calls) in out {
                arrivals[v] += arrivals[r] * calls;
            }
        }
        (removed, arrivals)
    }

    /// How often each function runs per unit of outside traffic (merged or
    /// not, the same): a bound on the requests its deployment can get.
    pub fn invocations(&self) -> Vec<f64> {
        let singletons: Vec<Set> = (0..self.n()).map(bit).collect();
        self.value(&singletons).1
    }

    /// Gateway hops per request at `entry` under `groups`: on the critical
    /// path (the longest chain of calls, as calls made at once overlap) and
    /// in all, before (no groups) and after.
    pub fn hops(&self, entry: usize, groups: &[Set]) -> Hops {
        self.costs(entry, groups, &|_, _| 1.0)
    }

    /// [`hops`](Self::hops) in ms: each gateway call costs its measured
    /// [`hop_ms`](Self::hop_ms), else `default_ms`.
    pub fn latency(&self, entry: usize, groups: &[Set], default_ms: f64) -> Hops {
        self.costs(entry, groups, &|u, v| {
            self.hop_ms.get(&(u, v)).copied().unwrap_or(default_ms)
        })
    }

    fn costs(&self, entry: usize, groups: &[Set], cost: &dyn Fn(usize, usize) -> f64) -> Hops {
        let alone: Vec<Set> = (0..self.n()).map(bit).collect();
        let (critical_before, total_before) =
            self.walk(entry, entry, &alone, cost, &mut BTreeMap::new());
        let (critical_after, total_after) =
            self.walk(entry, entry, groups, cost, &mut BTreeMap::new());
        Hops {
            critical_before,
            critical_after,
            total_before,
            total_after,
        }
    }

    /// (critical-path cost, expected cost) below `u`, running in the
    /// deployment rooted at `root`, a gateway call `u → v` costing `cost(u, v)`.
    fn walk(
        &self,
        u: usize,
        root: usize,
        groups: &[Set],
        cost: &dyn Fn(usize, usize) -> f64,
        memo: &mut BTreeMap<(usize, usize), (f64, f64)>,
    ) -> (f64, f64) {
        if let Some(&known) = memo.get(&(u, root)) {
            return known;
        }
        let (mut critical, mut total) = (0.0f64, 0.0);
        for &(v, m) in &self.calls[u] {
            let inside = v != root && groups[root] & bit(v) != 0;
            let (next, hop) = if inside { (root, 0.0) } else { (v, cost(u, v)) };
            let (c, t) = self.walk(v, next, groups, cost, memo);
            if m > 0.0 {
                critical = critical.max(hop + c);
            }
            total += m * (hop + t);
        }
        memo.insert((u, root), (critical, total));
        (critical, total)
    }

    /// Functions reachable from `root` (itself included).
    pub fn reach(&self, root: usize) -> Set {
        let mut seen = bit(root);
        let mut todo = vec![root];
        while let Some(u) = todo.pop() {
            for &(v, _) in &self.calls[u] {
                if seen & bit(v) == 0 {
                    seen |= bit(v);
                    todo.push(v);
                }
            }
        }
        seen
    }

    /// The names in a set, in model order.
    pub fn names_of(&self, set: Set) -> Vec<String> {
        members(set).map(|i| self.names[i].clone()).collect()
    }

    /// Entry points: functions with outside traffic.
    pub fn entries(&self) -> Vec<usize> {
        (0..self.n()).filter(|&i| self.external[i] > 0.0).collect()
    }

    /// Functions a request never reaches.
    pub fn unreached(&self) -> BTreeSet<usize> {
        let inv = self.invocations();
        (0..self.n()).filter(|&i| inv[i] == 0.0).collect()
    }
}

/// What one request at a group's root does: (hops removed, calls that
/// leave per callee, in-process runs per member).
pub type Flow = (f64, Vec<(usize, f64)>, Vec<(usize, f64)>);

/// Gateway hops per request at one entry point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hops {
    pub critical_before: f64,
    pub critical_after: f64,
    pub total_before: f64,
    pub total_after: f64,
}
