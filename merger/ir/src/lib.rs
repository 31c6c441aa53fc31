//! fmerge's IR side: read each crate's bitcode, run the passes, link it all
//! into one module and compile it, with the LLVM that rustc itself ships
//! (rustc's IR is only readable by an LLVM at least as new as its own).
//!
//! [`merge`] is its one entry (and [`MergedModule::compile`] the way to objects
//! with `--lto fat`, [`reuse`] with `--lto off`); the passes are in
//! [`passes`], one file each.
//!
//! This is the only crate of fmerge that links libLLVM, and `ir`'s small
//! layer is the only place that calls LLVM's C API directly.

pub mod calls;
pub mod codegen;
mod ir;
pub mod link;
pub mod llvm;
mod merge;
pub mod passes;
pub mod reuse;
pub mod split;
mod symbols;

pub use codegen::{Lto, Target};
pub use inkwell::context::Context;
pub use inkwell::module::Module;
pub use merge::{Compile, Event, MergedModule, Objects, Unit, links, merge};
pub use passes::Facts;
pub use passes::config::Setting;
pub use passes::endpoints::Rewrite;

/// The rustc release whose LLVM this crate links: bitcode from any other
/// rustc may not be readable.
pub const RUSTC_RELEASE: &str = env!("FMERGE_RUSTC_RELEASE");
