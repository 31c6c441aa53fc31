//! fmerge: merge Rust OpenFaaS functions at LLVM IR level into one binary.
//!
//! The pipeline, one module per stage: [`resolve`] → [`emit`] → [`link`] →
//! [`passes`] (symbols, dispatch, endpoints, config) → [`codegen`] →
//! [`native`] → [`image`] → [`push`] → [`stack`]. [`pipeline`] runs the
//! stages up to the binary; the CLI adds the image, the push and the stack.

pub mod artifact;
pub mod cache;
pub mod codegen;
pub mod emit;
pub mod group;
pub mod image;
mod ir;
pub mod link;
pub mod native;
pub mod passes;
pub mod pipeline;
pub mod progress;
pub mod push;
pub mod resolve;
pub mod stack;
pub mod toolchain;

pub use pipeline::{Merged, Options, build};
