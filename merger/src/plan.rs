//! `fmerge plan`: proposes the merge groups that serve the team's objective
//! best (`--objective`, a [`model::Objective`]: `latency`, the most expected
//! latency removed, by default; `calls`, the most gateway calls removed;
//! `memory`, the least memory for a gain; `cost`, the least the cluster
//! reserves), from the call graph
//! ([`crate::graph`]) and the user's constraints, and writes them as group
//! files `fmerge build` takes. Every figure is per request of the
//! application (`docs/planning.md`, "One unit").
//!
//! The model and its value are in [`model`](mod@model), the searches in
//! [`search`] (both in the `fmerge-plan` crate).
//! Output, in `--out DIR`:
//! - `plan.toml`: `stack = "…"` (relative to the file), `hop-ms`, and one
//!   `[[group]]` table per group with exactly the keys of a group file
//!   (`caller`, `callees`, `name`), which [`PlanFile::load`] reads back;
//! - `<caller>.toml` per group, a group file as in `examples/`
//!   (`fmerge build -f STACK --config DIR/<caller>.toml`);
//! - `plan.json`: the report's figures for programs ([`json`]).

pub mod cluster;
mod file;
pub mod front;
mod refuse;
mod report;
mod requests;
mod solution;

pub use fmerge_plan::{model, search};

pub use cluster::{Reservation, reservations};
pub use report::{EntryPoint, entries, json, report, why_not};

pub use crate::options::plan::{HopCost, hop_ms};
pub use file::{LoadedPlan, PlanFile, PlanGroup};
pub use fmerge_plan::model::DEFAULT_HOP_MS;
pub use solution::{BEST_FOUND, CAPPED, Proof, Solution};

use crate::graph::Graph;
use anyhow::{Result, bail};
use model::{Apart, CallerGroup, Model, Plan, Resource, Round, Set, members};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The user's objective and constraints, each named as its flag is.
pub use model::Constraints;

pub use search::Method;

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
        cpu: graph.functions.iter().map(|f| f.cpu).collect(),
        requests: graph
            .functions
            .iter()
            .map(|f| [f.requests_memory_bytes, f.requests_cpu])
            .collect(),
        calls: vec![Vec::new(); n],
        external: vec![0.0; n],
        left_out: graph.functions.iter().map(|f| f.left_out.clone()).collect(),
        constraints: constraints.clone(),
        declared: graph
            .functions
            .iter()
            .map(|f| f.entry || f.connector.is_some())
            .collect(),
        connector: graph
            .functions
            .iter()
            .map(|f| f.connector.clone())
            .collect(),
        computed: names
            .iter()
            .map(|name| {
                graph
                    .edges
                    .iter()
                    .any(|e| &e.from == name && e.to.is_none())
            })
            .collect(),
        usage: graph
            .functions
            .iter()
            .map(|f| match f.watchdog {
                true => [None, None],
                false => [f.usage_memory_bytes, f.usage_cpu],
            })
            .collect(),
        pods: graph
            .functions
            .iter()
            .map(|f| f.usage_pods.map(|p| p as f64))
            .collect(),
        unmeasured: graph
            .functions
            .iter()
            .map(|f| {
                let scraped = f.usage_memory_bytes.is_some() || f.usage_cpu.is_some();
                (f.watchdog && scraped).then(|| {
                    "its scrape is of-watchdog's process, not the function's: unmeasured"
                        .to_string()
                })
            })
            .collect(),
        instant: graph
            .functions
            .iter()
            .map(|f| f.usage_scrapes == Some(1))
            .collect(),
        // A watchdog-process function's process is of-watchdog's: its cpu
        // is not the function's.
        serve_ms: graph.functions.iter().map(|f| f.serve_ms).collect(),
        handler_timed: graph.functions.iter().map(|f| f.handler_timed).collect(),
        cpu_ms: graph
            .functions
            .iter()
            .map(|f| f.cpu_ms.filter(|_| !f.watchdog))
            .collect(),
        allow_shared_static: graph.allow_shared_static.clone(),
        partial: graph.partial.clone(),
        watched: graph.functions.iter().map(|f| f.watched).collect(),
        traffic: graph.traffic.clone(),
        ..Model::default()
    };
    requests::calls(graph, &mut m);
    // The order of the calls, as the code makes them (`finish` adds what
    // no round places).
    let ids = |names: &[String]| names.iter().filter_map(|c| index(c)).collect();
    m.rounds = graph
        .functions
        .iter()
        .map(|f| {
            f.rounds
                .iter()
                .map(|r| Round {
                    calls: ids(&r.calls),
                    looped: ids(&r.looped),
                })
                .collect()
        })
        .collect();
    m.apart = apart(graph, constraints, &names)?;
    refuse::unmeetable(&m)?;
    m.finish()?;
    requests::entry_points(graph, &mut m);
    sizing(&mut m)?;
    Ok(m)
}

