//! The `fmerge` commands, one module each: flags in, one operation of the
//! library, results out; `app` is the command line that dispatches to them.

pub mod app;
pub mod build;
pub mod error;
pub mod graph;
pub mod plan;
pub mod template;
