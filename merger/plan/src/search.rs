//! The searches over [`Model`]: exact (branch and bound over each caller's
//! possible groups, callers first), the [`heuristic`] (greedy, then local
//! search), and [`within`], which runs both under a deadline and keeps the
//! best plan found. All pursue the model's
//! [`Objective`](crate::model::Objective) under its caps and
//! minimums ([`score`]); at an equal objective, fewer merged members
//! (smaller binaries) win.

use crate::model::{CallsTo, Figures, Model, Plan, Reserved, Resource, RunsOf, Set, bit, members};

mod candidates;
mod cheaper;
mod heuristic;
mod improve;
mod limits;
mod room;
mod score;
mod within;

pub use candidates::candidates;
use candidates::candidates_within;
pub use cheaper::cheaper;
pub use heuristic::{greedy, heuristic, heuristic_within};
pub use improve::improve;
pub use limits::{DEFAULT_TIME_LIMIT, Limits};
use score::finish;
pub use score::score;
pub use within::{Found, at_bound, within};

/// Which search runs (`--search`, whose values are its variants' names
/// and whose help their first lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Method {
    /// Exact unless it passes its limits: the best plan found within the
    /// time limit, proven optimal when the exact search finishes in it.
    #[default]
    Auto,
    /// The exact search.
    Exact,
    /// The heuristic.
    Heuristic,
}

const EPS: f64 = 1e-9;

/// The room [`room::Room::most`] is given where none can be told: with
/// measured usage a merged pod's limits take less than each copy's own.
const ROOMY: [f64; 2] = [f64::INFINITY; 2];

/// One candidate group of a caller with what one request there does.
struct Candidate {
    set: Set,
    /// Its members' memory beyond the caller's ([`Model::copies`]).
    copies: f64,
    /// What its deployment reserves when it stays: requests and limits,
    /// memory and cpu ([`Model::pod`]).
    pod: [f64; 4],
    hops: f64,
    out: Vec<CallsTo>,
    inside: Vec<RunsOf>,
}

/// The exact plan, or `None` when the search passed its limits.
pub fn exact(model: &Model, limits: Limits) -> Option<Plan> {
    let run = branch_and_bound(model, limits, None);
    run.proven.then_some(run.plan).flatten()
}

/// What the branch and bound found: the best plan better than the
/// incumbent it started from (`None`: none better, or it could not start),
/// and whether it finished (so that plan, or the incumbent, is optimal).
pub struct Bounded {
    pub plan: Option<Plan>,
    pub proven: bool,
    /// Callers with more possible groups than [`Limits::candidates`]: each
    /// was searched with no group or the incumbent's (the heuristic's) only,
    /// so a search that finished proves the plan optimal for every other
    /// caller, not for these.
    pub capped: Vec<usize>,
}

