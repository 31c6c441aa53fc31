//! `fmerge plan`: proposes the merge groups that remove the most gateway
//! hops per request, from the call graph ([`crate::graph`]) and the user's
//! constraints, and writes them as group files `fmerge build` takes.
//!
//! The model and its value are in [`model`](mod@model), the searches in [`search`].
//! Output, in `--out DIR`:
//! - `plan.toml`: `stack = "…"` (relative to the file), `hop-ms`, and one
//!   `[[group]]` table per group with exactly the keys of a group file
//!   (`caller`, `callees`, `name`), which [`PlanFile::load`] reads back;
//! - `<caller>.toml` per group, a group file as in `examples/`
//!   (`fmerge build -f STACK --config DIR/<caller>.toml`).

mod file;
pub mod front;
pub mod model;
mod report;
pub mod search;

pub use report::{Entry, entries, report, why_not};

pub use file::{PlanFile, PlanGroup};

use crate::graph::{self, Graph};
use anyhow::{Context as _, Result, bail};
use model::{MIB, Model, Plan, Set, members};
use std::collections::BTreeMap;
use std::path::Path;

/// The user's constraints.
#[derive(Debug, Clone, Default)]
pub struct Constraints {
    /// Bytes a merged pod may have (the sum of its members' limits).
    pub max_memory: Option<f64>,
    /// Bytes the whole application may reserve (every deployment, copies
    /// included).
    pub max_total_memory: Option<f64>,
    /// Sets of functions no group may hold two of.
    pub keep_apart: Vec<Vec<String>>,
}

/// Which search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Exact, or the heuristic when the exact search passes its limits.
    Auto,
    Exact,
    Heuristic,
}

