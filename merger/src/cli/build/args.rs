//! `fmerge build`'s options ([`BuildArgs`], each defined once) and the
//! build operation's request of them ([`ops::build::Request`]).

use crate::ops;
use crate::ops::build::Request;
use crate::options::layer::ExplicitFlags;
use crate::options::stack::{Select, default_stack};
use crate::options::values::MessageFormat;
use crate::options::{ImageFlags, Merge, Options, heading};
use anyhow::{Result, bail};
use clap::Args;
use fmerge_ship::ship::InputStack;
use fmerge_ship::stack_in::StackIn;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `fmerge build --help`'s examples.
const EXAMPLES: &str = "Examples:
  fmerge build write-home-timeline social-graph-get-followers
  fmerge build -f stack.yml compose-post text-service --image --push
  fmerge build --config examples/write-home-timeline.toml --opt-level 2
  fmerge build -f stack.yml --all --filter 'compose-*'";

/// `fmerge build`'s options, each defined once (a group file holds the
/// same, by the flags' names: [`crate::group`]).
#[derive(Args, Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "kebab-case")]
#[command(after_help = EXAMPLES)]
pub struct BuildArgs {
    /// The function whose main the merged binary runs.
    pub caller: Option<String>,
    /// The merge options (the same in a group file).
    #[command(flatten)]
    #[serde(flatten)]
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
    /// A faas-cli stack file: functions are found by their entries (`handler:`
    /// folder), and a merged stack is written beside it (with --image or --push)
    /// [default: ./stack.yaml, then ./stack.yml, when neither --manifest-path,
    /// --config nor --plan says where the functions are].
    #[arg(short = 'f', long = "yaml", value_name = "STACK", value_hint = clap::ValueHint::FilePath,
          help_heading = heading::INPUT)]
    pub yaml: Option<PathBuf>,
    /// With --all: which of the stack's functions are planned.
    #[command(flatten)]
    #[serde(flatten)]
    pub select: Select,
    /// In the merged stack, drop the callees' own entries (by default they stay
    /// deployed, since other callers may still call them over the gateway).
    #[arg(long, help_heading = heading::IMAGE)]
    pub remove_callees: bool,
    /// What stdout gets: the paths written (the binary's last), or one JSON
    /// record a line, the last `"reason": "finished"`. Progress and warnings
    /// always go to stderr.
    #[arg(long, value_name = "FMT", default_value = "human", help_heading = heading::OUTPUT)]
    pub message_format: MessageFormat,
    /// The image options (in a group file, its `[image]` table).
    #[command(flatten)]
    #[serde(rename = "image")]
    pub ship: ImageFlags,
}

impl Default for BuildArgs {
    fn default() -> Self {
        crate::options::layer::defaults()
    }
}

/// Where the functions are when nothing says: the stack file in the
/// current directory, if any (else the cargo workspace around it).
pub(super) fn stack_path(args: &BuildArgs) -> Option<PathBuf> {
    let said = !args.manifest_path.is_empty() || args.config.is_some() || args.plan.is_some();
    args.yaml
        .clone()
        .or_else(|| (!said).then(default_stack).flatten())
}

/// The build of one group: the command line (with `explicit` the flags it
/// gave) over the group file, where the functions are, and the image, all
/// checked before anything is built.
pub(super) fn request(args: BuildArgs, explicit: &ExplicitFlags) -> Result<Request> {
    let yaml = stack_path(&args);
    let args = match &args.config {
        Some(path) => args.under(explicit, path)?,
        None => args,
    };
    let Some(caller) = args.caller.as_deref() else {
        bail!(
            "no functions to merge\nfix: run `fmerge build <CALLER> <CALLEE>...` or `fmerge build --config <group.toml>`"
        );
    };
    let stack = yaml.as_deref().map(StackIn::load).transpose()?;
    let opts = match &stack {
        Some(stack) => {
            anyhow::ensure!(
                args.manifest_path.is_empty(),
                "-f and --manifest-path both say where the functions are\nfix: give one of them"
            );
            Options::in_stack(caller, args.merge.clone(), stack)?
        }
        None => Options::in_workspace(caller, args.merge.clone(), &args.manifest_path)?,
    };
    opts.check()?;
    let entries = match &stack {
        Some(file) => opts
            .members()
            .map(|m| file.entry(m))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    if !opts.cargo.quiet {
        say_watchdogs(&entries);
    }
    let ship = if args.ship.image || args.ship.push {
        let stack = stack.map(|file| InputStack {
            entries,
            file,
            remove_callees: args.remove_callees,
        });
        Some(ops::ship::prepare(&args.ship, &opts, stack)?)
    } else {
        // Image options given without an image are a mistake, not a no-op
        // (from the environment, such as OPENFAAS_URL, they are not given).
        for flag in ["tag", "gateway", "progress", "registry-auth", "watchdog"] {
            anyhow::ensure!(
                !explicit.by_flag(&flag.replace('-', "_")),
                "--{flag} applies to the image, and no image is built\nfix: add --image (or --push), or drop --{flag}"
            );
        }
        None
    };
    crate::preflight::check(
        &opts,
        ship.as_ref().map(|s| crate::preflight::Image {
            tag: s.tag.as_deref(),
            registry: s.registry.as_deref(),
            push: s.push.then_some(&s.auth),
        }),
    )?;
    Ok(Request {
        opts,
        ship,
        json: args.message_format == MessageFormat::Json,
    })
}

/// Says how of-watchdog runs each member the stack builds by a Dockerfile,
/// as the merged binary will be run in its place.
fn say_watchdogs(entries: &[fmerge_ship::stack_in::Entry]) {
    for e in entries {
        if let Some(w) = &e.watchdog {
            eprintln!(
                "fmerge: {}: of-watchdog runs `{}` in {} mode (from {})",
                e.name,
                w.fprocess.as_deref().unwrap_or_default(),
                w.mode,
                w.from
            );
        }
    }
}
