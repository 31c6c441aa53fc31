//! The planner's computation, apart from the rest of `fmerge plan` (reading
//! the graph, reports, files): the [`model`] of an application and the value
//! of a set of groups, and the [`search`]es for the best one.
//!
//! It is a crate of its own because it is the one part of fmerge whose time
//! is its own Rust code: it builds optimized while the rest of fmerge, whose
//! time is in libLLVM, cargo and Docker, builds at opt-level 0 (the
//! workspace's `Cargo.toml`).

pub mod front;
pub mod model;
pub mod search;
pub mod set;
