//! Unmatched rewrites: a `--rewrite` that changed nothing is an error.
//!
//! `endpoints` counted, crate by crate, the literals each rewrite changed.
//! One that changed none most likely has a typo in FROM, and the merged
//! binary would ship the old address; the others give one note each.

use crate::passes::{Facts, Found};
use anyhow::{Result, bail};

pub fn run(facts: &Facts, found: &mut Found) -> Result<()> {
    for (i, rewrite) in facts.rewrites.iter().enumerate() {
        let n = found.rewritten.get(i).copied().unwrap_or(0);
        if n == 0 {
            let targets: Vec<_> = rewrite.targets(&facts.callees).into_iter().collect();
            bail!(
                "--rewrite {}: no string literal in the code of {} contains `{}`\n\
                 fix: check FROM, which is matched byte for byte (the endpoints each function reads are listed by `fmerge build … --emit-ll` in the .ll, \
                 and by the config report of a merge without this rewrite)",
                rewrite.from,
                targets.join(", "),
                rewrite.from
            );
        }
        found.notes.push(format!(
            "rewrote `{}` → `{}` in {n} literal(s)",
            rewrite.from, rewrite.to
        ));
    }
    Ok(())
}