/// The measured usage a merged pod may be sized from: a figure above the
/// function's own limit is no pod's (a pod is throttled at its cpu limit,
/// and ended at its memory limit, which counts its resident memory), so
/// the scrapes are wrong and the plan is refused, naming the cause; a
/// function the window saw no request reach is idle there, and its usage
/// says nothing of its work: its stack figures size it instead, and the
/// report says so.
fn sizing(m: &mut Model) -> Result<()> {
    let scrape = m.traffic.as_deref().unwrap_or("scrape");
    for i in 0..m.n() {
        for resource in [Resource::Memory, Resource::Cpu] {
            let (Some(used), Some(limit)) = (m.usage[i][resource.index()], m.limit(resource, i))
            else {
                continue;
            };
            if used <= limit * (1.0 + 1e-6) {
                continue;
            }
            let (name, used, shown) = (&m.names[i], resource.show(used), resource.show(limit));
            match resource {
                Resource::Cpu => bail!(
                    "{name} used {used} per pod over the window of {scrape}, above its own cpu limit of {shown}, which no pod can: the window between the scrapes is not the time their counters ran\n\
                     fix: give two scrapes of the same pods taken a window apart, with the timestamps they were taken at"
                ),
                Resource::Memory => bail!(
                    "{name} held {used} in a pod in {scrape}, above its own memory limit of {shown}, which no pod can (the kernel ends a pod at its limit): the scrape is not of the pods this stack deploys, or they run under another limit\n\
                     fix: scrape the pods of the deployments the stack describes, or set the stack's `limits: memory:` to the one they run under"
                ),
            }
        }
    }
    if m.measured {
        // A function a call back alone reaches runs all the same.
        for i in m.unreached() {
            if m.usage[i].iter().any(Option::is_some) {
                m.usage[i] = [None, None];
                m.unmeasured[i] =
                    Some("idle in the window: its usage is no measure of its work".into());
            }
        }
    }
    Ok(())
}

/// The pairs no group may hold: the graph's conflicts, then each
/// `--keep-apart` set's pairs (named in the stack, checked here).
fn apart(
    graph: &Graph,
    constraints: &Constraints,
    names: &[String],
) -> Result<BTreeMap<Apart, String>> {
    let index = |name: &str| names.iter().position(|n| n == name);
    let mut apart = BTreeMap::new();
    for c in &graph.conflicts {
        if let (Some(a), Some(b)) = (index(&c.a), index(&c.b)) {
            apart.insert(Apart::new(a, b), c.reason.clone());
        }
    }
    for set in &constraints.keep_apart {
        let place = graph
            .stack
            .as_ref()
            .map_or("the graph".to_string(), |s| s.display().to_string());
        crate::preflight::keep_apart(set, names, &place)?;
        let ids: Vec<usize> = set.iter().filter_map(|name| index(name)).collect();
        for (k, &a) in ids.iter().enumerate() {
            for &b in &ids[k + 1..] {
                if a != b {
                    apart
                        .entry(Apart::new(a, b))
                        .or_insert_with(|| format!("--keep-apart {}", set.join(",")));
                }
            }
        }
    }
    Ok(apart)
}

/// [`solve_within`] the default time limit; `Method::Exact` runs to its
/// proof instead (an hour at most), since a caller asking for the exact
/// plan must not get a refusal because the machine is busy.
pub fn solve(model: &Model, method: Method) -> Result<Solution> {
    let limit = match method {
        Method::Exact => Duration::from_secs(3600),
        _ => search::DEFAULT_TIME_LIMIT,
    };
    solve_within(model, method, limit)
}

/// Runs the search, stopped after `time_limit` (`--time-limit`); says which
/// one ran and whether its plan is proven optimal. Refuses when no plan
/// found meets the minimums, with the most any plan gains.
pub fn solve_within(model: &Model, method: Method, time_limit: Duration) -> Result<Solution> {
    let solution = search_with(model, method, time_limit)?;
    let plan = &solution.plan;
    let c = &model.constraints;
    if !model.within_caps(&plan.groups) {
        bail!(
            "no plan leaves the application within {}: it reserves {} of memory limits and {} of cpu limits with no merge, and the plans found drop too few deployments\n\
             fix: raise the cap, or plan without it",
            [
                c.max_total_memory
                    .map(|m| format!("--max-total-memory {}", Resource::Memory.show(m))),
                c.max_total_cpu
                    .map(|m| format!("--max-total-cpu {}", Resource::Cpu.show(m))),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" and "),
            Resource::Memory.show(model.base(Resource::Memory)),
            Resource::Cpu.show(model.base(Resource::Cpu)),
        );
    }
    if !model.meets(plan) {
        let mut most = model.clone();
        (
            most.constraints.min_gain_ms,
            most.constraints.min_calls_removed,
        ) = (None, None);
        most.constraints.objective = if c.min_gain_ms.is_some() {
            model::Objective::Latency
        } else {
            model::Objective::Calls
        };
        let best = search_with(&most, method, time_limit)?.plan;
        bail!(
            "no plan under these constraints removes{}{}: the most one does is {:.2} ms and {:.2} gateway calls per request\n\
             fix: lower the minimum, or loosen --max-memory, --max-total-memory, --max-total-cpu or --keep-apart",
            c.min_gain_ms
                .map(|m| format!(" {m} ms (--min-gain-ms)"))
                .unwrap_or_default(),
            c.min_calls_removed
                .map(|m| format!(" {m} gateway calls (--min-calls-removed)"))
                .unwrap_or_default(),
            best.gain_ms,
            best.removed
        );
    }
    Ok(solution)
}

