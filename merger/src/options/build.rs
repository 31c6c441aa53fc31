//! `fmerge build`'s options ([`BuildArgs`]), each defined once: the command
//! line's, and a group file's by the same names (`group.rs` reads one).

use super::stack::{Select, StackFile};
use super::{ImageFlags, Merge, OutputFlags, heading};
use clap::Args;
use std::path::PathBuf;

/// `fmerge build --help`'s examples.
const EXAMPLES: &str = "Examples:
  fmerge build write-home-timeline social-graph-get-followers
  fmerge build -f stack.yml compose-post text-service --image --push
  fmerge build --config examples/write-home-timeline.toml --opt-level 2
  fmerge build -f stack.yml --all --filter 'compose-*'";

/// `fmerge build`'s options, each defined once (a group file holds the
/// same, by the flags' names).
#[derive(Args, Clone, Debug)]
#[command(after_help = EXAMPLES)]
pub struct BuildArgs {
    /// The function whose main the merged binary runs.
    pub caller: Option<String>,
    /// The merge options (the same in a group file).
    #[command(flatten)]
    pub merge: Merge,
    /// Build every group of a plan (`fmerge plan`'s plan.toml) with ONE cargo
    /// build (one per lock file when the callers' projects lock differently),
    /// merging the groups in parallel; with --image/--push, one
    /// stack.merged.yml for the whole application.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          conflicts_with_all = ["caller", "config", "all"], help_heading = heading::INPUT)]
    pub plan: Option<PathBuf>,
    /// Plan the application of the stack file with the default constraints
    /// (into plan/ beside it), then build every group as --plan does.
    #[arg(long, conflicts_with_all = ["caller", "config"], help_heading = heading::INPUT)]
    pub all: bool,
    /// A merge group file (TOML); command-line options override it.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = heading::INPUT)]
    pub config: Option<PathBuf>,
    /// A Cargo.toml of the functions' workspace [default: the one around the
    /// current directory]. Repeat it for functions in separate projects.
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath, help_heading = heading::INPUT)]
    pub manifest_path: Vec<PathBuf>,
    #[command(flatten)]
    pub stack: StackFile,
    /// With --all: which of the stack's functions are planned.
    #[command(flatten)]
    pub select: Select,
    /// In the merged stack, drop the callees' own entries (by default they stay
    /// deployed, since other callers may still call them over the gateway).
    #[arg(long, help_heading = heading::IMAGE)]
    pub remove_callees: bool,
    #[command(flatten)]
    pub output: OutputFlags,
    /// The image options (in a group file, its `[image]` table).
    #[command(flatten)]
    pub image: ImageFlags,
}

impl Default for BuildArgs {
    fn default() -> Self {
        super::layer::defaults()
    }
}
