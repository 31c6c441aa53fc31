//! What a search gives: its plan, and which search ran and whether it
//! proved the plan optimal, as the report and the plan file name it.

use super::model::{Model, Plan};

/// A plan the search found, and what proves it.
#[derive(Debug)]
pub struct Solution {
    pub plan: Plan,
    pub proof: Proof,
    /// Callers past the candidate cap, whose groups are the heuristic's
    /// ([`Proof::Capped`]).
    pub capped: Vec<usize>,
}

impl Solution {
    /// The search as the report and the plan file say it: its name, and
    /// for [`Proof::Capped`] which callers the proof leaves out.
    pub fn says(&self, model: &Model) -> String {
        match self.proof {
            Proof::Capped => format!(
                "{} ({})",
                self.proof.name(),
                model
                    .names_of(
                        self.capped
                            .iter()
                            .fold(crate::plan::model::Set::EMPTY, |s, &r| s
                                | crate::plan::model::bit(r))
                    )
                    .join(", ")
            ),
            proof => proof.name().to_string(),
        }
    }
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
    /// The heuristic's plan, at the trivial bound
    /// ([`at_bound`](crate::plan::search::at_bound)): optimal.
    HeuristicAtBound,
    /// The exact search finished, but some callers have more possible
    /// groups than it enumerates: their groups are the heuristic's, every
    /// other caller's is proven.
    Capped,
}

impl Proof {
    /// The search's name, as the report and the plan file say it.
    pub fn name(self) -> &'static str {
        match self {
            Proof::Exact => "exact",
            Proof::BestFound => BEST_FOUND,
            Proof::Heuristic => "heuristic",
            Proof::HeuristicAtBound => "heuristic, at the bound (optimal)",
            Proof::Capped => CAPPED,
        }
    }
}

/// What the report calls a plan the deadline stopped.
pub const BEST_FOUND: &str = "best found (not proven optimal within --time-limit)";

/// What the report calls a plan proven for every caller but those past
/// the candidate cap (named after it).
pub const CAPPED: &str =
    "exact but for the callers past the candidate cap, whose groups are the heuristic's";
