//! How long and how hard a search may try: the default time limit and the
//! exact search's [`Limits`].

use std::time::{Duration, Instant};

/// The time a search takes at most by default: 200 functions plan within
/// it on a small machine, the rest of `fmerge plan` included.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(5);

/// How hard the exact search may try before it gives up (and says so).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Candidate groups per caller.
    pub candidates: usize,
    /// Search nodes in all.
    pub nodes: u64,
    /// When to stop, keeping the best plan found (none: no deadline).
    pub deadline: Option<Instant>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            candidates: 50_000,
            nodes: 20_000_000,
            deadline: None,
        }
    }
}

impl Limits {
    /// Whether the deadline has passed.
    pub fn late(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}
