//! What a search gives: its plan, and which search ran and whether it
//! proved the plan optimal, as the report and the plan file name it.

use super::model::Plan;

/// A plan the search found, and what proves it.
#[derive(Debug)]
pub struct Solution {
    pub plan: Plan,
    pub proof: Proof,
}

/// Which search ran, and whether its plan is proven optimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// The exact search finished: the plan is optimal.
    Exact,
    /// The deadline stopped the exact search: the best plan it saw.
    BestFound,
    /// The heuristic's plan, which proves nothing.
    Heuristic,
}

impl Proof {
    /// The search's name, as the report and the plan file say it.
    pub fn name(self) -> &'static str {
        match self {
            Proof::Exact => "exact",
            Proof::BestFound => BEST_FOUND,
            Proof::Heuristic => "heuristic",
        }
    }
}

/// What the report calls a plan the deadline stopped.
pub const BEST_FOUND: &str = "best found (not proven optimal within --time-limit)";
