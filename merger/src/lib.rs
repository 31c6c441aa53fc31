//! fmerge: merge Rust OpenFaaS functions at LLVM IR level into one binary.
//!
//! The work is split along its real boundaries, one crate each, and callers
//! import from the crate that does the work:
//! - `fmerge_cargo` (no LLVM): drives cargo and the toolchain: the
//!   functions' build with bitcode, their native libraries, the final link,
//!   the merge cache;
//! - `fmerge_ir` (the only crate linking libLLVM): the IR link, the passes,
//!   codegen;
//! - `fmerge_ship` (no LLVM): the image, its push, stack.yml.
//!
//! This crate sequences them ([`pipeline`]), defines the options once
//! ([`options`]), reads merge groups ([`group`]), embeds the repository's files
//! ([`assets`]), shows progress, and is the `fmerge` CLI: the commands
//! ([`cli`]) parse into the operations ([`ops`]), whose machine-readable
//! records are [`message`]'s.

pub mod assets;
pub mod bitcode;
pub mod cli;
pub mod graph;
pub mod group;
pub mod message;
pub mod ops;
pub mod options;
pub mod pipeline;
pub mod plan;
pub mod preflight;
pub mod progress;

pub use pipeline::{MergedGroup, Options, build, build_many};
