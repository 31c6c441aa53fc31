//! The planner's model of an application: functions, calls per invocation,
//! requests from outside, and what may share a binary; and the value of a
//! set of groups, which both searches ([`crate::search`]) maximize.
//!
//! What the searches maximize is the team's [`Objective`]: the expected
//! latency removed (the default), gateway calls removed, or the least memory
//! copies reserve while a minimum gain holds.
//!
//! A group is a root (its merged binary replaces the root's deployment) and
//! members reached from it; an `invoke` made in that process of a member
//! other than the root runs in-process, any other goes through the gateway
//! to that function's deployment (its own group, if it roots one). A callee
//! may be a member of several groups: it stays deployed for the rest. Each
//! in-process call is a gateway hop removed. Requests that arrive at a
//! deployment are counted in topological order, so a group's value depends
//! on the traffic its callers' groups still send over the gateway.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::set::Set;

/// Bytes in a MiB, for memory as people read it.
pub const MIB: f64 = 1048576.0;

/// What a plan is chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Objective {
    /// The most expected latency removed: each entry point's critical path,
    /// every gateway call at its cost, weighted by the entry's requests.
    #[default]
    Latency,
    /// The most gateway calls removed per request (the gateway's and the
    /// callees' CPU, and throughput).
    Calls,
    /// The least memory reserved by copies, among the plans that meet
    /// [`Model::min_gain_ms`] and [`Model::min_removed`].
    Memory,
}

impl Objective {
    /// The name `--objective` takes.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Latency => "latency",
            Objective::Calls => "calls",
            Objective::Memory => "memory",
        }
    }

    /// What a plan chosen for it is, in words.
    pub fn says(self) -> &'static str {
        match self {
            Objective::Latency => {
                "the merge groups that remove the most expected latency (critical paths, weighted by requests)"
            }
            Objective::Calls => "the merge groups that remove the most gateway calls",
            Objective::Memory => {
                "the merge groups that reserve the least memory for the gain asked (--min-gain-ms, --min-calls-removed)"
            }
        }
    }
}

/// A resource the deployments reserve, as `fmerge build` adds it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Bytes of `limits.memory`.
    Memory,
    /// Cores of `limits.cpu`.
    Cpu,
}

