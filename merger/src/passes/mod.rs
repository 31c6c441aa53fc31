//! Stage 4: the rewrites of the merged module. Each pass is one file with one
//! entry point; its doc comment says why it exists.

pub mod config;
pub mod dispatch;
pub mod endpoints;
pub mod symbols;
