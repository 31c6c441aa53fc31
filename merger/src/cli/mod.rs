//! The `fmerge` commands, one module each: flags in, the library's work,
//! results out.

pub mod build;
pub mod graph;
pub mod message;
pub mod plan;
pub mod template;
