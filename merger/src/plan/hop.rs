//! The cost of a gateway call where the graph has none measured:
//! `--hop-ms`, else [`DEFAULT_HOP_MS`].

pub use fmerge_plan::model::DEFAULT_HOP_MS;

/// Where [`DEFAULT_HOP_MS`] comes from, as the plan's report says it.
const DEFAULT_SOURCE: &str = "the default, fmerge's bench on its pinned testbed's chain (docs/PERFORMANCE.md, \"The default hop cost\"); measure yours with --metrics or give --hop-ms";

/// The per-hop latency to project gains with, ms, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct HopCost {
    pub ms: f64,
    pub source: &'static str,
}

/// The per-hop latency to project gains with: `--hop-ms`, else
/// [`DEFAULT_HOP_MS`].
pub fn hop_ms(given: Option<f64>) -> HopCost {
    match given {
        Some(ms) => HopCost {
            ms,
            source: "--hop-ms",
        },
        None => HopCost {
            ms: DEFAULT_HOP_MS,
            source: DEFAULT_SOURCE,
        },
    }
}
