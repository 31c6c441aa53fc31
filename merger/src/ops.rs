//! The operations the commands call, one each (as cargo's `ops/`): each
//! takes its typed request, already checked, and does the work; the
//! commands in [`crate::cli`] only parse into it.

pub mod build;
pub mod ship;
