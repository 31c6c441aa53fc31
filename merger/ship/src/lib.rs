//! fmerge's ship side, with no LLVM in it: the merged binary as a minimal
//! OpenFaaS image built through the Docker Engine API, its push to a
//! registry, and the stack.yml that deploys it.

pub mod image;
pub mod names;
pub mod push;
pub mod quantity;
pub mod ready;
pub mod ship;
pub mod stack_in;
pub mod stack_out;
pub mod template;

/// fmerge's version, recorded in image labels and stack.yml.
pub const FMERGE_VERSION: &str = env!("CARGO_PKG_VERSION");
