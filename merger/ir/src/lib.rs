//! fmerge's IR side: read each crate's bitcode, run the passes, link it all
//! into one module and compile it, with the LLVM that rustc itself ships
//! (rustc's IR is only readable by an LLVM at least as new as its own).
//!
//! This is the only crate of fmerge that links libLLVM, and [`ir`]'s small
//! layer is the only place that calls LLVM's C API directly.

pub mod calls;
pub mod codegen;
mod ir;
pub mod link;
pub mod llvm;
pub mod passes;
pub mod split;

pub use inkwell::context::Context;
pub use inkwell::module::Module;

/// The rustc release whose LLVM this crate links: bitcode from any other
/// rustc may not be readable.
pub const RUSTC_RELEASE: &str = env!("FMERGE_RUSTC_RELEASE");
