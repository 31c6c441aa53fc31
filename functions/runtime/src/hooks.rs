//! The names and layout that `fmerge` looks for in LLVM IR: the merge
//! contract, defined once in `fmerge-contract` and shared with the merger.

pub use fmerge_contract::{CONFIG, ENTRY_PREFIX, ROUTES};

/// One merged callee: its name as UTF-8 bytes, and its entry.
pub type Route = fmerge_contract::Route<crate::Entry>;

/// The dispatch table that [`invoke`](super::invoke) consults before the network:
/// empty in every unmerged binary; the merger replaces its initializer.
pub type Routes = fmerge_contract::Routes<crate::Entry>;
