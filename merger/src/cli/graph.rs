//! `fmerge graph`: the application's call graph, read from the functions'
//! code (and weighed by traffic), as JSON, DOT and a picture. Its source
//! flags and `graph_of` are `fmerge plan`'s too.

use crate::graph::{self, Graph, access_log, call_log, render, traffic};
use crate::message::print_written;
use crate::ops::absolute;
use crate::options::stack::{Select, StackFile, default_stack};
use crate::options::values::Picture;
use crate::options::{OutDir, OutputFlags, heading};
use anyhow::{Result, bail};
use clap::Args;
use std::path::{Path, PathBuf};

/// `fmerge graph --help`'s examples.
const EXAMPLES: &str = "Examples:
  fmerge graph -f functions/stack.yml
  fmerge graph --filter 'compose-*' --picture png
  fmerge graph -f stack.yml --metrics before.txt --metrics after.txt
  fmerge graph -f stack.yml --metrics http://10.0.0.5:8081/metrics --metrics http://10.0.0.6:8081/metrics";

/// Where the call graph comes from, and its traffic.
#[derive(Args, Debug, Clone, Default)]
pub struct Source {
    #[command(flatten)]
    pub stack: StackFile,
    #[command(flatten)]
    pub select: Select,
    /// Edge weights from a Prometheus text scrape of the runtime's
    /// `http_requests_total{function,caller}` counters; given twice (an
    /// earlier scrape, then a later one), the requests in between. Or each
    /// pod's metrics endpoint (`http://POD:8081/metrics`, once per pod),
    /// which fmerge scrapes itself over --metrics-window: cpu and the
    /// memory peak measured on its own clock.
    #[arg(long, value_name = "FILE|URL", conflicts_with = "access_log", value_hint = clap::ValueHint::FilePath,
          help_heading = TRAFFIC)]
    pub metrics: Vec<PathBuf>,
    /// With --metrics URL: the seconds between fmerge's first and last
    /// scrape of the endpoints [default: 60].
    #[arg(long, value_name = "SECONDS", requires = "metrics", help_heading = TRAFFIC)]
    pub metrics_window: Option<f64>,
    /// Edge weights from the gateway's nginx access log (`/function/<name>` requests).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = TRAFFIC)]
    pub access_log: Option<PathBuf>,
    /// The order of the calls the code does not show, from the runtime's
    /// call log (`POST /calls` signed with the key on the functions'
    /// metrics ports, with FMERGE_CALL_LOG set, appended into one file; or
    /// one `GET /calls` per port after the traffic).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = TRAFFIC)]
    pub call_log: Option<PathBuf>,
    #[command(flatten)]
    pub cargo: crate::options::CargoFlags,
    /// The conflicts honour it as `fmerge build` does; the graph records it
    /// and the plan's groups carry it.
    #[command(flatten)]
    pub sharing: crate::options::SharedStaticFlags,
}

/// The heading of the traffic flags.
const TRAFFIC: &str = "Traffic";

impl Source {
    /// The stack file: -f, else ./stack.yml or ./stack.yaml (not with a
    /// graph file, which names its own).
    pub(crate) fn with_default_stack(mut self, graph: Option<&Path>) -> Source {
        if self.stack.yaml.is_none() && graph.is_none() {
            self.stack.yaml = default_stack();
        }
        self
    }
}

#[derive(Args, Debug, Clone)]
#[command(after_help = EXAMPLES)]
pub struct GraphArgs {
    #[command(flatten)]
    pub source: Source,
    /// Where calls.json, calls.dot and the picture go.
    #[command(flatten)]
    pub files: OutDir,
    /// The picture's format (drawn by Graphviz's `dot`).
    #[arg(long, value_name = "FMT", default_value = "svg", help_heading = heading::OUTPUT)]
    pub picture: Picture,
    #[command(flatten)]
    pub output: OutputFlags,
}

/// Reads the graph (from the code, or a calls.json) and weighs it.
pub(crate) fn graph_of(source: &Source, file: Option<&Path>) -> Result<Graph> {
    // Traffic first: a bad file must not cost a build.
    let say = |what: &str| {
        if !source.cargo.quiet {
            eprintln!("fmerge: {what}");
        }
    };
    // A graph file is read at once, so that a bad one costs no scrape's
    // window either.
    let loaded = file.map(Graph::load).transpose()?;
    let scrape = (!source.metrics.is_empty())
        .then(|| traffic::metrics(&source.metrics, source.metrics_window, &say))
        .transpose()?;
    let counts = source
        .access_log
        .as_deref()
        .map(access_log::counts)
        .transpose()?;
    let log = source.call_log.as_deref().map(call_log::read).transpose()?;
    let note = |note: &str| {
        if !source.cargo.quiet {
            eprintln!("fmerge: note: {note}");
        }
    };
    let mut graph = match (file.zip(loaded), &source.stack.yaml) {
        (Some((file, mut graph)), _) => {
            let given = &source.sharing.allow_shared_static;
            if !given.is_empty() && *given != graph.allow_shared_static {
                bail!(
                    "--allow-shared-static {given:?} differs from what {} was read with ({:?}), and its conflicts follow that\n\
                     fix: run `fmerge graph` again with --allow-shared-static, or drop it here",
                    file.display(),
                    graph.allow_shared_static
                );
            }
            graph.select(&source.select)?.iter().for_each(|n| note(n));
            graph
        }
        (None, Some(stack)) => graph::read(
            stack,
            source.cargo.target_dir.as_deref(),
            source.cargo.jobs,
            source.cargo.quiet,
            &source.sharing.allow_shared_static,
            &source.select,
        )?,
        (None, None) => bail!(
            "no application given, and no ./stack.yml or ./stack.yaml here\nfix: give -f stack.yml (or `fmerge plan --graph calls.json`)"
        ),
    };
    if let Some(log) = log {
        graph.order_from(&log).iter().for_each(|n| note(n));
        graph.paths_from(&log).iter().for_each(|n| note(n));
    }
    let traffic = match (scrape, counts) {
        (Some(scrape), _) => Some(scrape),
        (None, Some(counts)) => {
            let log = source.access_log.as_deref().expect("counts come from it");
            Some(access_log::traffic(
                &counts,
                &graph.edges,
                &log.display().to_string(),
            ))
        }
        (None, None) => None,
    };
    if let Some(traffic) = traffic {
        graph.weigh(&traffic).iter().for_each(|n| note(n));
    }
    Ok(graph)
}

