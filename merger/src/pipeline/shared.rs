//! What the groups of one build share: the toolchain, the union of their
//! members and the one cargo build; and each group's part of them.

use super::Options;
use crate::bitcode;
use crate::progress::Progress;
use anyhow::{Context as _, Result};
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{emit, resolve, workspace};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

/// One group's part of the union's members (no second `cargo metadata`).
pub(super) fn subset(union: &resolve::Members, opts: &Options) -> Result<resolve::Members> {
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
pub(super) fn own_units(members: &resolve::Members, all: &emit::Emitted) -> emit::Emitted {
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
    /// The of-watchdog mode of each watchdog-process function built without
    /// a stack file, read from the `Dockerfile` beside its package, if any
    /// ([`modes_beside_packages`]); a stack's are in each group's options.
    pub(crate) modes: BTreeMap<String, String>,
    /// The handler-library functions whose `handle` the build exports.
    pub(crate) handles: BTreeSet<String>,
    /// The generated workspace's lock, held until every group is linked
    /// (`bitcode::hold`).
    pub(crate) _held: Option<std::sync::Arc<std::fs::File>>,
}

/// The modes of the watchdog-process functions of `members` that no
/// group's options give one, read from the `Dockerfile` beside each
/// package (never built), and checked as a stack entry's are: before cargo
/// starts, a mode fmerge does not merge or an `fprocess` that is no binary
/// of the package is refused.
fn modes_beside_packages(
    members: &resolve::Members,
    groups: &[Options],
) -> Result<BTreeMap<String, String>> {
    let mut modes = BTreeMap::new();
    for f in members.functions() {
        if !f.form.shimmed() || groups.iter().any(|g| g.modes.contains_key(&f.name)) {
            continue;
        }
        let Some(dir) = members.local_dirs.get(&f.package_id) else {
            continue;
        };
        if let Some(watchdog) = fmerge_ship::stack_in::beside_package(dir)? {
            watchdog.check(&f.name, &f.name, &f.bins, f.http_server.as_deref())?;
            modes.insert(f.name.clone(), watchdog.mode);
        }
    }
    Ok(modes)
}

impl Shared {
    /// Resolves every group's members at once and builds them, bitcode for
    /// every crate; with rewrites, the callees' own crates are built
    /// unoptimized (see fmerge_ir's `endpoints`).
    pub(super) fn start(
        first: &Options,
        groups: &[Options],
        rewrites: bool,
    ) -> Result<(Self, emit::Emitted)> {
        let progress = Progress::new(first.cargo.quiet);
        let (caller, callees) = if let [one] = groups {
            (one.caller.clone(), one.callees.clone())
        } else {
            let mut all: Vec<String> = Vec::new();
            for name in groups.iter().flat_map(Options::members) {
                if !all.iter().any(|a| a == name) {
                    all.push(name.to_string());
                }
            }
            (all.remove(0), all)
        };
        let mut sources: Vec<workspace::FunctionProject> = Vec::new();
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
        let mut modes = BTreeMap::new();
        let built = bitcode::build(&input, &progress, |members| {
            if sources.is_empty() {
                modes = modes_beside_packages(members, groups)?;
            }
            // Checked here, before cargo builds, not where it is linked;
            // once, naming the first caller that needs it.
            let launched = groups.iter().find_map(|opts| {
                members
                    .functions()
                    .find(|f| f.name == opts.caller && f.form == resolve::Form::Process)
            });
            if let Some(f) = launched {
                fmerge_cargo::shim::check_launcher_links(&f.name)?;
            }
            Ok(emit::Profile {
                unoptimized: if rewrites {
                    members.callee_owned_local()
                } else {
                    BTreeSet::new()
                },
            })
        })?;
        let shared = Shared {
            progress,
            toolchain: built.toolchain,
            members: built.members,
            target_dir: built.target_dir,
            built: built.took,
            active: AtomicUsize::new(0),
            modes,
            handles: built.handles,
            _held: built.held,
        };
        Ok((shared, built.emitted))
    }
}
