//! The search under a deadline: the heuristic's plan first (so there is
//! always one), its local search given up to nine tenths of the time (on
//! applications where it takes that long, the branch and bound would not
//! finish either), then the branch and bound started from it, which either
//! finishes (the plan is optimal) or stops at the deadline with the best
//! plan found; then, at no loss to the objective, the deployments it lets
//! go ([`cheaper`]).

use super::heuristic::heuristic_within;
use super::{Limits, branch_and_bound, cheaper};
use crate::model::{Model, Plan};
use std::time::Instant;

/// A plan and whether it is proven optimal (else: the best found in the
/// time given).
#[derive(Debug, Clone)]
pub struct Found {
    pub plan: Plan,
    pub proven: bool,
    /// Callers past the candidate cap, whose groups are the heuristic's: the
    /// search finished and the plan is optimal for every other caller
    /// ([`Bounded::capped`](super::Bounded::capped)).
    pub capped: Vec<usize>,
}

/// The best plan found within `limits` (its deadline, its exact search's
/// limits).
pub fn within(model: &Model, limits: Limits) -> Found {
    let most = limits.deadline.map(|d| {
        let now = Instant::now();
        now + d.saturating_duration_since(now) * 9 / 10
    });
    let start = heuristic_within(
        model,
        &Limits {
            deadline: most,
            ..limits
        },
    );
    let exact = branch_and_bound(model, limits, Some(&start));
    let plan = cheaper(model, exact.plan.unwrap_or(start), &limits);
    let at_bound = at_bound(model, &plan);
    Found {
        proven: exact.proven || at_bound,
        capped: if at_bound { Vec::new() } else { exact.capped },
        plan,
    }
}

/// Whether `plan` scores the most any plan can ([`Model::trivial_bound`])
/// and meets the minimums: then it is optimal, whichever search found it
/// and whether or not the branch and bound finished.
pub fn at_bound(model: &Model, plan: &Plan) -> bool {
    super::score(model, &plan.groups)
        .is_some_and(|score| score >= model.trivial_bound() - super::EPS && model.meets(plan))
}
