//! The planner's model of an application: functions, calls per invocation,
//! requests from outside, and what may share a binary; and the value of a
//! set of groups, which both searches (the `search` module, above this one)
//! maximize.
//!
//! What the searches maximize is the team's [`Objective`]
//! (`model/objective.rs`): the expected latency removed (the default),
//! gateway calls removed, the least memory copies reserve while a minimum
//! gain holds, or the least the cluster reserves (`model/cost.rs`), under
//! the team's [`Constraints`].
//!
//! A group is its caller, the function whose `main` runs (its merged binary
//! replaces the caller's deployment), and members reached from it; an
//! `invoke` made in that process of a member runs in-process (the group's
//! caller too, called back: the runtime serves its own function
//! in-process), any other goes through the gateway to that function's
//! deployment (its own group, if it is one's caller). A callee
//! may be a member of several groups: it stays deployed for the rest. Each
//! in-process call is a gateway hop removed. Requests that arrive at a
//! deployment are counted in topological order, so a group's value depends
//! on the traffic its callers' groups still send over the gateway.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::set::Set;

/// Bytes in a MiB, for memory as people read it.
pub const MIB: f64 = 1048576.0;

/// A resource the deployments reserve, as `fmerge build` adds it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Bytes of `limits.memory`.
    Memory,
    /// Cores of `limits.cpu`.
    Cpu,
}