/// The planner's model of `graph` under `constraints`. Without traffic,
/// each function no other calls gets one request, and each call site is
/// one call per invocation.
pub fn model(graph: &Graph, constraints: &Constraints) -> Result<Model> {
    let names: Vec<String> = graph.functions.iter().map(|f| f.name.clone()).collect();
    let index = |name: &str| names.iter().position(|n| n == name);
    let n = names.len();
    let mut m = Model {
        names: names.clone(),
        memory: graph.functions.iter().map(|f| f.memory_bytes).collect(),
        calls: vec![Vec::new(); n],
        external: vec![0.0; n],
        left_out: graph.functions.iter().map(|f| f.left_out.clone()).collect(),
        max_memory: constraints.max_memory,
        max_total_memory: constraints.max_total_memory,
        allow_shared_static: graph.allow_shared_static.clone(),
        ..Model::default()
    };
    let measured = graph.traffic.is_some();
    // Calls per invocation: observed calls over the caller's own requests.
    let mut runs = vec![0.0; n];
    if measured {
        for (i, f) in graph.functions.iter().enumerate() {
            runs[i] += f.external.unwrap_or(0.0);
        }
        for e in &graph.edges {
            if let Some(to) = e.to.as_deref().and_then(index) {
                runs[to] += e.calls.unwrap_or(0.0);
            }
        }
    }
    for e in &graph.edges {
        let (Some(from), Some(to)) = (index(&e.from), e.to.as_deref().and_then(index)) else {
            continue; // unknown callees and functions outside the stack stay remote
        };
        // From the traffic when it has both figures; from the code (a call
        // per site) when the caller's or the callee's are unknown.
        let per_call = match e.calls {
            Some(calls) if measured && runs[from] > 0.0 => calls / runs[from],
            Some(calls) if measured && calls == 0.0 => 0.0,
            _ => e.sites as f64,
        };
        m.calls[from].push((to, per_call));
        if let Some(ms) = e.hop_ms {
            m.hop_ms.insert((from, to), ms);
        }
    }
    if measured {
        for (i, f) in graph.functions.iter().enumerate() {
            m.external[i] = f.external.unwrap_or(0.0);
        }
    }
    for c in &graph.conflicts {
        if let (Some(a), Some(b)) = (index(&c.a), index(&c.b)) {
            m.apart.insert((a.min(b), a.max(b)), c.reason.clone());
        }
    }
    for set in &constraints.keep_apart {
        if set.len() < 2 {
            bail!(
                "--keep-apart {}: name two or more functions, separated by commas (--keep-apart A,B)",
                set.join(",")
            );
        }
        let mut ids = Vec::new();
        for name in set {
            let Some(i) = index(name) else {
                bail!(
                    "--keep-apart names {name}, which is not a function of the application; it has {}",
                    names.join(", ")
                );
            };
            ids.push(i);
        }
        for (k, &a) in ids.iter().enumerate() {
            for &b in &ids[k + 1..] {
                if a != b {
                    m.apart
                        .entry((a.min(b), a.max(b)))
                        .or_insert_with(|| format!("--keep-apart {}", set.join(",")));
                }
            }
        }
    }
    // A group's cap needs its possible members' limits; the application's,
    // every function's (each stays deployed).
    for (flag, given, all) in [
        ("--max-memory", constraints.max_memory.is_some(), false),
        (
            "--max-total-memory",
            constraints.max_total_memory.is_some(),
            true,
        ),
    ] {
        let missing: Vec<&str> = graph
            .functions
            .iter()
            .filter(|f| given && (all || f.left_out.is_none()) && f.memory_bytes.is_none())
            .map(|f| f.name.as_str())
            .collect();
        if !missing.is_empty() {
            bail!(
                "{flag} needs each function's memory limit, and {} set{} no `limits: memory:` in the stack file (or none fmerge reads, like 128Mi).\n\
                 Fix: set their limits, or plan without {flag}.",
                missing.join(", "),
                if missing.len() == 1 { "s" } else { "" }
            );
        }
    }
    if let Some(max) = constraints.max_total_memory
        && m.base_memory() > max * (1.0 + 1e-12)
    {
        bail!(
            "the application reserves {:.0}Mi before any merge (every function's `limits: memory:`), more than --max-total-memory {:.0}Mi allows.\n\
             Fix: raise --max-total-memory above {:.0}Mi (merging only adds copies).",
            m.base_memory() / MIB,
            max / MIB,
            m.base_memory() / MIB
        );
    }
    m.finish()?;
    if !measured {
        // After the cut: a function that calls itself, or that only its own
        // callees call back, is still an entry point.
        for i in 0..n {
            let called = m.calls.iter().any(|c| c.iter().any(|(v, _)| *v == i));
            m.external[i] = if called { 0.0 } else { 1.0 };
        }
    }
    Ok(m)
}

/// Runs the search; says which one ran.
pub fn solve(model: &Model, method: Method) -> Result<(Plan, &'static str)> {
    match method {
        Method::Heuristic => Ok((search::heuristic(model), "heuristic")),
        Method::Exact => match search::exact(model, search::Limits::default()) {
            Some(plan) => Ok((plan, "exact")),
            None => bail!(
                "the exact search is too large for this application ({} functions); use --search heuristic (or auto)",
                model.n()
            ),
        },
        Method::Auto => Ok(match search::exact(model, search::Limits::default()) {
            Some(plan) => (plan, "exact"),
            None => (
                search::heuristic(model),
                "heuristic (the exact search passed its limits)",
            ),
        }),
    }
}

