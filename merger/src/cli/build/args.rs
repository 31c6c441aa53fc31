//! `fmerge build`'s options ([`BuildArgs`], each defined once) and the one
//! request a build makes of them: the command line over the group file,
//! where the functions are, and the image, all checked before anything is
//! built.

use crate::options::layer::Given;
use crate::options::stack::{Select, default_stack};
use crate::options::values::{MessageFormat, Progress};
use crate::options::{ImageFlags, Merge, heading};
use anyhow::{Context as _, Result, bail};
use clap::Args;
use fmerge_ship::image;
use fmerge_ship::push;
use fmerge_ship::ship::Ship;
use fmerge_ship::stack_in;
use fmerge_ship::stack_out;
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

/// Everything one build needs, from the command line over the group file,
/// checked before anything is built: a typo in an image option must not cost
/// a whole build first.
pub(super) struct Request {
    pub(super) opts: crate::Options,
    pub(super) ship: Option<Ship>,
    pub(super) json: bool,
}

/// Where the functions are when nothing says: the stack file in the
/// current directory, if any (else the cargo workspace around it).
pub(super) fn stack_path(args: &BuildArgs) -> Option<PathBuf> {
    let said = !args.manifest_path.is_empty() || args.config.is_some() || args.plan.is_some();
    args.yaml
        .clone()
        .or_else(|| (!said).then(default_stack).flatten())
}

pub(super) fn request(args: BuildArgs, given: &Given) -> Result<Request> {
    let yaml = stack_path(&args);
    let args = match &args.config {
        Some(path) => args.under(given, path)?,
        None => args,
    };
    let Some(caller) = args.caller.clone() else {
        bail!(
            "no functions to merge\nfix: run `fmerge build <CALLER> <CALLEE>...` or `fmerge build --config <group.toml>`"
        );
    };
    let mut opts = crate::Options {
        caller: caller.clone(),
        manifest_path: None,
        sources: Vec::new(),
        merge: args.merge.clone(),
    };
    let stack_in = match &yaml {
        Some(path) => Some(stack_in::StackIn::load(path)?),
        None => None,
    };
    let members: Vec<String> = std::iter::once(&caller)
        .chain(&opts.callees)
        .cloned()
        .collect();
    let mut entries = Vec::new();
    if let Some(stack) = &stack_in {
        anyhow::ensure!(
            args.manifest_path.is_empty(),
            "-f and --manifest-path both say where the functions are\nfix: give one of them"
        );
        for name in &members {
            entries.push(stack.entry(name)?);
        }
        opts.sources = entries
            .iter()
            .map(|e| fmerge_cargo::workspace::Source {
                function: e.name.clone(),
                manifest: e.handler.join("Cargo.toml"),
            })
            .collect();
    } else if args.manifest_path.len() > 1 {
        opts.sources = fmerge_cargo::workspace::locate(&members, &args.manifest_path)?;
    } else {
        opts.manifest_path = args.manifest_path.first().cloned();
    }
    crate::pipeline::validate(&opts)?;

    let shipping = &args.ship;
    let ship = if shipping.image || shipping.push {
        let progress: push::Progress = if opts.cargo.quiet {
            push::Progress::Quiet
        } else {
            shipping.progress.unwrap_or(Progress::Auto).into()
        };
        if let Some(gateway) = &shipping.gateway {
            stack_out::validate_gateway(gateway)?;
        }
        stack_out::validate_function_name(&opts.label())
            .context("the merge name (--name) is also the image's name")?;
        for member in &members {
            stack_out::validate_function_name(member)?;
        }
        if let Some(tag) = &shipping.tag {
            let reference = image::ImageRef::parse(tag)?;
            anyhow::ensure!(
                reference.digest().is_none(),
                "cannot tag an image with a digest reference ({tag})\nfix: give a tag like `repo/name:v1`"
            );
            if shipping.push {
                reference.check_pushable()?;
            }
        }
        let stack = stack_in.map(|s| (s, entries, args.remove_callees));
        Some(Ship {
            tag: shipping.tag.clone(),
            registry: shipping.registry.clone().filter(|p| !p.is_empty()),
            push: shipping.push,
            auth: shipping.registry_auth.map(Into::into).unwrap_or_default(),
            progress,
            gateway: shipping.gateway.clone(),
            revision: shipping.source_revision.clone(),
            dockerfile: crate::assets::DOCKERFILE,
            stack,
        })
    } else {
        // Image options given without an image are a mistake, not a no-op
        // (from the environment, such as OPENFAAS_URL, they are not given).
        for flag in ["tag", "gateway", "progress", "registry-auth"] {
            anyhow::ensure!(
                !given.by_flag(&flag.replace('-', "_")),
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

/// The options `fmerge build -f STACK` merges a plan's group with, by the
/// same code as a build (`fmerge plan`'s dry run checks exactly those).
pub(in crate::cli) fn group_options(
    stack: &std::path::Path,
    caller: &str,
    callees: &[String],
    cargo: &crate::options::Cargo,
    sharing: &crate::options::Sharing,
) -> Result<crate::Options> {
    let mut args = BuildArgs {
        caller: Some(caller.to_string()),
        yaml: Some(stack.to_path_buf()),
        ..BuildArgs::default()
    };
    args.merge.callees = callees.to_vec();
    args.merge.cargo = cargo.clone();
    args.merge.sharing = sharing.clone();
    // The planner's groups are the graph's calls, read from the bitcode.
    args.merge.allow_uncalled = true;
    Ok(request(args, &Given::default())?.opts)
}
