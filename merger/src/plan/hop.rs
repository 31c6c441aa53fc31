//! The cost of a gateway call where the graph has none measured:
//! `--hop-ms`, else [`DEFAULT_HOP_MS`].

/// The latency of one gateway hop, ms, where neither the graph (a
/// `--metrics` scrape) nor `--hop-ms` gives one: what fmerge's bench
/// measured on its pinned testbed's chain, (unmerged − merged p50) ÷
/// critical-path hops. A constant rather than a bench file built in, so
/// committing a bench run does not change what `fmerge plan` prints; the
/// run it comes from (command, date) is in docs/PERFORMANCE.md, "The default
/// hop cost", which `merger/tests/docs.rs` checks against this value.
pub const DEFAULT_HOP_MS: f64 = 0.45;

/// Where [`DEFAULT_HOP_MS`] comes from, as the plan's report says it.
const DEFAULT_SOURCE: &str = "the default, fmerge's bench on its pinned testbed's chain (docs/PERFORMANCE.md, \"The default hop cost\"); measure yours with --metrics or give --hop-ms";

/// The per-hop latency to project gains with, and where it comes from:
/// `--hop-ms`, else [`DEFAULT_HOP_MS`].
pub fn hop_ms(given: Option<f64>) -> (f64, String) {
    match given {
        Some(ms) => (ms, "--hop-ms".to_string()),
        None => (DEFAULT_HOP_MS, DEFAULT_SOURCE.to_string()),
    }
}
