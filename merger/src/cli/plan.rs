//! `fmerge plan`: the command line (its plan flags, checked by their
//! parsers, are `options::plan`'s), the constraints checked against the
//! stack's functions and limits before anything is built, the graph read,
//! and the plan operation ([`crate::ops::plan`]) on them.

use super::graph::{Source, beside, graph_of};
use crate::ops::{self, absolute};
use crate::options::plan::PlanFlags;
use crate::options::{OutDir, OutputFlags, heading};
use crate::plan::{self, PlanFile};
use anyhow::{Result, bail};
use clap::Args;
use std::path::PathBuf;

/// `fmerge plan --help`'s examples.
const EXAMPLES: &str = "Examples:
  fmerge plan -f functions/stack.yml
  fmerge plan --max-memory 512Mi --keep-apart compose-post,user-service
  fmerge plan --graph callgraph/calls.json --objective calls --front";

#[derive(Args, Debug, Clone)]
#[command(after_help = EXAMPLES)]
pub struct PlanArgs {
    #[command(flatten)]
    pub source: Source,
    /// A graph written by `fmerge graph` (calls.json) instead of reading the stack's code again.
    #[arg(long, value_name = "FILE", conflicts_with = "yaml", value_hint = clap::ValueHint::FilePath,
          help_heading = heading::INPUT)]
    pub graph: Option<PathBuf>,
    /// The objective, the constraints and the search.
    #[command(flatten)]
    pub plan: PlanFlags,
    /// Where plan.toml, the group files and plan.json go.
    #[command(flatten)]
    pub files: OutDir,
    /// Value the groups of this plan file instead of searching: the report
    /// and plan.json give the figures of exactly those groups (e.g. under
    /// traffic measured after they were chosen: --metrics).
    #[arg(long, value_name = "PLAN", conflicts_with = "front", value_hint = clap::ValueHint::FilePath,
          help_heading = heading::PLAN)]
    pub evaluate: Option<PathBuf>,
    /// Also list the Pareto front (expected latency removed against what
    /// the cluster reserves, the cost objective's figure) and draw it as front.svg.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub front: bool,
    #[command(flatten)]
    pub dry_run: crate::options::DryRunFlags,
    #[command(flatten)]
    pub output: OutputFlags,
}

impl Default for PlanArgs {
    fn default() -> Self {
        crate::options::layer::defaults()
    }
}

/// `fmerge plan`: plan.toml and one group file per merge. Every flag's
/// value was checked by its parser; what is left to check needs the
/// stack's functions.
pub fn run(mut args: PlanArgs) -> Result<()> {
    args.source = args.source.with_default_stack(args.graph.as_deref());
    if args.source.stack.yaml.is_none() && args.graph.is_none() {
        bail!(
            "fmerge plan needs the application, and there is no ./stack.yml or ./stack.yaml here\nfix: give -f stack.yml, or --graph calls.json from `fmerge graph`"
        );
    }
    let planning = args.plan.planning();
    // The constraints (the model's own checks, on the stack's functions and
    // limits without calls) and the files, before the graph's build.
    if let Some(stack) = &args.source.stack.yaml {
        let stack = fmerge_ship::stack_in::StackIn::load(stack)?;
        let unbuilt = crate::graph::Graph {
            stack: Some(stack.path.clone()),
            functions: crate::graph::functions_of(
                &stack,
                args.source.select.apply(stack.names())?,
            )?
            .functions,
            ..Default::default()
        };
        plan::model(&unbuilt, &planning.constraints)?;
    }
    let evaluate = match &args.evaluate {
        Some(file) => Some(PlanFile::load(file)?.file),
        None => None,
    };
    let out = args
        .files
        .out
        .map(|d| absolute(&d))
        .unwrap_or_else(|| beside(&args.source, args.graph.as_deref(), "plan"));
    let graph = graph_of(&args.source, args.graph.as_deref())?;
    ops::plan::plan(ops::plan::Request {
        graph,
        planning,
        evaluate,
        no_dry_run: args.dry_run.no_dry_run,
        cargo: args.source.cargo,
        out,
        front: args.front,
        format: args.output.message_format,
    })
}
