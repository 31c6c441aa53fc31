//! The `fmerge graph` and `fmerge plan` commands: flags in, files out.

use super::{Constraints, Method, PlanFile};
use crate::graph::{self, Graph, render, traffic};
use anyhow::{Context as _, Result, bail};
use clap::Args;
use std::path::{Path, PathBuf};

/// Where the call graph comes from, and its traffic.
#[derive(Args, Debug, Clone)]
pub struct Source {
    /// The faas-cli stack file of the application.
    #[arg(short = 'f', long = "yaml", value_name = "STACK")]
    pub yaml: Option<PathBuf>,
    /// Edge weights from a Prometheus text scrape of the runtime's
    /// `http_requests_total{function,caller}` counters.
    #[arg(long, value_name = "FILE", conflicts_with = "access_log")]
    pub metrics: Option<PathBuf>,
    /// Edge weights from the gateway's nginx access log (`/function/<name>` requests).
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// The cargo target dir to build in (default: the first function's).
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Parallel jobs for cargo.
    #[arg(short, long)]
    pub jobs: Option<usize>,
    /// Print only the results.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args, Debug, Clone)]
pub struct GraphArgs {
    #[command(flatten)]
    pub source: Source,
    /// Where calls.json, calls.dot and the picture go [default: callgraph/ beside the stack file].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The picture's format: svg, png, or none (drawn by Graphviz's `dot`).
    #[arg(long, value_name = "FMT", default_value = "svg", value_parser = ["svg", "png", "none"])]
    pub picture: String,
}

#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    #[command(flatten)]
    pub source: Source,
    /// A graph written by `fmerge graph` (calls.json) instead of reading the stack's code again.
    #[arg(long, value_name = "FILE", conflicts_with = "yaml")]
    pub graph: Option<PathBuf>,
    /// The memory a merged pod may have: the sum of its members' `limits: memory:` (e.g. 512Mi).
    #[arg(long, value_name = "QTY")]
    pub max_memory: Option<String>,
    /// Functions no group may hold two of, comma-separated (repeatable).
    #[arg(long, value_name = "A,B")]
    pub keep_apart: Vec<String>,
    /// The latency of one gateway hop, for the projected gain
    /// [default: bench/results.json's per-hop figure, else 8.8 ms].
    #[arg(long, value_name = "MS")]
    pub hop_ms: Option<f64>,
    /// exact, heuristic, or auto (exact unless it passes its limits).
    #[arg(long, value_name = "HOW", default_value = "auto", value_parser = ["auto", "exact", "heuristic"])]
    pub search: String,
    /// Where plan.toml and the group files go [default: plan/ beside the stack file].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Reads the graph (from the code, or a calls.json) and weighs it.
fn graph_of(source: &Source, file: Option<&Path>) -> Result<Graph> {
    // Traffic first: a bad file must not cost a build.
    let scrape = source
        .metrics
        .as_deref()
        .map(traffic::prometheus)
        .transpose()?;
    let counts = source
        .access_log
        .as_deref()
        .map(traffic::access_log_counts)
        .transpose()?;
    let mut graph = match (file, &source.yaml) {
        (Some(file), _) => Graph::load(file)?,
        (None, Some(stack)) => graph::read(
            stack,
            source.target_dir.as_deref(),
            source.jobs,
            source.quiet,
        )?,
        (None, None) => bail!(
            "no application given: run `fmerge graph -f stack.yml` (or `fmerge plan --graph calls.json`)"
        ),
    };
    let traffic = match (scrape, counts) {
        (Some(scrape), _) => Some(scrape),
        (None, Some(counts)) => {
            let edges: Vec<(String, String, usize)> = graph
                .edges
                .iter()
                .filter_map(|e| Some((e.from.clone(), e.to.clone()?, e.sites)))
                .collect();
            let log = source.access_log.as_deref().expect("counts come from it");
            Some(traffic::from_counts(
                &counts,
                &edges,
                &log.display().to_string(),
            ))
        }
        (None, None) => None,
    };
    if let Some(traffic) = traffic {
        for note in graph.weigh(&traffic) {
            if !source.quiet {
                eprintln!("fmerge: note: {note}");
            }
        }
    }
    Ok(graph)
}

/// The folder beside the stack (or graph) file.
fn beside(source: &Source, file: Option<&Path>, name: &str) -> PathBuf {
    let anchor = file.or(source.yaml.as_deref()).unwrap_or(Path::new("."));
    let dir = anchor.parent().filter(|p| !p.as_os_str().is_empty());
    absolute(&dir.unwrap_or(Path::new(".")).join(name))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

pub fn graph_command(args: GraphArgs) -> Result<()> {
    if args.source.yaml.is_none() {
        bail!("fmerge graph needs the application's stack file: fmerge graph -f stack.yml");
    }
    let graph = graph_of(&args.source, None)?;
    let out = args
        .out
        .map(|d| absolute(&d))
        .unwrap_or_else(|| beside(&args.source, None, "callgraph"));
    let json =
        fmerge_cargo::artifact::write(&out.join("calls.json"), render::json(&graph).as_bytes())?;
    let dot_text = render::dot(&graph);
    let dot = fmerge_cargo::artifact::write(&out.join("calls.dot"), dot_text.as_bytes())?;
    println!("{}", json.display());
    println!("{}", dot.display());
    if args.picture != "none" {
        let picture = out.join(format!("calls.{}", args.picture));
        render::picture(&dot_text, &args.picture, &picture)?;
        println!("{}", picture.display());
    }
    Ok(())
}

pub fn plan_command(args: PlanArgs) -> Result<()> {
    if let Some(ms) = args.hop_ms
        && !(ms.is_finite() && ms > 0.0)
    {
        bail!("--hop-ms {ms}: give the latency of one gateway hop in milliseconds, more than 0");
    }
    if args.source.yaml.is_none() && args.graph.is_none() {
        bail!(
            "fmerge plan needs the application: -f stack.yml, or --graph calls.json from `fmerge graph`"
        );
    }
    let constraints = Constraints {
        max_memory: args
            .max_memory
            .as_deref()
            .map(super::parse_memory)
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
    };
    let method = match args.search.as_str() {
        "exact" => Method::Exact,
        "heuristic" => Method::Heuristic,
        _ => Method::Auto,
    };
    let graph = graph_of(&args.source, args.graph.as_deref())?;
    let model = super::model(&graph, &constraints)?;
    let (plan, how) = super::solve(&model, method)?;
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/results.json");
    let bench = bench.canonicalize().unwrap_or(bench);
    let (hop_ms, hop_source) = super::hop_ms(args.hop_ms, &bench);
    let out = args
        .out
        .map(|d| absolute(&d))
        .unwrap_or_else(|| beside(&args.source, args.graph.as_deref(), "plan"));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let stack = graph.stack.as_deref().map(|s| relative_to(s, &out));
    let plan_file = out.join("plan.toml");
    fmerge_cargo::artifact::write(
        &plan_file,
        super::plan_toml(&model, &plan, stack.as_deref(), hop_ms, how).as_bytes(),
    )?;
    // Check what was written reads back as a plan.
    PlanFile::load(&plan_file)?;
    let (_, arrivals) = model.value(&plan.groups);
    let mut written = vec![plan_file];
    for (r, set) in plan.merged() {
        let (hops, _, _) = model.flow(r, set);
        let path = out.join(format!("{}.toml", model.names[r]));
        fmerge_cargo::artifact::write(
            &path,
            super::group_toml(&model, r, set, hops * arrivals[r]).as_bytes(),
        )?;
        written.push(path);
    }
    print!("{}", super::report(&model, &plan, how, hop_ms, &hop_source));
    for path in written {
        println!("{}", path.display());
    }
    Ok(())
}

/// `path` relative to `dir` when it lies below dir's parent chain; else absolute.
fn relative_to(path: &Path, dir: &Path) -> PathBuf {
    let (path, dir) = (absolute(path), absolute(dir));
    let common = path
        .components()
        .zip(dir.components())
        .take_while(|(a, b)| a == b)
        .count();
    if common == 0 {
        return path;
    }
    let mut out = PathBuf::new();
    for _ in dir.components().skip(common) {
        out.push("..");
    }
    for c in path.components().skip(common) {
        out.push(c);
    }
    out
}
