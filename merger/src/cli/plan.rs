//! `fmerge plan`: the command line checked into the team's constraints
//! (before anything is built: the flags' values, then the constraints
//! against the stack's functions and limits), the graph read, and the plan
//! operation ([`crate::ops::plan`]) on them.

use super::graph::{Source, beside, graph_of};
use crate::ops::{self, absolute};
use crate::options::heading;
use crate::options::values::{MessageFormat, Objective, Search};
use crate::plan::{self, Constraints, PlanFile};
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
    /// The memory a merged pod may have: the sum of its members' `limits: memory:` (e.g. 512Mi).
    #[arg(long, value_name = "QTY", help_heading = heading::PLAN)]
    pub max_memory: Option<String>,
    /// The memory the whole application may reserve: the `limits: memory:` of
    /// every deployment the plan leaves (merged pods at their own limits,
    /// the callees' deployments it drops not counted) (e.g. 4Gi).
    #[arg(long, value_name = "QTY", help_heading = heading::PLAN)]
    pub max_total_memory: Option<String>,
    /// The cores the whole application may reserve: `limits: cpu:`, counted
    /// as --max-total-memory counts memory (e.g. 4, 2500m).
    #[arg(long, value_name = "QTY", help_heading = heading::PLAN)]
    pub max_total_cpu: Option<String>,
    /// What the plan is for: latency (the expected latency removed, on each
    /// entry point's critical path, weighted by its requests), calls (the
    /// gateway calls removed), memory (the least memory copies reserve
    /// for the gain --min-gain-ms / --min-calls-removed ask), or cost (the
    /// least the cluster reserves: pods, memory and cpu requests).
    #[arg(long, value_name = "WHAT", default_value = "latency", help_heading = heading::PLAN)]
    pub objective: Objective,
    /// The least expected latency the plan must remove, ms per request.
    #[arg(long, value_name = "MS", help_heading = heading::PLAN)]
    pub min_gain_ms: Option<f64>,
    /// The fewest gateway calls the plan must remove per request.
    #[arg(long, value_name = "N", help_heading = heading::PLAN)]
    pub min_calls_removed: Option<f64>,
    /// Functions no group may hold two of, comma-separated (repeatable).
    #[arg(long, value_name = "A,B", help_heading = heading::PLAN)]
    pub keep_apart: Vec<String>,
    /// Set a merged pod's limits as if its members never peak together:
    /// each keeps the room it had alone beside what the others use (lower
    /// limits, at the risk of an out-of-memory kill when they do) [default:
    /// limits that hold when every member peaks at once].
    #[arg(long, help_heading = heading::PLAN)]
    pub limits_assume_apart: bool,
    /// The latency of one gateway hop, for the projected gain
    /// [default: fmerge's bench figure, which the report prints].
    #[arg(long, value_name = "MS", help_heading = heading::PLAN)]
    pub hop_ms: Option<f64>,
    /// Which search makes the plan.
    #[arg(long, value_name = "HOW", default_value = "auto", help_heading = heading::PLAN)]
    pub search: Search,
    /// The seconds the search may take (and --front's, again): past them,
    /// the best plan found, which the report says is not proven optimal.
    #[arg(long, value_name = "SECONDS", default_value_t = plan::search::DEFAULT_TIME_LIMIT.as_secs_f64(),
          help_heading = heading::PLAN)]
    pub time_limit: f64,
    /// Where plan.toml and the group files go [default: plan/ beside the stack file,
    /// or target/fmerge/plan when a workspace glob would take that folder for a crate].
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, help_heading = heading::OUTPUT)]
    pub out: Option<PathBuf>,
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
    /// What stdout gets: the report and the paths written, or one JSON
    /// record a line (the report then goes to stderr), the last `"reason": "finished"`.
    #[arg(long, value_name = "FMT", default_value = "human", help_heading = heading::OUTPUT)]
    pub message_format: MessageFormat,
}

impl Default for PlanArgs {
    fn default() -> Self {
        crate::options::layer::defaults()
    }
}

