//! The whole merge, stage by stage; each stage lives in its own crate and
//! module, and this one only sequences them:
//!
//! [`bitcode`] (toolchain, workspace, resolve, emit) →
//! per group (`merging`): cache → [`ir::merge`] (per crate: passes, link;
//! then the module passes) → [`ir::Merged::compile`] → native link.
//!
//! This file holds the groups: one cargo build for all (one per lock
//! file), then each group's merge from the units it links; and [`check`],
//! a group's verdict without codegen.

mod merging;
pub mod stages;

use crate::bitcode;
use crate::progress::Progress;
use anyhow::{Context as _, Result, bail};
use fmerge_cargo::emit;
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{resolve, workspace};
use fmerge_ir::{self as ir, Setting};
use merging::Merging;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use crate::options::Options;

/// A finished merge.
#[derive(Debug, Clone)]
pub struct Merged {
    pub name: String,
    pub binary: PathBuf,
    pub ll: Option<PathBuf>,
    /// Caller first, then the callees.
    pub members: Vec<String>,
    /// The settings each member reads, with the variable it reads them from.
    pub settings: Vec<Setting>,
    /// The functions' own unmerged binaries from the same build.
    pub unmerged: Vec<(String, PathBuf)>,
    /// The native libraries linked in (`KIND=NAME`): build scripts' and `#[link]`'s.
    pub native_libs: Vec<String>,
    /// Each stage's time ([`stages`] names them).
    pub timings: Vec<(&'static str, Duration)>,
    /// The whole merge after cargo (stages, cache, `--emit-ll`).
    pub took: Duration,
    pub units: usize,
    /// Differences from the unmerged functions that fmerge could not remove
    /// and did not refuse; each says what changes.
    pub warnings: Vec<String>,
    /// The binary of the last merge was kept: nothing had changed.
    pub cached: bool,
}

/// Checks the options that need no build ([`Options::check`]). [`build`]
/// runs it too; the CLI runs it before anything else.
pub fn validate(opts: &Options) -> Result<Vec<ir::Rewrite>> {
    opts.check()
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
    pub groups: Vec<Merged>,
    pub wall: stages::Wall,
}

/// The merge, stage by stage: the one-group case of [`build_many`].
pub fn build(opts: &Options) -> Result<Merged> {
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
    let mut merged: Vec<Option<Merged>> = vec![None; groups.len()];
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
        rewrites.push(validate(opts).with_context(|| label.clone())?);
        if many && !opts.rewrite.is_empty() {
            bail!(
                "{label}: --rewrite builds the callees' crates unoptimized, which would change the other groups' shared build\nfix: build this group on its own (`fmerge build --config`)"
            );
        }
    }
    let (shared, emitted) = Shared::start(first, groups, !rewrites[0].is_empty())?;
    let merge = |(opts, rewrites): (&Options, Vec<ir::Rewrite>)| -> Result<Merged> {
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

/// Merges the groups on `at_once` threads, the largest (most bitcode) first
/// ([`largest_first`]); the results in the groups' order. Which group runs
/// beside which changes no output.
fn groups_largest_first<'a>(
    work: Vec<(&'a Options, Vec<ir::Rewrite>)>,
    at_once: usize,
    emitted: &emit::Emitted,
    shared: &Shared,
    merge: impl Fn((&'a Options, Vec<ir::Rewrite>)) -> Result<Merged> + Sync,
) -> Vec<Result<Merged>> {
    let bytes = |opts: &Options| -> u64 {
        subset(&shared.members, opts).map_or(0, |members| {
            own_units(&members, emitted)
                .units
                .iter()
                .map(|u| std::fs::metadata(&u.bitcode).map_or(0, |m| m.len()))
                .sum()
        })
    };
    let sized = work.into_iter().map(|w| (bytes(w.0), w)).collect();
    largest_first(sized, at_once, merge)
        .into_iter()
        .map(|r| r.unwrap_or_else(|| bail!("a merge thread crashed")))
        .collect()
}

/// Runs `run` on every item on up to `threads` threads, the largest (by the
/// size beside it) first so that the longest never starts last. The results
/// come in the items' order; `None` for an item whose run panicked. Every
/// item runs, whatever the others return.
pub(crate) fn largest_first<T: Send, R: Send>(
    items: Vec<(u64, T)>,
    threads: usize,
    run: impl Fn(T) -> R + Sync,
) -> Vec<Option<R>> {
    let mut order: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, (size, _))| (*size, i))
        .collect();
    order.sort_by_key(|&(size, i)| (std::cmp::Reverse(size), i));
    let slots: Vec<Mutex<Option<T>>> = items
        .into_iter()
        .map(|(_, item)| Mutex::new(Some(item)))
        .collect();
    let results: Vec<Mutex<Option<R>>> = slots.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.clamp(1, order.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    while let Some(&(_, i)) = order.get(next.fetch_add(1, Ordering::SeqCst)) {
                        // No lock is held while `run` runs, so a panic poisons none.
                        let item = slots[i].lock().expect("not poisoned").take();
                        let result = run(item.expect("each item taken once"));
                        *results[i].lock().expect("not poisoned") = Some(result);
                    }
                })
            })
            .collect();
        // Joined here, a panicked worker leaves `None` for its item instead
        // of panicking the scope.
        for worker in workers {
            let _ = worker.join();
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().ok().flatten())
        .collect()
}