impl Resource {
    /// An amount as people read it: `512Mi`, `1.50 cores`.
    pub fn show(self, amount: f64) -> String {
        // An empty sum of floats is -0, and a rounding error may be a hair
        // below 0: neither is shown with a sign.
        let unsigned = |x: f64, digits: i32| {
            if (x * 10f64.powi(digits)).round() == 0.0 {
                0.0
            } else {
                x
            }
        };
        match self {
            Resource::Memory => format!("{:.0}Mi", unsigned(amount / MIB, 0)),
            Resource::Cpu => format!("{:.2} cores", unsigned(amount, 2)),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Model {
    pub names: Vec<String>,
    /// Bytes of `limits.memory`, when set.
    pub memory: Vec<Option<f64>>,
    /// Cores of `limits.cpu`, when set.
    pub cpu: Vec<Option<f64>>,
    /// `requests.memory` (bytes) and `requests.cpu` (cores), when set: the
    /// report gives what they add up to.
    pub requests: Vec<[Option<f64>; 2]>,
    /// Callees and calls per invocation of the caller.
    pub calls: Vec<Vec<(usize, f64)>>,
    /// Requests from outside, per function, as its share of the
    /// application's requests (they add up to 1): every figure of the model
    /// is per request of the application.
    pub external: Vec<f64>,
    /// Whether the requests and calls come from measured traffic (else
    /// from the code: one request at each function no other calls, each
    /// call site made once per invocation).
    pub measured: bool,
    /// Entry points the traffic has no figures for, planned from the code
    /// with the measured entry points' mean.
    pub assumed: Vec<usize>,
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
    /// deployment ([`base`](Self::base)) plus every group's
    /// copies ([`copies`](Self::copies)).
    pub max_total_memory: Option<f64>,
    /// Cores of `limits.cpu` the whole application may reserve, counted as
    /// [`max_total_memory`](Self::max_total_memory) counts memory.
    pub max_total_cpu: Option<f64>,
    /// What the search maximizes.
    pub objective: Objective,
    /// The least expected latency a plan must remove, ms per request.
    pub min_gain_ms: Option<f64>,
    /// The fewest gateway calls a plan must remove per request.
    pub min_removed: Option<f64>,
    /// The cost of a gateway call where none is measured, ms.
    pub default_hop_ms: f64,
    /// Functions in topological order (callers first).
    pub order: Vec<usize>,
    /// Calls left out to make the graph acyclic, as `(from, to)`.
    pub cycles: Vec<(usize, usize)>,
    /// Calls seen in traffic, in all, per `(from, to)` where measured: a
    /// cycle is cut at its lightest call.
    pub seen: BTreeMap<(usize, usize), f64>,
    /// Measured cost of one gateway call, ms, per `(from, to)` where known.
    pub hop_ms: BTreeMap<(usize, usize), f64>,
    /// The bench's cost of a call it measured alone, ms, with where it
    /// comes from: second to [`hop_ms`](Self::hop_ms), before
    /// [`default_hop_ms`](Self::default_hop_ms).
    pub bench_hop_ms: BTreeMap<(usize, usize), (f64, String)>,
    /// Each function's calls in the order its code makes them
    /// ([`Round`]s); after [`finish`](Self::finish), every callee of
    /// `calls` is in them.
    pub rounds: Vec<Vec<Round>>,
    /// Calls whose order the code does not show, as `(from, to)`:
    /// [`finish`](Self::finish) takes them one after another.
    pub unplaced: Vec<(usize, usize)>,
}

/// Calls a function makes at once, by callee, one entry per call site; the
/// next round starts when they have all ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Round {
    pub calls: Vec<usize>,
    /// Sites in a loop: made once per iteration, one after another.
    pub looped: Vec<usize>,
}

impl Round {
    /// Each site's callee, and whether it is looped.
    fn sites(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        let once = self.calls.iter().map(|&v| (v, false));
        once.chain(self.looped.iter().map(|&v| (v, true)))
    }
}

/// A plan: the members of the group each function roots (itself alone: no group).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub groups: Vec<Set>,
    /// Gateway hops removed per request of the application.
    pub removed: f64,
    /// Expected latency removed per request of the application, ms
    /// ([`Model::gain_ms`]).
    pub gain_ms: f64,
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
    Set::of(i)
}

pub fn members(set: Set) -> impl Iterator<Item = usize> {
    set.iter()
}

impl Model {
    pub fn n(&self) -> usize {
        self.names.len()
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
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
            .any(|&(a, b)| set.contains(a) && set.contains(b))
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

    fn amounts(&self, resource: Resource) -> &[Option<f64>] {
        match resource {
            Resource::Memory => &self.memory,
            Resource::Cpu => &self.cpu,
        }
    }

    /// What every function's own deployment reserves (each stays deployed).
    pub fn base(&self, resource: Resource) -> f64 {
        self.amounts(resource)
            .iter()
            .map(|m| m.unwrap_or(0.0))
            .sum()
    }

    /// What the group `set` of `root` adds: its merged pod reserves its
    /// members' sum (as `fmerge build` writes it) in place of the root's.
    pub fn copies(&self, resource: Resource, root: usize, set: Set) -> f64 {
        let amounts = self.amounts(resource);
        members(set)
            .filter(|&i| i != root)
            .map(|i| amounts[i].unwrap_or(0.0))
            .sum()
    }

    /// What `groups` leave of `resource` for more copies under its total cap
    /// ([`max_total_memory`](Self::max_total_memory),
    /// [`max_total_cpu`](Self::max_total_cpu); infinite without it).
    pub fn left(&self, resource: Resource, groups: &[Set]) -> f64 {
        let cap = match resource {
            Resource::Memory => self.max_total_memory,
            Resource::Cpu => self.max_total_cpu,
        };
        let Some(max) = cap else {
            return f64::INFINITY;
        };
        let copies: f64 = (0..groups.len())
            .map(|r| self.copies(resource, r, groups[r]))
            .sum();
        max * (1.0 + 1e-12) - self.base(resource) - copies
    }

    /// Whether `plan` removes what [`min_gain_ms`](Self::min_gain_ms) and
    /// [`min_removed`](Self::min_removed) ask.
    pub fn meets(&self, plan: &Plan) -> bool {
        self.min_gain_ms
            .is_none_or(|min| plan.gain_ms >= min - 1e-9)
            && self
                .min_removed
                .is_none_or(|min| plan.removed >= min - 1e-9)
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
                if v != root && set.contains(v) {
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

    /// The hops `groups` remove per request of the application, with the
    /// requests that arrive at each deployment (per request of the
    /// application too).
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

    /// How often each function runs per request of the application (merged or
    /// not, the same): a bound on the requests its deployment can get.
    pub fn invocations(&self) -> Vec<f64> {
        let singletons: Vec<Set> = (0..self.n()).map(bit).collect();
        self.value(&singletons).1
    }

    /// Functions reachable from `root` (itself included).
    pub fn reach(&self, root: usize) -> Set {
        self.reach_within(root, Set::ALL)
    }

    /// Functions of `within` reachable from `root` through functions of
    /// `within` (`root` included).
    pub fn reach_within(&self, root: usize, within: Set) -> Set {
        let mut seen = bit(root);
        let mut todo = vec![root];
        while let Some(u) = todo.pop() {
            for &(v, _) in &self.calls[u] {
                if !seen.contains(v) && within.contains(v) {
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

mod latency;
mod order;
pub use latency::Hops;
