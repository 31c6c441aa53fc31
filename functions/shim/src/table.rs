//! The members of this merged binary: none. This default table is what cargo
//! builds (tests, clippy); fmerge overwrites this file in its own copy of
//! `src/` with the members, gateway URLs and variables it found.
use crate::Member;
use crate::rewrite::Rewrite;

pub(crate) static CALLER: &str = "";
pub(crate) static MEMBERS: &[Member] = &[];
pub(crate) static GATEWAY_URLS: &[&str] = &[];
pub(crate) static GATEWAY_VARS: &[&str] = &[];
pub(crate) static REWRITES: &[Rewrite] = &[];
pub(crate) static CALLER_ENV: &[&str] = &[];
pub(crate) static INLINE_CALLS: bool = false;
