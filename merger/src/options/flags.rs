//! The flags of the commands that build, each defined once as a field of a
//! struct deriving clap's `Args` (its flag, help, check, default, and key in
//! a group file, the flag without its dashes; the merge options also derive
//! serde's `Serialize`, for the merge cache's key): the merge
//! options of `fmerge build` ([`Merge`]), those `graph` and `plan` share
//! ([`CargoFlags`], [`SharedStaticFlags`], [`DryRunFlags`], [`OutDir`]), the
//! output of every command that writes files ([`OutputFlags`]) and the
//! image options ([`ImageFlags`], a group file's `[image]` table).

use super::values::{Lto, MessageFormat, Progress, RegistryAuth};
use clap::{Args, ValueHint};
use serde::Serialize;
use std::path::PathBuf;

/// `--help`'s headings, one per concern.
pub mod heading {
    pub const MERGE: &str = "Merge options";
    pub const CARGO: &str = "Build options";
    pub const IMAGE: &str = "Image options";
    pub const INPUT: &str = "Where the functions are";
    pub const OUTPUT: &str = "Output";
    pub const PLAN: &str = "Plan constraints";
}

/// The merge options of `fmerge build` (beside where the functions are,
/// the group file and the image options): the binary follows them, so each
/// is in the merge cache's key unless [`super::NOT_IN_KEY`] names it.
#[derive(Args, Serialize, Clone, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct Merge {
    /// Functions the caller invokes, to run in-process.
    #[arg(value_name = "CALLEES")]
    pub callees: Vec<String>,
    /// The merged binary's name (default: `<CALLER>-merged`).
    #[arg(long, help_heading = heading::MERGE)]
    pub name: Option<String>,
    /// Where the merged binary goes (default: `<target>/fmerge/<NAME>/`),
    /// not a folder of files as graph's and plan's --out.
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath, help_heading = heading::OUTPUT)]
    pub out: Option<PathBuf>,
    // --target-dir, -j and -q, as `fmerge graph` and `fmerge plan` take them.
    #[command(flatten)]
    #[serde(flatten)]
    pub cargo: CargoFlags,
    /// Replace FROM with TO in the string literals of callee code (one callee's with CALLEE:).
    #[arg(long, value_name = "[CALLEE:]FROM=TO", help_heading = heading::MERGE)]
    pub rewrite: Vec<String>,
    /// Also write the merged module as readable LLVM IR (`<NAME>.ll`).
    #[arg(long, help_heading = heading::OUTPUT)]
    pub emit_ll: bool,
    /// LLVM optimization level for the merged module.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3), help_heading = heading::MERGE)]
    pub opt_level: u8,
    /// LTO over the merged module [default: what profile.release.lto says;
    /// cargo's default is off].
    #[arg(long, value_name = "MODE", help_heading = heading::MERGE)]
    pub lto: Option<Lto>,
    // --allow-shared-static, as `fmerge graph` and `fmerge plan` take it.
    #[command(flatten)]
    #[serde(flatten)]
    pub sharing: SharedStaticFlags,
    /// Merge a callee that no member's code calls (no call site names it,
    /// and none computes a callee's name) instead of refusing it.
    #[arg(long, help_heading = heading::MERGE)]
    pub allow_uncalled: bool,
    /// Redo the merge even when nothing changed since the last one.
    #[arg(long, help_heading = heading::CARGO)]
    pub force: bool,
}

/// The flags of every command that builds the functions (`build`, `graph`
/// and `plan`), defined once.
#[derive(Args, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "kebab-case")]
pub struct CargoFlags {
    /// The cargo target dir [default: the workspace's; with -f or several
    /// --manifest-path, the first function's].
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath, help_heading = heading::CARGO)]
    pub target_dir: Option<PathBuf>,
    /// Parallel jobs for cargo, and for a merge at most this many objects
    /// compiled at once [default: one per core].
    #[arg(short, long, value_parser = jobs, help_heading = heading::CARGO)]
    pub jobs: Option<usize>,
    /// Print only the results: no progress, and none of cargo's lines.
    #[arg(short, long, help_heading = heading::CARGO)]
    pub quiet: bool,
}

/// `-j`'s check: one job or more.
fn jobs(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err(
            "-j 0 gives no job\nfix: give -j 1 or more, or leave -j out for one per core".into(),
        ),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e}; give a number of jobs, 1 or more")),
    }
}

/// What merged functions may share, for the build's refusal and the
/// planner's alike (`build`, `graph` and `plan`), defined once.
#[derive(Args, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "kebab-case")]
pub struct SharedStaticFlags {
    /// Let merged functions share a mutable static of a crate they all link
    /// (`crate::path::NAME`, or a crate name for all of its statics), which
    /// unmerged each had its own copy of. Repeatable.
    #[arg(long, value_name = "STATIC", help_heading = heading::MERGE)]
    pub allow_shared_static: Vec<String>,
}

