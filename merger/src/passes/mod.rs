//! The rewrites of the IR, one file each; each file's doc comment says why
//! the pass exists. Per crate, before linking (while each crate's owner is
//! known): `symbols::prepare`, `statics`, `endpoints`, `env`. On the merged
//! module: `symbols::run`, `dispatch`, `config`.

pub mod config;
pub mod dispatch;
pub mod endpoints;
pub mod env;
pub mod statics;
pub mod symbols;
