//! Uncalled callees: a warning for each callee no merged function names.
//!
//! `mentions` collected, crate by crate, the callees whose names appear in
//! some merged function's code; a callee that appears nowhere is never
//! invoked, so merging it saves no RPC (most often a typo in the group).

use crate::passes::{Facts, Found};
use anyhow::Result;

pub fn run(facts: &Facts, found: &mut Found) -> Result<()> {
    for callee in facts
        .callees
        .iter()
        .filter(|c| !found.mentioned.contains(*c))
    {
        found.warnings.push(format!(
            "no merged function names {callee} in its code, so it never invokes it and merging it saves no RPC; \
             check the call tree (did you mean another callee?)"
        ));
    }
    Ok(())
}
