//! The build's own verdict on the groups the graph's build did not see as
//! `fmerge build` does. The graph builds every function of a stack in one
//! workspace with the first function's `Cargo.lock`; `fmerge build` of a
//! group takes its caller's. Where the two differ (by path and by content:
//! projects with copies of one lock file are the same input), another
//! version of a registry or git crate may define other symbols or another
//! allocator. So such a group is built as `fmerge build` would build it, up
//! to the merged module ([`crate::pipeline::dry_run`]: no codegen), and a pair
//! it refuses is kept apart and the plan searched again, until every group
//! of the plan merges.

use crate::graph::{Conflict, Graph};
use crate::options::{self, CargoFlags, Merge, Options, SharedStaticFlags};
use crate::plan::model::{CallerGroup, Model, Plan, members};
use crate::plan::{self, Constraints, Method};
use anyhow::{Context as _, Result};
use fmerge_cargo::{resolve, workspace};
use fmerge_ship::stack_in::StackIn;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One group the dry run built, and what the build said (plan.json's
/// `dry_run` entries).
#[derive(Serialize)]
pub(super) struct Checked {
    pub caller: String,
    pub callees: Vec<String>,
    /// The caller's lock file (`None`: its project has none).
    pub lock: Option<PathBuf>,
    /// The pairs the build refuses, with its reason; empty: it merges them.
    pub refused: Vec<Conflict>,
}

/// The plan the search found, and the groups the dry run built for it.
pub(super) struct Solved {
    pub model: Model,
    pub plan: Plan,
    /// How the search found the plan (the method's name, and what it
    /// proved: [`plan::Solution::says`]).
    pub how: String,
    pub checked: Vec<Checked>,
}

/// The plan's search, then the dry run of every group whose caller's lock
/// file is not the graph's, the refused pairs added to `graph`'s conflicts,
/// and the search again, until no group is refused.
pub(super) fn solve(
    graph: &mut Graph,
    constraints: &Constraints,
    method: Method,
    time_limit: std::time::Duration,
    cargo: &CargoFlags,
) -> Result<Solved> {
    let mut checked: Vec<Checked> = Vec::new();
    let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut input: Option<StackIn> = None;
    loop {
        let model = plan::model(graph, constraints)?;
        let solution = plan::solve_within(&model, method, time_limit)?;
        let how = solution.says(&model);
        let plan = solution.plan;
        let Some(stack) = graph.stack.clone() else {
            // A graph written by hand or a test: no functions to build.
            return Ok(Solved {
                model,
                plan,
                how,
                checked,
            });
        };
        let mut refused = false;
        for CallerGroup { caller: c, set } in plan.merged() {
            let caller = model.names[c].clone();
            let callees: Vec<String> = members(set)
                .filter(|&i| i != c)
                .map(|i| model.names[i].clone())
                .collect();
            let group: Vec<String> = resolve::members(&caller, &callees)
                .map(String::from)
                .collect();
            if !seen.insert(group) {
                continue;
            }
            let file = match &mut input {
                Some(file) => file,
                None => input.insert(StackIn::load(&stack)?),
            };
            let opts = group_options(file, &caller, &callees, cargo, &graph.allow_shared_static)
                .with_context(|| format!("the dry run of {caller}'s group"))?;
            let Some(first) = opts.sources.first() else {
                continue; // one cargo workspace: one lock file
            };
            let lock = workspace::lock_of(first)?;
            if workspace::same_lock(graph.lock.as_deref(), lock.as_deref()) {
                continue;
            }
            if !cargo.quiet {
                eprintln!(
                    "fmerge: note: {caller}'s Cargo.lock is not the one the graph was built with: building its group as `fmerge build` would, to check the build merges it"
                );
            }
            let found = crate::pipeline::dry_run(&opts).with_context(|| {
                format!(
                    "the dry run of {caller}'s group ({}) could not build it as `fmerge build` would\n\
                     fix: make `fmerge build -f {} {caller} {}` build, or plan with --no-dry-run",
                    callees.join(", "),
                    stack.display(),
                    callees.join(" ")
                )
            })?;
            for c in &found {
                refused = true;
                graph.conflicts.push(Conflict {
                    reason: format!("{} (`fmerge build` with {caller}'s Cargo.lock)", c.reason),
                    ..c.clone()
                });
            }
            checked.push(Checked {
                caller,
                callees,
                lock,
                refused: found,
            });
        }
        if !refused {
            return Ok(Solved {
                model,
                plan,
                how,
                checked,
            });
        }
    }
}

/// The options `fmerge build -f STACK` merges a plan's group with (`fmerge
/// build --plan` takes the same), which the dry run checks.
fn group_options(
    stack: &StackIn,
    caller: &str,
    callees: &[String],
    cargo: &CargoFlags,
    allow_shared_static: &[String],
) -> Result<Options> {
    let mut merge: Merge = options::layer::defaults();
    merge.callees = callees.to_vec();
    merge.cargo = cargo.clone();
    merge.sharing = SharedStaticFlags {
        allow_shared_static: allow_shared_static.to_vec(),
    };
    // The planner's groups are the graph's calls, read from the bitcode.
    merge.allow_uncalled = true;
    let opts = Options::in_stack(caller, merge, stack)?;
    opts.check()?;
    crate::preflight::check(&opts, None)?;
    Ok(opts)
}

/// The report's lines for the groups checked; `graph_lock` is the lock
/// file the graph was built with.
pub(super) fn report(checked: &[Checked], graph_lock: Option<&Path>) -> String {
    let name = |lock: Option<&Path>| lock.map_or("none".to_string(), |l| l.display().to_string());
    let mut out = String::new();
    for c in checked {
        let group = resolve::members(&c.caller, &c.callees)
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!(
            "dry run of `fmerge build` on {group} (the caller's Cargo.lock: {}; the graph's: {}): {}\n",
            name(c.lock.as_deref()),
            name(graph_lock),
            if c.refused.is_empty() { "it merges them" } else { "refused; kept apart:" }
        ));
        for r in &c.refused {
            let first = r.reason.lines().next().unwrap_or_default();
            out.push_str(&format!("  {} and {}: {first}\n", r.a, r.b));
        }
    }
    out
}

/// The groups checked, for plan.json.
pub(super) fn json(checked: &[Checked]) -> serde_json::Value {
    serde_json::to_value(checked).expect("the groups checked serialize")
}
