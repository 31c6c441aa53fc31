//! The build's verdict on pairs of functions: which two one binary cannot
//! hold, by the rules `fmerge build` refuses with (`fmerge_ir`'s passes,
//! called here, never copied), on the bitcode `fmerge build` merges.
//!
//! The graph's own build compiles the user's crates at opt-level 0 (see
//! [`fmerge_ir::calls`]), and two of the rules can say otherwise on the
//! release build that `fmerge build` merges. The optimizer drops a mutable
//! static nothing writes (or nothing reads), so a shared crate refused at
//! opt-level 0 may merge; it never adds one, so a crate accepted at
//! opt-level 0 stands. Allocators are compared by their code, which the
//! optimizer changes either way. So when the opt-level-0 survey refuses a
//! shared crate, or two or more crates set an allocator, those verdicts are
//! taken again from release bitcode ([`on_release`]): a cargo build of only
//! the functions concerned, with `fmerge build`'s profile. The other rules
//! (exported symbols, entries) read names rustc writes before optimizing,
//! the same at every opt-level.

use super::Conflict;
use crate::bitcode;
use crate::progress::Progress;
use anyhow::Result;
use fmerge_cargo::emit;
use fmerge_ir::calls;
use fmerge_ir::passes::exports::{self, Definer};
use std::collections::{BTreeMap, BTreeSet};

/// Pairs of functions that one binary cannot hold, each with the build's
/// reason: a crate of the user's with mutable statics that both link, two
/// different `#[global_allocator]`s, or one exported symbol defined twice
/// that fmerge cannot rename.
pub(super) fn conflicts(
    units: &[calls::Unit],
    surveys: &[calls::Survey],
    native_refs: &BTreeMap<String, String>,
) -> Vec<Conflict> {
    let mut out: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut add = |a: &str, b: &str, reason: &str| {
        let key = if a < b { (a, b) } else { (b, a) };
        out.entry((key.0.to_string(), key.1.to_string()))
            .or_insert_with(|| reason.to_string());
    };
    // Two units clash: every function linking one but not the other, with
    // every function linking the other but not the first.
    let mut between = |i: usize, j: usize, reason: String| {
        let (a, b) = (units[i].krate.owners, units[j].krate.owners);
        for fa in a.difference(b) {
            for fb in b.difference(a) {
                add(fa, fb, &reason);
            }
        }
    };
    let allocators: Vec<usize> = (0..units.len())
        .filter(|&i| surveys[i].allocator.is_some())
        .collect();
    for (k, &i) in allocators.iter().enumerate() {
        for &j in &allocators[k + 1..] {
            let (a, b) = (&surveys[i].allocator, &surveys[j].allocator);
            if let (Some(a), Some(b)) = (a, b)
                && let Err(e) = a.beside(b)
            {
                between(i, j, format!("{e:#}"));
            }
        }
    }
    let mut defined: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, survey) in surveys.iter().enumerate() {
        for symbol in &survey.exported {
            defined.entry(symbol).or_default().push(i);
        }
    }
    for (symbol, at) in defined.iter().filter(|(_, at)| at.len() > 1) {
        for (k, &i) in at.iter().enumerate() {
            for &j in &at[k + 1..] {
                let (first, second) = (Definer::of(&units[i].krate), Definer::of(&units[j].krate));
                if let Err(e) = exports::clash(symbol, &first, &second, native_refs) {
                    between(i, j, format!("{e:#}"));
                }
            }
        }
    }
    for (unit, survey) in units.iter().zip(surveys) {
        if let Some(reason) = &survey.shared_static {
            let owners: Vec<&String> = unit.krate.owners.iter().collect();
            for (i, a) in owners.iter().enumerate() {
                for b in &owners[i + 1..] {
                    add(a, b, reason);
                }
            }
        }
    }
    out.into_iter()
        .map(|((a, b), reason)| Conflict { a, b, reason })
        .collect()
}

/// The functions whose opt-level-0 verdict the release build may overturn:
/// those linking a crate refused for its statics, and, when two or more
/// crates set an allocator, every function whose crates set one.
pub(super) fn to_recheck(units: &[calls::Unit], surveys: &[calls::Survey]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let allocators = surveys.iter().filter(|s| s.allocator.is_some()).count();
    for (unit, survey) in units.iter().zip(surveys) {
        if survey.shared_static.is_some() || (allocators > 1 && survey.allocator.is_some()) {
            out.extend(unit.krate.owners.iter().cloned());
        }
    }
    out
}

/// Surveys the statics and allocators of `functions` again on the bitcode
/// `fmerge build` merges (its release profile, no crate at opt-level 0),
/// and puts those verdicts in `surveys` in place of the opt-level-0 ones
/// (`units` and `emitted` are the graph build's, in the same order).
pub(super) fn on_release(
    input: &bitcode::Input,
    functions: &BTreeSet<String>,
    units: &[calls::Unit],
    emitted: &[emit::Unit],
    surveys: &mut [calls::Survey],
    allow_shared_static: &[String],
    progress: &Progress,
) -> Result<()> {
    progress.note(&format!(
        "checking the shared statics and allocators of {} again on the release build `fmerge build` merges",
        functions.iter().cloned().collect::<Vec<_>>().join(", ")
    ));
    let names: Vec<String> = functions.iter().cloned().collect();
    let release = bitcode::Input {
        caller: &names[0],
        callees: &names[1..],
        ..*input
    };
    let built = bitcode::build(&release, progress, |_| Ok(emit::Profile::default()))?;
    let bytes = emit::read_bitcode(&built.emitted.units)?;
    // Each release unit, as the opt-level-0 unit of the same crate.
    let mut at = Vec::new();
    let mut again = Vec::new();
    for (r, unit) in built.emitted.units.iter().enumerate() {
        let same = emitted
            .iter()
            .position(|u| u.package_id == unit.package_id && u.function == unit.function);
        if let Some(i) = same {
            at.push(i);
            again.push(calls::Unit {
                bytes: &bytes[r],
                path: &unit.bitcode,
                krate: units[i].krate.clone(),
            });
        }
    }
    let verdicts = calls::survey(&again, allow_shared_static)?;
    for (i, verdict) in at.into_iter().zip(verdicts) {
        surveys[i].shared_static = verdict.shared_static;
        surveys[i].allocator = verdict.allocator;
    }
    Ok(())
}
