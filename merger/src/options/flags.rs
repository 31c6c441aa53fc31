//! The flags of the commands that build: the merge options of `fmerge
//! build` ([`Given`], one row each in [`OPTIONS`](super::OPTIONS)), those
//! `graph` and `plan` share ([`Cargo`], [`Sharing`]), and the image options with the
//! group file's `[image]` table under them ([`ImageFlags::over`]).

use crate::group::{self, ImageGroup};
use clap::Args;
use fmerge_ir as ir;
use std::path::PathBuf;

/// The merge options of `fmerge build`'s command line (beside where the
/// functions are, the group file and the image options).
#[derive(Args, Clone, Debug, Default)]
pub struct Given {
    /// Functions the caller invokes, to run in-process.
    pub callees: Vec<String>,
    /// The merged binary's name (default: `<CALLER>-merged`).
    #[arg(long)]
    pub name: Option<String>,
    /// Where the binary goes (default: `<target>/fmerge/<NAME>/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    // --target-dir, -j and -q, as `fmerge graph` and `fmerge plan` take them.
    #[command(flatten)]
    pub cargo: Cargo,
    /// Replace FROM with TO in the string literals of callee code (one callee's with CALLEE:).
    #[arg(long, value_name = "[CALLEE:]FROM=TO")]
    pub rewrite: Vec<String>,
    /// Also write the merged module as readable LLVM IR (`<NAME>.ll`).
    #[arg(long)]
    pub emit_ll: bool,
    /// LLVM optimization level for the merged module [default: 3].
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: Option<u8>,
    /// LTO over the merged module: `fat` (LLVM's `lto<O3>` across all crates,
    /// on one thread), `own` (the same across the group's own crates, the
    /// rest from cargo's objects) or `off` (each crate as rustc optimized it)
    /// [default: what profile.release.lto says; cargo's default is off].
    #[arg(long, value_name = "MODE", value_parser = lto_mode())]
    pub lto: Option<ir::Lto>,
    // --allow-shared-static, as `fmerge graph` and `fmerge plan` take it.
    #[command(flatten)]
    pub sharing: Sharing,
    /// Redo the merge even when nothing changed since the last one.
    #[arg(long)]
    pub force: bool,
    /// Merge a callee that no member's code calls (no call site names it,
    /// and none computes a callee's name) instead of refusing it.
    #[arg(long)]
    pub allow_uncalled: bool,
}

/// The flags of every command that builds the functions (`build`, `graph`
/// and `plan`), defined once.
#[derive(Args, Clone, Debug, Default)]
pub struct Cargo {
    /// The cargo target dir [default: the workspace's; with -f or several
    /// --manifest-path, the first function's].
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Parallel jobs for cargo, and for a merge at most this many objects
    /// compiled at once [default: one per core].
    #[arg(short, long)]
    pub jobs: Option<usize>,
    /// Print only the results.
    #[arg(short, long)]
    pub quiet: bool,
}

/// What merged functions may share, for the build's refusal and the
/// planner's alike (`build`, `graph` and `plan`), defined once.
#[derive(Args, Clone, Debug, Default)]
pub struct Sharing {
    /// Let merged functions share a mutable static of a crate they all link
    /// (`crate::path::NAME`, or a crate name for all of its statics), which
    /// unmerged each had its own copy of. Repeatable.
    #[arg(long, value_name = "STATIC")]
    pub allow_shared_static: Vec<String>,
}

/// `fmerge plan`'s check of its groups on the build's own input (see
/// docs/planning.md, "The build's verdict"), defined once.
#[derive(Args, Clone, Debug, Default)]
pub struct DryRun {
    /// Trust the graph's verdict on every group: do not dry-run `fmerge
    /// build`'s passes on the groups whose caller's Cargo.lock is not the
    /// one the graph was built with.
    #[arg(long)]
    pub no_dry_run: bool,
}

/// `--lto`'s values, by [`group::LTO_MODES`] (listed in `--help` and in the error).
fn lto_mode() -> impl clap::builder::TypedValueParser<Value = ir::Lto> {
    use clap::builder::{PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new(group::LTO_MODES.map(|(name, _)| name))
        .map(|name: String| group::parse_lto(&name).expect("one of LTO_MODES"))
}

/// The image options of `fmerge build`'s command line (in a group file,
/// the `[image]` table: `build` for `--image`, and no `source-revision`).
#[derive(Args, Clone, Debug, Default)]
pub struct ImageFlags {
    /// Also build a minimal OpenFaaS image in the local Docker Engine, and write stack.yml.
    #[arg(long)]
    pub image: bool,
    /// Build the image, then push it (implies --image).
    #[arg(long)]
    pub push: bool,
    /// The image reference, e.g. docker.io/you/pair:v1 or 127.0.0.1:5000/pair:v1
    /// (default: `<REGISTRY>/<NAME>:<content hash>`).
    #[arg(long, value_name = "REF")]
    pub tag: Option<String>,
    /// Registry and namespace for the default tag, e.g. docker.io/you.
    #[arg(long, value_name = "PREFIX", env = "FMERGE_REGISTRY")]
    pub registry: Option<String>,
    /// How push progress is shown: auto (bars on a terminal, lines otherwise), bars, plain, quiet
    /// [default: auto].
    #[arg(long, value_name = "MODE")]
    pub progress: Option<String>,
    /// The source revision recorded in the image labels [default: `git rev-parse HEAD`].
    #[arg(long, value_name = "REV", env = "FMERGE_SOURCE_REVISION")]
    pub source_revision: Option<String>,
    /// Where push credentials come from: auto (FMERGE_REGISTRY_USER/FMERGE_REGISTRY_PASSWORD,
    /// else ~/.docker/config.json), env, docker, none.
    #[arg(long, value_name = "SOURCE")]
    pub registry_auth: Option<String>,
    /// The OpenFaaS gateway written into stack.yml.
    #[arg(long, value_name = "URL")]
    pub gateway: Option<String>,
}

impl ImageFlags {
    /// These flags over a group file's `[image]` table: a switch is on if
    /// either sets it (`--push` implies `--image`), a value is the command
    /// line's, else the file's.
    pub fn over(&self, file: &ImageGroup) -> ImageFlags {
        let or = |cli: &Option<String>, file: &Option<String>| cli.clone().or(file.clone());
        let push = self.push || file.push;
        ImageFlags {
            image: self.image || file.build || push,
            push,
            tag: or(&self.tag, &file.tag),
            registry: or(&self.registry, &file.registry),
            progress: or(&self.progress, &file.progress),
            source_revision: self.source_revision.clone(),
            registry_auth: or(&self.registry_auth, &file.registry_auth),
            gateway: or(&self.gateway, &file.gateway),
        }
    }
}