/// The folder `name` beside the stack (or graph) file, unless a cargo
/// workspace above would take that folder for a member (a `members` glob
/// such as `functions/*`: every later cargo command there would fail on a
/// folder with no Cargo.toml); then `target/fmerge/<name>` in that
/// workspace.
pub(crate) fn beside(source: &Source, file: Option<&Path>, name: &str) -> PathBuf {
    let anchor = file
        .or(source.stack.yaml.as_deref())
        .unwrap_or(Path::new("."));
    let dir = anchor.parent().filter(|p| !p.as_os_str().is_empty());
    let out = absolute(&dir.unwrap_or(Path::new(".")).join(name));
    match workspace_claiming(&out) {
        Some(root) => root.join("target/fmerge").join(name),
        None => out,
    }
}

/// The root of the nearest cargo workspace above `dir` whose `members`
/// (less its `exclude`) name `dir`.
fn workspace_claiming(dir: &Path) -> Option<PathBuf> {
    for root in dir.ancestors().skip(1) {
        let Ok(text) = std::fs::read_to_string(root.join("Cargo.toml")) else {
            continue;
        };
        let doc: toml::Table = text.parse().ok()?;
        let Some(workspace) = doc.get("workspace").and_then(toml::Value::as_table) else {
            continue; // a package: its workspace, if any, is further up
        };
        let rel = dir.strip_prefix(root).ok()?;
        let list = |key: &str| -> Vec<String> {
            workspace
                .get(key)
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        let named = |patterns: Vec<String>| patterns.iter().any(|p| member_glob(p, rel));
        return (named(list("members")) && !named(list("exclude"))).then(|| root.to_path_buf());
    }
    None
}

/// Whether `path` matches a workspace member pattern, component by
/// component, with `*` and `?` inside a component (what such lists use).
fn member_glob(pattern: &str, path: &Path) -> bool {
    fn one(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => one(&p[1..], s) || (!s.is_empty() && one(p, &s[1..])),
            (Some(b'?'), Some(_)) => one(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => one(&p[1..], &s[1..]),
            _ => false,
        }
    }
    let parts: Vec<&str> = pattern
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let names: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.len() == names.len()
        && parts
            .iter()
            .zip(&names)
            .all(|(p, n)| one(p.as_bytes(), n.as_bytes()))
}

/// `fmerge graph`: calls.json, calls.dot and a picture.
pub fn run(mut args: GraphArgs) -> Result<()> {
    args.source = args.source.with_default_stack(None);
    if args.source.stack.yaml.is_none() {
        bail!(
            "fmerge graph needs the application's stack file, and there is no ./stack.yml or ./stack.yaml here\nfix: give it with -f: fmerge graph -f stack.yml"
        );
    }
    let graph = graph_of(&args.source, None)?;
    let out = args
        .files
        .out
        .map(|d| absolute(&d))
        .unwrap_or_else(|| beside(&args.source, None, "callgraph"));
    let json =
        fmerge_cargo::artifact::write(&out.join("calls.json"), render::json(&graph).as_bytes())?;
    let dot_text = render::dot(&graph);
    let dot = fmerge_cargo::artifact::write(&out.join("calls.dot"), dot_text.as_bytes())?;
    let records = args.output.message_format;
    print_written(&json, records);
    print_written(&dot, records);
    if let Some(format) = args.picture.format() {
        let picture = out.join(format!("calls.{format}"));
        render::picture(&dot_text, format, &picture)?;
        print_written(&picture, records);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_folder_a_workspace_glob_would_take_moves_to_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("functions")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"tool\", \"functions/*\"]\nexclude = [\"functions/plan\"]\n",
        )
        .unwrap();
        let source = |stack: &str| Source {
            stack: StackFile {
                yaml: Some(root.join(stack)),
            },
            ..Source::default()
        };
        // functions/* would take functions/callgraph: target/fmerge instead.
        assert_eq!(
            beside(&source("functions/stack.yml"), None, "callgraph"),
            root.join("target/fmerge/callgraph")
        );
        // Excluded, or named by no pattern: beside the stack.
        assert_eq!(
            beside(&source("functions/stack.yml"), None, "plan"),
            root.join("functions/plan")
        );
        assert_eq!(
            beside(&source("stack.yml"), None, "callgraph"),
            root.join("callgraph")
        );
        assert!(member_glob("functions/*", Path::new("functions/x")));
        assert!(member_glob("./crates/a?c", Path::new("crates/abc")));
        assert!(!member_glob("functions/*", Path::new("functions/x/y")));
        assert!(!member_glob("fn*", Path::new("functions2/x")));
    }
}
