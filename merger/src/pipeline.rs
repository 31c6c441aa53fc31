//! The whole merge, stage by stage; each stage lives in its own crate and
//! module, and this one only sequences them:
//!
//! [`bitcode`](crate::bitcode) (toolchain, workspace, resolve, emit) →
//! per group (`merging`): cache → [`ir::merge`] (per crate: passes, link;
//! then the module passes) → [`ir::MergedModule::compile`] → native link.
//!
//! This file holds the groups: one cargo build for all (one per lock
//! file), then each group's merge from the units it links. Beside it:
//! `shared.rs` what the groups of one build share, `parallel.rs` the
//! groups merged side by side, [`dry_run()`] a group's verdict without
//! codegen, [`stages`] where the time went.

mod dry_run;
mod merging;
mod parallel;
mod shared;
pub mod stages;

pub use dry_run::dry_run;

use anyhow::{Context as _, Result, bail};
use fmerge_cargo::workspace;
use fmerge_ir::{self as ir, Setting};
use merging::Merging;
use parallel::groups_largest_first;
use shared::{Shared, own_units, subset};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use crate::options::Options;

/// A finished merge.
#[derive(Debug, Clone)]
pub struct MergedGroup {
    pub name: String,
    pub binary: PathBuf,
    /// The warm-start launcher beside it, for a caller of-watchdog starts
    /// per request (`fmerge_cargo::shim::LAUNCHER`).
    pub launcher: Option<PathBuf>,
    pub ll: Option<PathBuf>,
    /// Caller first, then the callees.
    pub members: Vec<String>,
    /// The settings each member reads, with the variable it reads them from.
    pub settings: Vec<Setting>,
    /// The functions' own unmerged binaries from the same build.
    pub unmerged: BTreeMap<String, PathBuf>,
    /// The native libraries linked in (`KIND=NAME`): build scripts' and `#[link]`'s.
    pub native_libs: Vec<String>,
    /// Each stage's time ([`stages`] names them).
    pub timings: Vec<stages::StageTime>,
    /// The whole merge after cargo (stages, cache, `--emit-ll`).
    pub took: Duration,
    pub units: usize,
    /// Differences from the unmerged functions that fmerge could not remove
    /// and did not refuse; each says what changes.
    pub warnings: Vec<String>,
    /// The binary of the last merge was kept: nothing had changed.
    pub cached: bool,
}

/// What a merge remembers for a re-merge that changes nothing.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Remembered {
    settings: Vec<Setting>,
    native_libs: Vec<String>,
    warnings: Vec<String>,
}

/// The groups of one build, and its wall-clock times so far.
pub struct Built {
    pub groups: Vec<MergedGroup>,
    pub wall: stages::Wall,
}

/// The merge, stage by stage: the one-group case of [`build_many`].
pub fn build(opts: &Options) -> Result<MergedGroup> {
    let mut built = build_many(std::slice::from_ref(opts))?;
    Ok(built.groups.remove(0))
}

/// Several groups, each built with its caller's `Cargo.lock` as a build
/// of that group alone would be (and as `fmerge plan`'s dry run checked
/// it): groups whose callers' projects take the same lock file share one
/// cargo build (`build_locked`), in the order given.
pub fn build_many(groups: &[Options]) -> Result<Built> {
    let mut names = BTreeSet::new();
    for label in groups.iter().map(Options::label) {
        if !names.insert(label.clone()) {
            bail!("two groups are both named {label}\nfix: give each group its own `name`");
        }
    }
    if groups.len() < 2 {
        return build_locked(groups);
    }
    let mut locks: Vec<(Option<PathBuf>, Vec<usize>)> = Vec::new();
    for (i, opts) in groups.iter().enumerate() {
        let lock = match opts.sources.first() {
            Some(caller) => workspace::lock_of(caller)?,
            None => None, // one cargo workspace: one lock file
        };
        match locks
            .iter_mut()
            .find(|(l, _)| workspace::same_lock(l.as_deref(), lock.as_deref()))
        {
            Some((_, at)) => at.push(i),
            None => locks.push((lock, vec![i])),
        }
    }
    if locks.len() < 2 {
        return build_locked(groups);
    }
    let mut merged: Vec<Option<MergedGroup>> = vec![None; groups.len()];
    let mut wall = stages::Wall::default();
    for (_, at) in locks {
        let some: Vec<Options> = at.iter().map(|&i| groups[i].clone()).collect();
        let built = build_locked(&some)?;
        // One cargo build after another: their times add up.
        wall.cargo += built.wall.cargo;
        wall.merging += built.wall.merging;
        wall.total += built.wall.total;
        for (i, m) in at.into_iter().zip(built.groups) {
            merged[i] = Some(m);
        }
    }
    Ok(Built {
        groups: merged
            .into_iter()
            .map(|m| m.expect("every group built"))
            .collect(),
        wall,
    })
}

/// Several groups from ONE cargo build: the union of their members is
/// resolved and built once, then each group is merged from the units its
/// own members link (shared units are read, never changed), in parallel:
/// at most `-j` (or the cores) at once, each with its own LLVM contexts,
/// the largest first, sharing `-j` codegen threads. The shared options
/// (workspace, target dir, `-j`, quiet) are the first group's.
fn build_locked(groups: &[Options]) -> Result<Built> {
    let started = Instant::now();
    let Some(first) = groups.first() else {
        bail!(
            "no groups to build: the plan has no [[group]]\nfix: add a [[group]] to it, or write a new one with `fmerge plan`"
        );
    };
    let many = groups.len() > 1;
    let mut rewrites = Vec::new();
    for opts in groups {
        let label = opts.label();
        rewrites.push(opts.check().with_context(|| label.clone())?);
        if many && !opts.rewrite.is_empty() {
            bail!(
                "{label}: --rewrite builds the callees' crates unoptimized, which would change the other groups' shared build\nfix: build this group on its own (`fmerge build --config`)"
            );
        }
    }
    let (shared, emitted) = Shared::start(first, groups, !rewrites[0].is_empty())?;
    let merge = |(opts, rewrites): (&Options, Vec<ir::Rewrite>)| -> Result<MergedGroup> {
        let members = subset(&shared.members, opts)?;
        let progress = if many {
            shared.progress.for_group(&opts.label())
        } else {
            shared.progress.clone()
        };
        let merging = Merging::new(opts, &shared, members, progress);
        if many {
            let own = own_units(&merging.members, &emitted);
            merging
                .merge(&own, rewrites)
                .with_context(|| format!("group {}", opts.label()))
        } else {
            merging.merge(&emitted, rewrites)
        }
    };
    let work: Vec<_> = groups.iter().zip(rewrites).collect();
    let merges_began = Instant::now();
    let wall = |merging| stages::Wall {
        cargo: shared.built,
        merging,
        images: Duration::ZERO,
        total: started.elapsed(),
    };
    if !many {
        let groups = work.into_iter().map(merge).collect::<Result<_>>()?;
        let merging = merges_began.elapsed();
        return Ok(Built {
            groups,
            wall: wall(merging),
        });
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let at_once = first.cargo.jobs.unwrap_or(cores).clamp(1, groups.len());
    let results = groups_largest_first(work, at_once, &emitted, &shared, merge);
    let merging = merges_began.elapsed();
    let mut merged = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(m) => merged.push(m),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if !errors.is_empty() {
        bail!(
            "{} of {} groups failed:\n  {}",
            errors.len(),
            groups.len(),
            errors.join("\n  ")
        );
    }
    Ok(Built {
        groups: merged,
        wall: wall(merging),
    })
}