impl Resource {
    /// Its place in per-resource arrays (`[memory, cpu]`).
    pub fn index(self) -> usize {
        match self {
            Resource::Memory => 0,
            Resource::Cpu => 1,
        }
    }

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
    pub calls: Vec<Vec<CallsTo>>,
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
    pub apart: BTreeMap<Apart, String>,
    /// What the conflicts let functions share (the graph's
    /// `--allow-shared-static`): every group's file says it to `fmerge build`.
    pub allow_shared_static: Vec<String>,
    /// The objective and constraints the plan is made under.
    pub constraints: Constraints,
    /// Declared entry points (the stack's `com.openfaas.fmerge.entry`
    /// label, or a [`connector`](Self::connector)'s topic): their own
    /// deployment stays whatever calls them.
    pub declared: Vec<bool>,
    /// The topic an OpenFaaS connector invokes the function on (the
    /// stack's `topic` annotation), if any: declared by it, not by the
    /// label, so it is no sign the stack labels its entry points
    /// ([`Model::proof`]).
    pub connector: Vec<Option<String>>,
    /// Whether the function calls a name computed at run time (a callee
    /// the code does not name).
    pub computed: Vec<bool>,
    /// Measured usage of one pod of the function's own deployment, when
    /// the traffic has it: resident memory (bytes) and cpu (cores), as
    /// [`Resource::index`] orders them.
    pub usage: Vec<[Option<f64>; 2]>,
    /// Functions in topological order (callers first).
    pub order: Vec<usize>,
    /// The call that closes each cycle, met walking from the entry points:
    /// a call back to a function the request already runs in, moved from
    /// `calls` to [`back`](Self::back).
    pub cycles: Vec<CallEdge>,
    /// Calls per invocation per call path: for a call `from → to` the call
    /// log's parent requests show, `to`'s calls per invocation when `from`
    /// called it (a callee missing from the list: none on that path); the
    /// critical paths ([`Model::latency`]) and a group's flow
    /// ([`Model::flow`]) follow them. Elsewhere `calls`, each caller's
    /// average over all its runs.
    pub via: BTreeMap<CallEdge, Vec<CallsTo>>,
    /// The call log the rates per call path come from, if any.
    pub paths: Option<String>,
    /// Calls back ([`cycles`](Self::cycles)), per invocation of the caller. A
    /// run they make is taken to make no call of its own (the walk that reached
    /// the callee first made them; its calls per invocation count those runs
    /// alone, [`finish`](Self::finish)); in-process when the callee is a member
    /// of the caller's merged process, the group's caller included (the runtime
    /// serves the function its binary serves in-process too).
    pub back: Vec<Vec<CallsTo>>,
    /// Calls seen in traffic, in all, per call where measured: a cycle is
    /// cut at its lightest call.
    pub seen: BTreeMap<CallEdge, f64>,
    /// Measured cost of one gateway call, ms, per call where known.
    pub measured_hop_ms: BTreeMap<CallEdge, f64>,
    /// Each function's calls in the order its code makes them
    /// ([`Round`]s); after [`finish`](Self::finish), every callee of
    /// `calls` is in them.
    pub rounds: Vec<Vec<Round>>,
    /// Calls whose order the code does not show: [`finish`](Self::finish)
    /// takes them one after another.
    pub unplaced: Vec<CallEdge>,
    /// Which part of the stack the plan covers, when not all of it
    /// (`--filter`, `--regex`): the rest may call any function of it, so
    /// no deployment is dropped ([`Model::proof`]).
    pub partial: Option<String>,
    /// Per function: whether the traffic names the caller of every request
    /// it got over the window (a scrape that covers it; in an access log,
    /// which names no caller, only a function that got none). A function
    /// without it is never dropped ([`Model::proof`]).
    pub watched: Vec<bool>,
    /// Where the traffic comes from, for the evidence of each drop.
    pub traffic: Option<String>,
    /// Its pods measured (its replicas), when the scrape has them: a
    /// function's cpu is its pods' work, which a merged pod takes on.
    pub pods: Vec<Option<f64>>,
    /// Why a function's usage sizes nothing though the scrape has some
    /// (of-watchdog's process, not the function's; idle in the window):
    /// a merged pod takes its stack figures instead, and says why.
    pub unmeasured: Vec<Option<String>>,
    /// Whether a function's memory comes from one scrape (one instant,
    /// not the window's peak).
    pub instant: Vec<bool>,
    /// Measured serving time per run, ms, its calls included (the
    /// runtime's `fmerge_handler_duration_seconds`, else its
    /// `http_request_duration_seconds`, over its requests), when the
    /// traffic has it.
    pub serve_ms: Vec<Option<f64>>,
    /// Per function: whether [`serve_ms`](Self::serve_ms) is its handler's
    /// time alone, which its cpu per request (serving over HTTP included)
    /// does not bound.
    pub handler_timed: Vec<bool>,
    /// Measured cpu per run, ms (its pods' `process_cpu_seconds_total`
    /// over the window's requests), when the traffic has it.
    pub cpu_ms: Vec<Option<f64>>,
    /// Each function's own time per run, ms, its calls left out, set by
    /// [`finish`](Self::finish) from the two above (`model/service.rs`):
    /// on every critical path, in-process or not; empty when neither is
    /// measured.
    pub own_ms: Vec<f64>,
    /// The cpu part of [`own_ms`](Self::own_ms), ms as it ran on the
    /// function's own pod: in-process, it queues on its caller's task.
    pub busy_ms: Vec<f64>,
    /// Each function's critical path with every call free, ms (its own
    /// time and its callees' along its rounds, each caller's average
    /// rates): what no plan takes off a request at it.
    pub floor_ms: Vec<f64>,
}

/// Function `from`'s calls of function `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CallEdge {
    pub from: usize,
    pub to: usize,
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

/// A plan: the members of each function's group, the function its caller
/// (itself alone: no group).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub groups: Vec<Set>,
    /// Gateway hops removed per request of the application.
    pub removed: f64,
    /// Expected latency removed per request of the application, ms
    /// ([`Model::gain_ms`]).
    pub gain_ms: f64,
}

/// A plan's group: its caller, and its members (the caller among them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallerGroup {
    pub caller: usize,
    pub set: Set,
}

impl Plan {
    /// Groups with members besides their caller, by caller.
    pub fn merged(&self) -> Vec<CallerGroup> {
        (0..self.groups.len())
            .filter(|&r| self.groups[r] != bit(r))
            .map(|r| CallerGroup {
                caller: r,
                set: self.groups[r],
            })
            .collect()
    }

