//! fmerge: merge Rust OpenFaaS functions at LLVM IR level into one binary.
//!
//! The work is split along its real boundaries, one crate each:
//! - [`fmerge_cargo`] (no LLVM): the toolchain, [`resolve`], [`emit`] (one
//!   cargo build with bitcode), [`native`] (the final link), [`cache`];
//! - [`fmerge_ir`] (the only crate linking libLLVM): [`link`], [`passes`],
//!   [`codegen`];
//! - [`fmerge_ship`] (no LLVM): [`image`], [`push`], [`stack`].
//!
//! This crate sequences them ([`pipeline`]), reads merge groups ([`group`]),
//! shows progress, and is the `fmerge` CLI.

pub mod graph;
pub mod group;
pub mod pipeline;
pub mod plan;
pub mod progress;

pub use fmerge_cargo::{artifact, cache, emit, native, resolve, toolchain, workspace};
pub use fmerge_ir::{codegen, link, llvm, passes};
pub use fmerge_ship::{image, names, push, stack, stackfile, template};
pub use pipeline::{Merged, Options, build};