/// The branch and bound, started from `incumbent` (a plan that meets the
/// caps and minimums: only better ones are looked for), stopped at
/// `limits`.
///
/// Groups are decided callers first, so the requests arriving at a group's
/// caller are final when it is decided. The bound: each run of a function not
/// yet decided is either in-process somewhere or arrives over the gateway, so
/// the hops still to be removed are at most its runs not yet accounted for
/// (neither already in-process in a decided group, nor already sent to it).
pub fn branch_and_bound(model: &Model, limits: Limits, incumbent: Option<&Plan>) -> Bounded {
    let gave_up = Bounded {
        plan: None,
        proven: false,
        capped: Vec::new(),
    };
    let mut capped = Vec::new();
    let n = model.n();
    let runs = model.invocations();
    let mut options: Vec<Vec<Candidate>> = Vec::with_capacity(n);
    for (r, &run) in runs.iter().enumerate() {
        if limits.late() {
            return gave_up;
        }
        // A group at a caller no request reaches removes nothing, yet under
        // the cost objective it may let its members' own deployments go.
        let sets = if run > 0.0 || model.constraints.objective.needs_cost() {
            match candidates_within(model, r, &limits) {
                Some(sets) => sets,
                None if limits.late() => return gave_up,
                // Past the cap: this caller alone keeps the incumbent's group.
                None => {
                    capped.push(r);
                    let mut sets = vec![bit(r)];
                    if let Some(p) = incumbent.filter(|p| p.groups[r] != bit(r)) {
                        sets.push(p.groups[r]);
                    }
                    sets
                }
            }
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
        /// The callers from `order[k]` on, as a set, per `k`.
        open: Vec<Set>,
        choice: Vec<Set>,
        /// (objective, merged members, groups) of the best plan so far.
        best: Option<(f64, u32, Vec<Set>)>,
        nodes: u64,
        limits: Limits,
        room: room::Room,
        /// What the application reserves unmerged ([`Model::cost`]).
        unmerged: Reserved,
        /// Functions whose deployment stays whatever is merged
        /// ([`Model::stays`]).
        sure: Vec<bool>,
        /// No usage measured: a merged pod's limits are its members' sums.
        sums: bool,
        /// The calls back, per request of the application, in calls and in
        /// ms: one to a group's caller needs no copy, so the bounds that count
        /// copies ([`room`]) take them all as removable on top.
        back: [f64; 2],
    }
    /// What the callers decided so far did.
    #[derive(Clone, Copy)]
    struct Done {
        removed: f64,
        extra: u32,
        /// Memory copies reserve.
        copies: f64,
        /// What deployments sure to stay reserve: the callers decided with
        /// requests arriving (requests and limits, memory and cpu, and a
        /// pod each), and the limits and pod of each undecided function
        /// that stays whatever is merged (a merged pod's limits are never
        /// below its caller's own). A bound from below on the plan's.
        floor: [f64; 5],
        /// Functions copied into a group.
        copied: Set,
        /// Their worth in latency ([`room::Room::latency`]).
        worth: f64,
    }
    impl Search<'_> {
        /// The fewest copies still to be made for a plan below this node
        /// to remove `latency` in all (0 for other objectives): each new
        /// copy removes at most its function's worth ([`room`]), so a plan
        /// only as good as the best so far must hold this many more
        /// members to win by its size.
        fn fewest(&self, k: usize, done: &Done, latency: f64) -> u32 {
            let model = self.model;
            if !model.constraints.objective.needs_gain() || self.back[0] > 0.0 {
                return 0;
            }
            let mut worths: Vec<f64> = model.order[k..]
                .iter()
                .filter(|&&j| !done.copied.contains(j))
                .flat_map(|&j| self.room.latency_parts(j, self.open[k]))
                .collect();
            worths.sort_by(|a, b| b.total_cmp(a));
            let (mut sum, mut count) = (done.worth, 0);
            for w in worths {
                if sum >= latency {
                    break;
                }
                sum += w;
                count += 1;
            }
            count
        }

        /// `arrivals` and `inside`: runs of each function already sent over
        /// the gateway / already in-process, by the callers decided so far.
        fn go(&mut self, k: usize, arrivals: &[f64], inside: &[f64], done: Done) -> bool {
            self.nodes += 1;
            if self.nodes > self.limits.nodes
                || (self.nodes.is_multiple_of(1024) && self.limits.late())
            {
                return false;
            }
            let model = self.model;
            let open = self.open[k];
            // Upper bounds of what the plans below this node remove: the
            // runs not yet accounted for, each in-process at best; the
            // latency with every call below an open caller in-process.
            // Under a total cap, no more than the room left buys
            // ([`room`]).
            let still = model.order[k..].iter().map(|&j| {
                let runs = (self.runs[j] - arrivals[j] - inside[j]).max(0.0);
                (j, runs)
            });
            // The room the caps leave above what is sure to stay; each copy
            // that removes a call adds its limits to a pod that stays.
            let left = if self.sums {
                let caps = [
                    model.constraints.max_total_memory,
                    model.constraints.max_total_cpu,
                ];
                [0, 1].map(|k| caps[k].map_or(f64::INFINITY, |c| c - done.floor[2 + k]))
            } else {
                ROOMY
            };
            let removed_bound = done.removed + self.room.most(still, left) + self.back[0];
            let c = &model.constraints;
            let gain_bound = (c.objective.needs_gain() || c.min_gain_ms.is_some()).then(|| {
                let paths = model.gain_bound(&self.choice, open, &self.before);
                if !self.room.capped() {
                    return paths;
                }
                let uncopied = model.order[k..]
                    .iter()
                    .filter(|&&j| !done.copied.contains(j))
                    .flat_map(|&j| self.room.latency_parts(j, open).map(move |w| (j, w)));
                paths.min(done.worth + self.room.most(uncopied, left) + self.back[1])
            });
            if c.min_calls_removed
                .is_some_and(|min| removed_bound < min - EPS)
                || c.min_gain_ms
                    .zip(gain_bound)
                    .is_some_and(|(min, bound)| bound < min - EPS)
            {
                return true;
            }
            // Every group decided: the plan's own cost and caps.
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
                && (bound < best - EPS
                    || (bound <= best + EPS
                        && done.extra + self.fewest(k, &done, best - EPS) >= *members))
            {
                return true;
            }
            if leaf {
                // Every group decided: the bounds are the plan's own figures.
                self.best = Some((bound, done.extra, self.choice.clone()));
                return true;
            }
            let r = model.order[k];
            let a = arrivals[r];
            let options = &self.options[r];
            let alone = options
                .iter()
                .position(|o| o.set == bit(r))
                .expect("the caller alone is a candidate");
            // Nobody arrives: no group pays off here, but for what it lets
            // go (the cost objective) at a deployment that stays anyway.
            let tried: Vec<usize> = if a == 0.0 && !(c.objective.needs_cost() && self.sure[r]) {
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
                for &CallsTo { callee: v, calls } in &o.out {
                    next[v] += a * calls;
                }
                let mut within = inside.to_vec();
                for &RunsOf { member: v, runs } in &o.inside {
                    within[v] += a * runs;
                }
                self.choice[r] = o.set;
                let copies = o.set & !bit(r);
                let worth: f64 = members(copies & !done.copied)
                    .map(|j| self.room.latency(j))
                    .sum();
                let now = Done {
                    copied: done.copied | copies,
                    worth: done.worth + worth,
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
    let sure: Vec<bool> = (0..n).map(|i| model.stays(i)).collect();
    let mut floor = [0.0; 5];
    for i in (0..n).filter(|&i| sure[i]) {
        floor[2] += model.limit(Resource::Memory, i).unwrap_or(0.0);
        floor[3] += model.limit(Resource::Cpu, i).unwrap_or(0.0);
        floor[4] += 1.0;
    }
    let requests: f64 = model.external.iter().sum();
    let mut back = [0.0; 2];
    for (u, &run) in runs.iter().enumerate() {
        for c in model.back_of(u) {
            back[0] += run * c.calls;
            back[1] +=
                run * c.calls * model.hop_cost(u, c.callee) / requests.max(f64::MIN_POSITIVE);
        }
    }
    let mut open = vec![Set::EMPTY; n + 1];
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
        best: incumbent
            .and_then(|p| score(model, &p.groups).map(|s| (s, p.merged_count(), p.groups.clone()))),
        nodes: 0,
        limits,
        room: room::Room::new(model, &runs),
        unmerged: model.reserved(&alone),
        sure,
        sums: model.usage.iter().flatten().all(Option::is_none),
        back,
    };
    let seeded = search.best.as_ref().map(|(_, _, groups)| groups.clone());
    let start = Done {
        removed: 0.0,
        extra: 0,
        copies: 0.0,
        floor,
        copied: Set::EMPTY,
        worth: 0.0,
    };
    let finished = search.go(0, &model.external, &vec![0.0; n], start);
    let proven = finished && capped.is_empty();
    let capped = if finished { capped } else { Vec::new() };
    let found = search.best.map(|(_, _, groups)| groups);
    if found.is_some() && found == seeded {
        return Bounded {
            plan: None,
            proven,
            capped,
        };
    }
    // Finished, and no plan meets the minimums: the plan of no groups,
    // which `fmerge::plan::solve` refuses with the reason.
    let groups = match found {
        Some(groups) => groups,
        None if finished => alone,
        None => return gave_up,
    };
    Bounded {
        plan: Some(finish(model, groups)),
        proven,
        capped,
    }
}
