//! Allocator users: a warning for each merged function whose allocator
//! changes.
//!
//! When some merged functions set a `#[global_allocator]` (see `allocator`)
//! and others do not, the others allocate with it once merged, where their
//! own binaries used the default allocator.

use crate::passes::{Facts, Found};
use anyhow::Result;

pub fn run(facts: &Facts, found: &mut Found) -> Result<()> {
    let Some(allocator) = &found.allocator else {
        return Ok(());
    };
    let others: Vec<String> = facts
        .members()
        .into_iter()
        .filter(|m| !allocator.users.contains(m))
        .collect();
    if !others.is_empty() {
        found.warnings.push(format!(
            "{} sets its own #[global_allocator]: merged, {} allocate with it too (unmerged, with the default allocator)",
            allocator.set_by.join(", "),
            others.join(", ")
        ));
    }
    Ok(())
}
