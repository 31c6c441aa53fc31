//! fmerge: merge Rust OpenFaaS functions at LLVM IR level into one binary.
//!
//! The pipeline, one module per stage:
//! resolve → emit → link → passes (symbols, dispatch, endpoints, config) →
//! codegen → native → image → push → stack.

pub mod image;
pub mod push;
pub mod stack;