/// The per-hop latency to project gains with, and where it comes from:
/// `--hop-ms`, else the per-hop figure in `bench` (the text of a
/// `bench/results.json`), else the lab notes' figure.
pub fn hop_ms(given: Option<f64>, bench: &str) -> (f64, String) {
    if let Some(ms) = given {
        return (ms, "--hop-ms".to_string());
    }
    let read = || -> Option<(f64, String)> {
        let doc: serde_json::Value = serde_json::from_str(bench).ok()?;
        let modes = doc.get("load")?.get("modes")?;
        for (mode, group) in [
            ("pinned", "chain"),
            ("pinned", "pair"),
            ("shared", "chain"),
            ("shared", "pair"),
        ] {
            if let Some(ms) = modes
                .get(mode)
                .and_then(|m| m.get(group))
                .and_then(|g| g.get("hop_cost"))
                .and_then(|h| h.get("latency_ms"))
                .and_then(serde_json::Value::as_f64)
            {
                let when = doc.get("finished").and_then(|f| f.as_str()).unwrap_or("?");
                return Some((
                    ms,
                    format!(
                        "fmerge's own bench, built in (bench/results.json: {mode} testbed, {group}: (unmerged − merged p50) ÷ critical-path hops, measured {when} UTC); measure yours with --metrics or give --hop-ms"
                    ),
                ));
            }
        }
        None
    };
    read().unwrap_or((
        DEFAULT_HOP_MS,
        "the default: 8.8 ms per invocation, measured on a cluster in the lab notes (this fmerge was built with no per-hop figure of its bench)"
            .to_string(),
    ))
}

/// The lab notes' latency of one invocation through the gateway on their
/// cluster (`../shared/reference/merge-lab-notes-2024-05.md`).
pub const DEFAULT_HOP_MS: f64 = 8.8;

/// The plan file's text.
pub fn plan_toml(
    model: &Model,
    plan: &Plan,
    stack: Option<&Path>,
    hop_ms: f64,
    how: &str,
) -> String {
    let mut out = format!(
        "# Written by `fmerge plan` ({how} search): the merge groups that remove the most gateway hops.\n\
         # Build one with `fmerge build -f STACK --config <caller>.toml` (the files beside this one).\n"
    );
    let file = PlanFile {
        stack: stack.map(Path::to_path_buf),
        hop_ms: Some(hop_ms),
        allow_shared_static: model.allow_shared_static.clone(),
        group: plan
            .merged()
            .into_iter()
            .map(|(r, set)| PlanGroup {
                caller: model.names[r].clone(),
                callees: members(set)
                    .filter(|&i| i != r)
                    .map(|i| model.names[i].clone())
                    .collect(),
                name: Some(format!("{}-merged", model.names[r])),
            })
            .collect(),
    };
    out.push_str(&toml::to_string(&file).expect("a plan serializes"));
    out
}

/// One group as a group file (the format of `examples/*.toml`).
pub fn group_toml(model: &Model, root: usize, set: Set, removed: f64) -> String {
    let callees: Vec<String> = members(set)
        .filter(|&i| i != root)
        .map(|i| format!("  \"{}\",", model.names[i]))
        .collect();
    let mut out = format!(
        "# Proposed by `fmerge plan`: {removed:.2} gateway hops removed per request of the application.\n\
         caller = \"{}\"\ncallees = [\n{}\n]\nname = \"{}-merged\"\n",
        model.names[root],
        callees.join("\n"),
        model.names[root]
    );
    if !model.allow_shared_static.is_empty() {
        // What the plan was made with, so that the build refuses no less.
        let allowed = toml::Value::from(model.allow_shared_static.clone());
        out.push_str(&format!("allow-shared-static = {allowed}\n"));
    }
    out
}

/// A memory quantity from the command line.
pub fn parse_memory(flag: &str, text: &str) -> Result<f64> {
    graph::memory_bytes(text)
        .filter(|b| *b > 0.0)
        .with_context(|| {
            format!("{flag} {text:?} is not a memory size; give one like 512Mi, 1Gi or 500M")
        })
}

/// Groups by caller name, for tests and tools.
pub fn named_groups(model: &Model, plan: &Plan) -> BTreeMap<String, Vec<String>> {
    plan.merged()
        .into_iter()
        .map(|(r, set)| (model.names[r].clone(), model.names_of(set)))
        .collect()
}

#[cfg(test)]
mod tests;