/// What stdout gets, for every command that writes files (`build`,
/// `graph` and `plan`), defined once.
#[derive(Args, Clone, Copy, Debug)]
pub struct OutputFlags {
    /// What stdout gets: the paths written, one a line (a build's binary
    /// last, after a plan's report), or one JSON record a line, the last
    /// `"reason": "finished"` (a plan's report then goes to stderr).
    /// Progress and warnings always go to stderr.
    #[arg(long, value_name = "FMT", default_value = "human", help_heading = heading::OUTPUT)]
    pub message_format: MessageFormat,
}

/// The folder of files `graph` and `plan` write, defined once (`build`'s
/// `--out` is the merged binary's folder, [`Merge::out`]).
#[derive(Args, Clone, Debug, Default)]
pub struct OutDir {
    /// Where the files go [default: a folder beside the stack (or graph)
    /// file, callgraph/ for graph and plan/ for plan, or target/fmerge/ of
    /// the workspace when a workspace glob would take that folder for a
    /// crate].
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath, help_heading = heading::OUTPUT)]
    pub out: Option<PathBuf>,
}

/// `fmerge plan`'s check of its groups on the build's own input (see
/// docs/planning.md, "The build's verdict"), defined once.
#[derive(Args, Clone, Debug, Default)]
pub struct DryRunFlags {
    /// Trust the graph's verdict on every group: do not dry-run `fmerge
    /// build`'s passes on the groups whose caller's Cargo.lock is not the
    /// one the graph was built with.
    #[arg(long, help_heading = heading::PLAN)]
    pub no_dry_run: bool,
}

/// The image options of `fmerge build`'s command line; in a group file,
/// the `[image]` table (`image = true` for `--image`).
#[derive(Args, Clone, Debug, Default)]
pub struct ImageFlags {
    /// Also build a minimal OpenFaaS image in the local Docker Engine, and write stack.yml.
    #[arg(long, help_heading = heading::IMAGE)]
    pub image: bool,
    /// Build the image, then push it (implies --image).
    #[arg(long, help_heading = heading::IMAGE)]
    pub push: bool,
    /// The image reference, e.g. docker.io/you/pair:v1 or 127.0.0.1:5000/pair:v1
    /// (default: `<REGISTRY>/<NAME>:<content hash>`).
    #[arg(long, value_name = "REF", help_heading = heading::IMAGE)]
    pub tag: Option<String>,
    /// Registry and namespace for the default tag, e.g. docker.io/you.
    #[arg(long, value_name = "PREFIX", env = "FMERGE_REGISTRY", help_heading = heading::IMAGE)]
    pub registry: Option<String>,
    /// How push progress is shown [default: auto].
    #[arg(long, value_name = "MODE", help_heading = heading::IMAGE)]
    pub progress: Option<Progress>,
    /// The source revision recorded in the image labels [default: `git rev-parse HEAD`].
    #[arg(long, value_name = "REV", env = "FMERGE_SOURCE_REVISION", help_heading = heading::IMAGE)]
    pub source_revision: Option<String>,
    /// Where push credentials come from [default: auto].
    #[arg(long, value_name = "SOURCE", help_heading = heading::IMAGE)]
    pub registry_auth: Option<RegistryAuth>,
    /// The OpenFaaS gateway written into stack.yml, as faas-cli reads it.
    #[arg(short, long, value_name = "URL", env = "OPENFAAS_URL", help_heading = heading::IMAGE)]
    pub gateway: Option<String>,
    /// A static of-watchdog binary that runs the merged binary in the image
    /// of a watchdog-process group (a plain `main` per request), as it ran
    /// the caller: `fprocess` the merged binary, the caller's mode.
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath, help_heading = heading::IMAGE)]
    pub watchdog: Option<PathBuf>,
}

impl ImageFlags {
    /// The fields that ask for an image (`--image`, `--push`); the others
    /// say what it is.
    const ASK: [&str; 2] = ["image", "push"];

    /// The options that say what the image is, as (clap id, `--flag`):
    /// every field of the struct but `Self::ASK`'s, read from clap's
    /// definition, so that a new one is among them. Without an image they
    /// mean nothing.
    pub fn shaping() -> Vec<(String, String)> {
        ImageFlags::augment_args(clap::Command::new("image"))
            .get_arguments()
            .filter(|arg| !Self::ASK.contains(&arg.get_id().as_str()))
            .map(|arg| {
                let long = arg.get_long().expect("every image option is a long flag");
                (arg.get_id().to_string(), format!("--{long}"))
            })
            .collect()
    }
}
