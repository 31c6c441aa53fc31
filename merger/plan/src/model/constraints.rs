//! What the team asks of a plan: the objective and the constraints, each
//! field named as its `fmerge plan` flag is (`--max-total-memory` is
//! `max_total_memory`, `--min-calls-removed` is `min_calls_removed`), held
//! once by the [`Model`](super::Model) that plans under them; and the pairs
//! kept apart.

use super::Objective;

/// The latency of one gateway hop, ms, where neither the graph (a
/// `--metrics` scrape) nor `--hop-ms` gives one: what fmerge's bench
/// measured on its pinned testbed's chain, (unmerged − merged p50) ÷
/// critical-path hops. A constant rather than a bench file built in, so
/// committing a bench run does not change what `fmerge plan` prints; the
/// run it comes from (command, date) is in docs/PERFORMANCE.md, "The default
/// hop cost", which `merger/tests/docs.rs` checks against this value.
pub const DEFAULT_HOP_MS: f64 = 0.45;

/// `fmerge plan`'s objective and constraints, as its flags give them.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraints {
    /// `--objective`.
    pub objective: Objective,
    /// `--hop-ms`: the cost of a gateway call where none is measured, ms.
    pub hop_ms: f64,
    /// `--max-memory`: bytes a merged pod's members' `limits.memory` may
    /// add up to.
    pub max_memory: Option<f64>,
    /// `--max-total-memory`: bytes of `limits.memory` the deployments left
    /// after the plan may reserve (merged pods at their own limits, the
    /// deployments no longer needed dropped: [`Model::reserved`](super::Model::reserved)).
    pub max_total_memory: Option<f64>,
    /// `--max-total-cpu`: cores of `limits.cpu`, counted as
    /// [`max_total_memory`](Self::max_total_memory) counts memory.
    pub max_total_cpu: Option<f64>,
    /// `--min-gain-ms`: the least expected latency a plan must remove, ms
    /// per request of the application.
    pub min_gain_ms: Option<f64>,
    /// `--min-calls-removed`: the fewest gateway calls a plan must remove
    /// per request of the application.
    pub min_calls_removed: Option<f64>,
    /// `--keep-apart`: sets of functions no group may hold two of.
    pub keep_apart: Vec<Vec<String>>,
    /// `--limits-assume-apart`: a merged pod's limits leave each member the
    /// room it had alone beside what the others use, as if they never
    /// peaked together (lower, at that risk); else they hold when every
    /// member peaks at once.
    pub limits_assume_apart: bool,
}

impl Default for Constraints {
    /// The latency objective, the default hop cost, nothing bounded.
    fn default() -> Self {
        Constraints {
            objective: Objective::default(),
            hop_ms: DEFAULT_HOP_MS,
            max_memory: None,
            max_total_memory: None,
            max_total_cpu: None,
            min_gain_ms: None,
            min_calls_removed: None,
            keep_apart: Vec::new(),
            limits_assume_apart: false,
        }
    }
}

/// Two functions no group may hold both of (`--keep-apart`'s, or a
/// conflict's), the lower index first, so that either order names the
/// same pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Apart {
    pub a: usize,
    pub b: usize,
}

impl Apart {
    pub fn new(x: usize, y: usize) -> Self {
        Apart {
            a: x.min(y),
            b: x.max(y),
        }
    }
}