/// `fmerge plan`: plan.toml and one group file per merge.
pub fn run(mut args: PlanArgs) -> Result<()> {
    if let Some(ms) = args.hop_ms
        && !(ms.is_finite() && ms > 0.0)
    {
        bail!(
            "--hop-ms {ms} is no latency\nfix: give the latency of one gateway hop in milliseconds, more than 0"
        );
    }
    if !(args.time_limit.is_finite() && args.time_limit > 0.0) {
        bail!(
            "--time-limit {} is no time\nfix: give the seconds the search may take, more than 0",
            args.time_limit
        );
    }
    let time_limit = std::time::Duration::from_secs_f64(args.time_limit);
    for (flag, min) in [
        ("--min-gain-ms", args.min_gain_ms),
        ("--min-calls-removed", args.min_calls_removed),
    ] {
        if let Some(v) = min
            && !(v.is_finite() && v >= 0.0)
        {
            bail!("{flag} {v} is below 0\nfix: give a number of 0 or more");
        }
    }
    args.source = args.source.with_default_stack(args.graph.as_deref());
    if args.source.yaml.is_none() && args.graph.is_none() {
        bail!(
            "fmerge plan needs the application, and there is no ./stack.yml or ./stack.yaml here\nfix: give -f stack.yml, or --graph calls.json from `fmerge graph`"
        );
    }
    let plan::HopCost {
        ms: hop_ms,
        source: hop_source,
    } = plan::hop_ms(args.hop_ms);
    let constraints = Constraints {
        objective: args.objective.into(),
        hop_ms,
        max_total_cpu: args
            .max_total_cpu
            .as_deref()
            .map(|c| plan::parse_cpu("--max-total-cpu", c))
            .transpose()?,
        min_gain_ms: args.min_gain_ms,
        min_calls_removed: args.min_calls_removed,
        max_memory: args
            .max_memory
            .as_deref()
            .map(|m| plan::parse_memory("--max-memory", m))
            .transpose()?,
        max_total_memory: args
            .max_total_memory
            .as_deref()
            .map(|m| plan::parse_memory("--max-total-memory", m))
            .transpose()?,
        keep_apart: args
            .keep_apart
            .iter()
            .map(|s| {
                s.split(',')
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .collect()
            })
            .collect(),
        limits_assume_apart: args.limits_assume_apart,
    };
    // The constraints (the model's own checks, on the stack's functions and
    // limits without calls) and the files, before the graph's build.
    if let Some(stack) = &args.source.yaml {
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
        plan::model(&unbuilt, &constraints)?;
    }
    let evaluate = match &args.evaluate {
        Some(file) => Some(PlanFile::load(file)?.file),
        None => None,
    };
    let out = args
        .out
        .map(|d| absolute(&d))
        .unwrap_or_else(|| beside(&args.source, args.graph.as_deref(), "plan"));
    let graph = graph_of(&args.source, args.graph.as_deref())?;
    ops::plan::plan(ops::plan::Request {
        graph,
        constraints,
        hop_source,
        method: args.search.into(),
        time_limit,
        evaluate,
        no_dry_run: args.dry_run.no_dry_run,
        cargo: args.source.cargo,
        out,
        front: args.front,
        format: args.message_format,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_flags_own() {
        let args = PlanArgs::default();
        assert!(args.graph.is_none() && args.max_memory.is_none() && args.hop_ms.is_none());
        assert!(args.keep_apart.is_empty() && args.source.yaml.is_none());
        assert_eq!(args.search, Search::Auto);
        // The default time limit is checked against the docs' figure
        // (merger/tests/docs.rs), not against its own expression.
        assert_eq!(args.objective, Objective::Latency);
        assert_eq!(args.message_format, MessageFormat::Human);
    }

    #[test]
    fn a_time_limit_of_no_time_is_refused_before_the_graph_is_read() {
        for bad in [0.0, -1.0, f64::NAN] {
            let args = PlanArgs {
                time_limit: bad,
                graph: Some(PathBuf::from("/nonexistent/calls.json")),
                ..PlanArgs::default()
            };
            let e = run(args).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--time-limit {bad} is no time\nfix: ")),
                "{e}"
            );
        }
    }
}