    /// How many functions are merged into another's deployment.
    pub fn merged_count(&self) -> u32 {
        self.merged().iter().map(|g| g.set.count_ones() - 1).sum()
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
            .any(|p| set.contains(p.a) && set.contains(p.b))
        {
            return false;
        }
        match self.constraints.max_memory {
            Some(max) => {
                let total: f64 = members(set).map(|i| self.memory[i].unwrap_or(0.0)).sum();
                total <= max * (1.0 + 1e-12)
            }
            None => true,
        }
    }

    /// What every function's own deployment reserves of `resource`'s
    /// limit, each deployed alone.
    pub fn base(&self, resource: Resource) -> f64 {
        (0..self.n())
            .map(|i| self.limit(resource, i).unwrap_or(0.0))
            .sum()
    }

    /// What the copies of the group `set` of `caller` reserve of `resource`'s
    /// limit: its members' own limits but the caller's (what the memory
    /// objective minimizes).
    pub fn copies(&self, resource: Resource, caller: usize, set: Set) -> f64 {
        members(set)
            .filter(|&i| i != caller)
            .map(|i| self.limit(resource, i).unwrap_or(0.0))
            .sum()
    }

    /// Whether `plan` removes what `--min-gain-ms` and
    /// `--min-calls-removed` ask.
    pub fn meets(&self, plan: &Plan) -> bool {
        let c = &self.constraints;
        c.min_gain_ms.is_none_or(|min| plan.gain_ms >= min - 1e-9)
            && c.min_calls_removed
                .is_none_or(|min| plan.removed >= min - 1e-9)
    }

    /// How often each function runs per request of the application (merged or
    /// not, the same): a bound on the requests its deployment can get.
    pub fn invocations(&self) -> Vec<f64> {
        let singletons: Vec<Set> = (0..self.n()).map(bit).collect();
        self.value(&singletons).arrivals
    }

    /// Functions reachable from `from` (itself included).
    pub fn reach(&self, from: usize) -> Set {
        self.reach_within(from, Set::ALL)
    }

    /// Functions of `within` reachable from `from` through functions of
    /// `within` (`from` included), calls back included.
    pub fn reach_within(&self, from: usize, within: Set) -> Set {
        let mut seen = bit(from);
        let mut todo = vec![from];
        while let Some(u) = todo.pop() {
            for v in self.callees(u) {
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

    /// Functions a request never reaches (not even by a call back).
    pub fn unreached(&self) -> BTreeSet<usize> {
        let singletons: Vec<Set> = (0..self.n()).map(bit).collect();
        let flow = self.value(&singletons);
        (0..self.n())
            .filter(|&i| flow.arrivals[i] == 0.0 && flow.back[i] == 0.0)
            .collect()
    }
}

/// What a plan's groups do, per request of the application.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanFlow {
    /// Gateway hops removed.
    pub removed: f64,
    /// Requests that arrive at each deployment and make its calls.
    pub arrivals: Vec<f64>,
    /// Requests that arrive at each deployment by a call back (which make
    /// none: [`Model::back`]).
    pub back: Vec<f64>,
}

/// What one request at a group's caller does.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Calls made in-process: gateway hops removed.
    pub removed: f64,
    /// Calls that leave the process, per callee.
    pub out: Vec<CallsTo>,
    /// Calls back that leave the process, per callee (they make no call
    /// where they arrive).
    pub back: Vec<CallsTo>,
    /// Runs in-process, per member but the caller.
    pub inside: Vec<RunsOf>,
}

/// How many calls go to `callee` (per invocation of the caller, or per
/// request at a group's caller).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallsTo {
    pub callee: usize,
    pub calls: f64,
}

/// How many times `member` runs in-process, per request at its group's caller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunsOf {
    pub member: usize,
    pub runs: f64,
}

/// The caller of a request from outside, or of one whose caller the model
/// does not follow: its calls are the average ([`Model::rate`]).
pub const NO_CALLER: usize = usize::MAX;

mod constraints;
mod cost;
mod flow;
mod latency;
mod objective;
mod order;
mod service;
pub use constraints::{Apart, Constraints, DEFAULT_HOP_MS};
pub use cost::{Figure, HEADROOM, Kept, Origin, Pod, Reserved, Unproven};
pub use latency::Hops;
pub use objective::{Figures, GroupWorth, Objective};
