//! What a plan is chosen for ([`Objective`]) and everything that differs
//! by it, in one place: its name and words, the figure the searches compare
//! plans by ([`Objective::score`]), how the greedy search weighs a larger
//! group ([`Objective::worth`]), which member a trim may drop
//! ([`Objective::keeps`]), and why a reachable callee stays out
//! ([`Objective::why_not`]). The searches and the report ask these methods
//! and never match on the objective themselves.

use super::{Model, Set};

/// What the greedy search compares groups by ([`Objective::worth`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupWorth {
    /// The objective's figure.
    pub figure: f64,
    /// What decides between groups whose figures are equal.
    pub tie_break: f64,
}

/// What a plan is chosen for (`--objective`, whose values are the
/// variants' names, in this order, and whose help their doc lines; the
/// figure each compares is [`Objective::score`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Objective {
    /// The most expected latency removed: each entry point's critical path,
    /// every gateway call at its cost, weighted by the entry's requests.
    #[default]
    Latency,
    /// The most gateway calls removed per request (the gateway's and the
    /// callees' CPU, and throughput).
    Calls,
    /// The least memory reserved by copies, among the plans that meet
    /// `--min-gain-ms` and `--min-calls-removed`.
    Memory,
    /// The least the cluster reserves: memory and CPU requests and pods,
    /// after the deployments no longer needed are dropped.
    Cost,
}

/// A plan's figures, as the objectives compare them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    /// Gateway calls removed per request of the application.
    pub removed: f64,
    /// Expected latency removed per request of the application, ms.
    pub gain_ms: f64,
    /// Memory (bytes of limits) the copies in merged pods reserve.
    pub copies: f64,
    /// What the cluster reserves, weighed ([`Model::cost`](super::Model::cost)).
    pub cost: f64,
}

impl Objective {
    /// The name `--objective` takes (its `ValueEnum` name, the one list of
    /// them), which the report and plan.json say.
    pub fn name(self) -> String {
        let value = clap::ValueEnum::to_possible_value(&self).expect("no objective is skipped");
        value.get_name().to_string()
    }

    /// What a plan chosen for it is, in words: the report's sentence, a
    /// fact of its own beside `--help`'s line for the value.
    pub fn says(self) -> &'static str {
        match self {
            Objective::Latency => {
                "the merge groups that remove the most expected latency (critical paths, weighted by requests)"
            }
            Objective::Calls => "the merge groups that remove the most gateway calls",
            Objective::Memory => {
                "the merge groups that reserve the least memory for the gain asked (--min-gain-ms, --min-calls-removed)"
            }
            Objective::Cost => {
                "the merge groups after which the cluster reserves the least (memory and cpu requests, pods; each as a share of the unmerged application's, weighed equally)"
            }
        }
    }

    /// Whether the searches need the expected latency to compare plans by
    /// this objective (it costs a walk of every critical path).
    pub fn needs_gain(self) -> bool {
        self == Objective::Latency
    }

    /// Whether plans are compared by what the cluster reserves.
    pub fn needs_cost(self) -> bool {
        self == Objective::Cost
    }

    /// Whether a plan for it must be asked a gain (`--min-gain-ms`,
    /// `--min-calls-removed`): without one, its best plan is no merge.
    pub fn needs_minimum(self) -> bool {
        self == Objective::Memory
    }

    /// The figure the searches maximize: of the plan's own figures, or of
    /// bounds on what plans below a search node reach (an upper bound of
    /// `removed` and `gain_ms`, a lower bound of `copies` and `cost`).
    pub fn score(self, figures: &Figures) -> f64 {
        match self {
            Objective::Latency => figures.gain_ms,
            Objective::Calls => figures.removed,
            Objective::Memory => -figures.copies,
            Objective::Cost => -figures.cost,
        }
    }

    /// What the greedy search compares a group of `caller` by, objective's
    /// figure first, then a tie-break: `hops` are the hops the group removes
    /// per request at its caller, `groups` the plan with the group in place.
    pub fn worth(self, model: &Model, groups: &[Set], hops: f64) -> GroupWorth {
        let (figure, tie_break) = match self {
            Objective::Calls => (hops, 0.0),
            // The memory objective grows groups for latency; the trim then
            // drops the copies the gain asked for does not need.
            Objective::Latency | Objective::Memory => (model.gain_ms(groups), hops),
            Objective::Cost => (-model.cost(groups), model.gain_ms(groups)),
        };
        GroupWorth { figure, tie_break }
    }

    /// Whether a trim may drop a member: the plan after (`now`) serves this
    /// objective no worse than before (`was`).
    pub fn keeps(self, was: &Figures, now: &Figures) -> bool {
        const EPS: f64 = 1e-9;
        match self {
            Objective::Calls => now.removed >= was.removed - EPS,
            Objective::Latency => now.gain_ms >= was.gain_ms - EPS,
            Objective::Memory => true,
            Objective::Cost => now.cost <= was.cost + EPS,
        }
    }

    /// Why a callee a group could reach is not in it, when no rule of the
    /// model forbids it: the objective did not want it.
    pub fn why_not(self) -> &'static str {
        match self {
            Objective::Calls => {
                "merging it here removes fewer hops in all (its own group, or another caller's, gets its requests)"
            }
            Objective::Latency => {
                "merging it here shortens no critical path more (it runs beside a longer call, or another group gets its requests), or a total cap is reached"
            }
            Objective::Memory => {
                "the gain asked for is reached without its copy, or a total cap is reached"
            }
            Objective::Cost => {
                "merging it here makes the cluster reserve no less (its own deployment stays, or its copy costs more than the deployment it saves), or a total cap is reached"
            }
        }
    }
}

impl Model {
    /// The most any plan can score by the objective, known without a
    /// search: every critical path down to its functions' own time, every
    /// call free (latency: 0 where none is measured), every call
    /// in-process (calls), no copy (memory), a pod for each deployment
    /// that stays whatever is merged, at the least it can request
    /// ([`Model::cost_floor`]); a plan that reaches it is optimal.
    pub fn trivial_bound(&self) -> f64 {
        match self.constraints.objective {
            Objective::Latency => {
                let before = self.critical_alone();
                let floor = |i: usize| self.floor_ms.get(i).copied().unwrap_or(0.0);
                (0..self.n())
                    .map(|i| self.external[i] * (before[i] - floor(i)))
                    .sum()
            }
            Objective::Calls => {
                let runs = self.invocations();
                (0..self.n())
                    .map(|u| {
                        let calls = self.calls[u].iter().chain(self.back_of(u));
                        runs[u] * calls.map(|c| c.calls).sum::<f64>()
                    })
                    .sum()
            }
            Objective::Memory => 0.0,
            Objective::Cost => -self.cost_floor(),
        }
    }
}
