//! A group's dry run: the build's verdict on it without codegen, and when
//! it refuses the group, which pairs of members it refuses.

use super::Options;
use super::merging::Merging;
use super::shared::{Shared, own_units, subset};
use anyhow::Result;

/// The build's verdict on one group without compiling it: the cargo build
/// and the passes of [`super::build`] with the same options, up to the merged
/// module (no codegen, no binary). Empty: the build merges the group. Else
/// each pair of members is merged alone from the same cargo build, and the
/// pairs refused are returned with the build's reason; if no pair alone is
/// refused, the caller with each callee, with the group's reason.
pub fn dry_run(opts: &Options) -> Result<Vec<crate::graph::Conflict>> {
    let rewrites = opts.check()?;
    let (shared, emitted) = Shared::start(opts, std::slice::from_ref(opts), !rewrites.is_empty())?;
    let members = subset(&shared.members, opts)?;
    let merging = Merging::new(opts, &shared, members, shared.progress.clone());
    let Some(reason) = merging.dry_run(&emitted, rewrites)? else {
        return Ok(Vec::new());
    };
    let names: Vec<&str> = opts.members().collect();
    let mut refused = Vec::new();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            let mut pair = Options {
                caller: a.to_string(),
                ..opts.clone()
            };
            pair.callees = vec![b.to_string()];
            pair.name = None;
            pair.rewrite = Vec::new();
            let members = subset(&shared.members, &pair)?;
            let merging = Merging::new(&pair, &shared, members, shared.progress.clone());
            let own = own_units(&merging.members, &emitted);
            if let Some(reason) = merging.dry_run(&own, Vec::new())? {
                refused.push(crate::graph::Conflict {
                    a: a.to_string(),
                    b: b.to_string(),
                    reason,
                });
            }
        }
    }
    if refused.is_empty() {
        refused = opts
            .callees
            .iter()
            .map(|b| crate::graph::Conflict {
                a: opts.caller.clone(),
                b: b.clone(),
                reason: reason.clone(),
            })
            .collect();
    }
    Ok(refused)
}