/// The build's verdict on one group without compiling it: the cargo build
/// and the passes of [`build`] with the same options, up to the merged
/// module (no codegen, no binary). Empty: the build merges the group. Else
/// each pair of members is merged alone from the same cargo build, and the
/// pairs refused are returned with the build's reason; if no pair alone is
/// refused, the caller with each callee, with the group's reason.
pub fn check(opts: &Options) -> Result<Vec<crate::graph::Conflict>> {
    let rewrites = validate(opts)?;
    let (shared, emitted) = Shared::start(opts, std::slice::from_ref(opts), !rewrites.is_empty())?;
    let members = subset(&shared.members, opts)?;
    let merging = Merging::new(opts, &shared, members, shared.progress.clone());
    let Some(reason) = merging.check(&emitted, rewrites)? else {
        return Ok(Vec::new());
    };
    let names: Vec<&String> = std::iter::once(&opts.caller).chain(&opts.callees).collect();
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
            if let Some(reason) = merging.check(&own, Vec::new())? {
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

/// One group's part of the union's members (no second `cargo metadata`).
fn subset(union: &resolve::Members, opts: &Options) -> Result<resolve::Members> {
    let find = |name: &str| {
        union
            .functions()
            .find(|f| f.name == name)
            .cloned()
            .with_context(|| format!("function {name} was not resolved"))
    };
    Ok(resolve::Members {
        caller: find(&opts.caller)?,
        callees: opts
            .callees
            .iter()
            .map(|c| find(c))
            .collect::<Result<_>>()?,
        manifest_path: union.manifest_path.clone(),
        workspace_root: union.workspace_root.clone(),
        target_dir: union.target_dir.clone(),
        local: union.local.clone(),
        local_dirs: union.local_dirs.clone(),
        local_on_top: union.local_on_top.clone(),
    })
}

/// The units of a shared build that one group's members link: their own
/// binaries and the crates in their closures.
fn own_units(members: &resolve::Members, all: &emit::Emitted) -> emit::Emitted {
    let member = |name: &str| members.functions().any(|f| f.name == name);
    emit::Emitted {
        units: all
            .units
            .iter()
            .filter(|u| match &u.function {
                Some(f) => member(f),
                None => members
                    .functions()
                    .any(|f| f.closure.contains(&u.package_id)),
            })
            .cloned()
            .collect(),
        native: all.native.clone(),
        triple: all.triple.clone(),
        binaries: all
            .binaries
            .iter()
            .filter(|(f, _)| member(f))
            .map(|(f, p)| (f.clone(), p.clone()))
            .collect(),
    }
}

/// What the groups of one build share: the toolchain, the union's members and
/// the cargo build.
pub(crate) struct Shared {
    pub(crate) progress: Progress,
    pub(crate) toolchain: Toolchain,
    pub(crate) members: resolve::Members,
    pub(crate) target_dir: PathBuf,
    /// How long the cargo build took.
    pub(crate) built: Duration,
    /// The groups merging now.
    pub(crate) active: AtomicUsize,
}

impl Shared {
    /// Resolves every group's members at once and builds them, bitcode for
    /// every crate; with rewrites, the callees' own crates are built
    /// unoptimized (see fmerge_ir's `endpoints`).
    fn start(first: &Options, groups: &[Options], rewrites: bool) -> Result<(Self, emit::Emitted)> {
        let progress = Progress::new(first.cargo.quiet);
        let (caller, callees) = if let [one] = groups {
            (one.caller.clone(), one.callees.clone())
        } else {
            let mut all: Vec<String> = Vec::new();
            for name in groups
                .iter()
                .flat_map(|g| std::iter::once(&g.caller).chain(&g.callees))
            {
                if !all.contains(name) {
                    all.push(name.clone());
                }
            }
            (all.remove(0), all)
        };
        let mut sources: Vec<workspace::Source> = Vec::new();
        for source in groups.iter().flat_map(|g| &g.sources) {
            if !sources.iter().any(|s| s.function == source.function) {
                sources.push(source.clone());
            }
        }
        let input = bitcode::Input {
            caller: &caller,
            callees: &callees,
            sources: &sources,
            manifest_path: first.manifest_path.as_deref(),
            target_dir: first.cargo.target_dir.as_deref(),
            jobs: first.cargo.jobs,
            purpose: "build",
        };
        let built = bitcode::build(&input, &progress, |members| emit::Profile {
            unoptimized: if rewrites {
                members.callee_owned_local()
            } else {
                BTreeSet::new()
            },
        })?;
        let shared = Shared {
            progress,
            toolchain: built.toolchain,
            members: built.members,
            target_dir: built.target_dir,
            built: built.took,
            active: AtomicUsize::new(0),
        };
        Ok((shared, built.emitted))
    }
}
