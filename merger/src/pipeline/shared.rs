//! What the groups of one build share: the toolchain, the union of their
//! members and the one cargo build; and each group's part of them.

use super::Options;
use crate::bitcode;
use crate::progress::Progress;
use anyhow::{Context as _, Result};
use fmerge_cargo::toolchain::Toolchain;
use fmerge_cargo::{emit, resolve, workspace};
use std::collections::BTreeSet;
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
