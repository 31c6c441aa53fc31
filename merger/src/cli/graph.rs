//! `fmerge graph`: the application's call graph, read from the functions'
//! code (and weighed by traffic), as JSON, DOT and a picture. Its source
//! flags and `graph_of` are `fmerge plan`'s too.

use crate::graph::{self, Graph, access_log, render, traffic};
use anyhow::{Result, bail};
use clap::Args;
use std::path::{Path, PathBuf};

/// Where the call graph comes from, and its traffic.
#[derive(Args, Debug, Clone, Default)]
pub struct Source {
    /// The faas-cli stack file of the application.
    #[arg(short = 'f', long = "yaml", value_name = "STACK")]
    pub yaml: Option<PathBuf>,
    /// Edge weights from a Prometheus text scrape of the runtime's
    /// `http_requests_total{function,caller}` counters; given twice (an
    /// earlier scrape, then a later one), the requests in between.
    #[arg(long, value_name = "FILE", conflicts_with = "access_log")]
    pub metrics: Vec<PathBuf>,
    /// Edge weights from the gateway's nginx access log (`/function/<name>` requests).
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    #[command(flatten)]
    pub cargo: crate::options::Cargo,
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

/// Reads the graph (from the code, or a calls.json) and weighs it.
pub(crate) fn graph_of(source: &Source, file: Option<&Path>) -> Result<Graph> {
    // Traffic first: a bad file must not cost a build.
    let scrape = (!source.metrics.is_empty())
        .then(|| traffic::prometheus(&source.metrics))
        .transpose()?;
    let counts = source
        .access_log
        .as_deref()
        .map(access_log::counts)
        .transpose()?;
    let mut graph = match (file, &source.yaml) {
        (Some(file), _) => Graph::load(file)?,
        (None, Some(stack)) => graph::read(
            stack,
            source.cargo.target_dir.as_deref(),
            source.cargo.jobs,
            source.cargo.quiet,
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
            Some(access_log::traffic(
                &counts,
                &edges,
                &log.display().to_string(),
            ))
        }
        (None, None) => None,
    };
    if let Some(traffic) = traffic {
        for note in graph.weigh(&traffic) {
            if !source.cargo.quiet {
                eprintln!("fmerge: note: {note}");
            }
        }
    }
    Ok(graph)
}

/// The folder beside the stack (or graph) file.
pub(crate) fn beside(source: &Source, file: Option<&Path>, name: &str) -> PathBuf {
    let anchor = file.or(source.yaml.as_deref()).unwrap_or(Path::new("."));
    let dir = anchor.parent().filter(|p| !p.as_os_str().is_empty());
    absolute(&dir.unwrap_or(Path::new(".")).join(name))
}

pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `fmerge graph`: calls.json, calls.dot and a picture.
pub fn run(args: GraphArgs) -> Result<()> {
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