fn search_with(model: &Model, method: Method, time_limit: Duration) -> Result<Solution> {
    // The deadline, not a count of nodes, ends the search.
    let limits = search::Limits {
        deadline: Some(Instant::now() + time_limit),
        nodes: u64::MAX,
        ..search::Limits::default()
    };
    if method == Method::Heuristic {
        let plan = search::heuristic_within(model, &limits);
        let plan = search::cheaper(model, plan, &limits);
        let proof = match search::at_bound(model, &plan) {
            true => Proof::HeuristicAtBound,
            false => Proof::Heuristic,
        };
        return Ok(Solution {
            plan,
            proof,
            capped: Vec::new(),
        });
    }
    let found = search::within(model, limits);
    let capped = found.capped.clone();
    let names = model.names_of(capped.iter().fold(Set::EMPTY, |s, &r| s | model::bit(r)));
    match (found.proven, capped.is_empty(), method) {
        (true, _, _) => Ok(Solution {
            plan: found.plan,
            proof: Proof::Exact,
            capped,
        }),
        (false, false, Method::Exact) => bail!(
            "the exact search cannot prove a plan for this application: {} {} more than {} possible groups, more than it enumerates\n\
             fix: use --search auto (the heuristic's group for {}, every other caller's proven), or bound the groups with --max-memory or --keep-apart",
            names.join(", "),
            if names.len() == 1 { "has" } else { "have" },
            limits.candidates,
            if names.len() == 1 { "it" } else { "them" },
        ),
        (false, true, Method::Exact) => bail!(
            "the exact search did not finish within --time-limit {}s for this application ({} functions); the best plan it found is not proven: {}\n\
             fix: raise --time-limit, or use --search auto (the best plan found in the time)",
            time_limit.as_secs_f64(),
            model.n(),
            report::bound_line(model, &found.plan),
        ),
        (false, false, _) => Ok(Solution {
            plan: found.plan,
            proof: Proof::Capped,
            capped,
        }),
        (false, true, _) => Ok(Solution {
            plan: found.plan,
            proof: Proof::BestFound,
            capped,
        }),
    }
}

/// The plan file's text.
pub fn plan_toml(model: &Model, plan: &Plan, stack: Option<&Path>, how: &str) -> String {
    let mut out = format!(
        "# Written by `fmerge plan` ({how} search, objective {}): {}.\n\
         # Build one with `fmerge build -f STACK --config <caller>.toml` (the files beside this one).\n",
        model.constraints.objective.name(),
        model.constraints.objective.says(),
    );
    let file = PlanFile {
        stack: stack.map(Path::to_path_buf),
        hop_ms: Some(model.constraints.hop_ms),
        allow_shared_static: model.allow_shared_static.clone(),
        dropped: model.names_of(model.dropped(&plan.groups)),
        evidence: cluster::evidence_by_name(model, plan),
        group: plan
            .merged()
            .into_iter()
            .map(|CallerGroup { caller: r, set }| {
                let [requests, limits] = cluster::pod_quantities(model, r, set);
                PlanGroup {
                    caller: model.names[r].clone(),
                    callees: members(set)
                        .filter(|&i| i != r)
                        .map(|i| model.names[i].clone())
                        .collect(),
                    name: Some(format!("{}-merged", model.names[r])),
                    requests,
                    limits,
                }
            })
            .collect(),
    };
    out.push_str(&toml::to_string(&file).expect("a plan serializes"));
    out
}

/// One group as a group file (the format of `examples/*.toml`).
pub fn group_toml(model: &Model, caller: usize, set: Set, removed: f64) -> String {
    let callees: Vec<String> = members(set)
        .filter(|&i| i != caller)
        .map(|i| format!("  \"{}\",", model.names[i]))
        .collect();
    let mut out = format!(
        "# Proposed by `fmerge plan`: {removed:.2} gateway hops removed per request of the application.\n\
         caller = \"{}\"\ncallees = [\n{}\n]\nname = \"{}-merged\"\n",
        model.names[caller],
        callees.join("\n"),
        model.names[caller]
    );
    if !model.allow_shared_static.is_empty() {
        // What the plan was made with, so that the build refuses no less.
        let allowed = toml::Value::from(model.allow_shared_static.clone());
        out.push_str(&format!("allow-shared-static = {allowed}\n"));
    }
    out
}

/// Groups by caller name, for tests and tools.
pub fn named_groups(model: &Model, plan: &Plan) -> BTreeMap<String, Vec<String>> {
    plan.merged()
        .into_iter()
        .map(|CallerGroup { caller: r, set }| (model.names[r].clone(), model.names_of(set)))
        .collect()
}

#[cfg(test)]
mod tests;
