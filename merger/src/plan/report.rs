//! What `fmerge plan` prints: each group, why a reachable callee stays
//! remote, and per entry point the hops and the projected latency gain.

use super::model::{Apart, CallEdge, CallerGroup, Hops, MIB, Model, Plan, Set, bit, members};
use serde::Serialize;
use std::fmt::Write as _;

/// Why `v` is not in `caller`'s group `set`.
pub fn why_not(model: &Model, caller: usize, set: Set, v: usize) -> String {
    if let Some(reason) = &model.left_out[v] {
        return reason.clone();
    }
    for u in members(set) {
        if let Some(reason) = model.apart.get(&Apart::new(u, v)) {
            return format!("cannot share a binary with {}: {reason}", model.names[u]);
        }
    }
    if !model.feasible(set | bit(v)) {
        return "the group's memory would pass --max-memory".to_string();
    }
    if v == caller {
        return "it is the group's own caller".to_string();
    }
    if model.slower(caller, set | bit(v)) {
        return format!(
            "merged, its cpu would queue with the group's on {}'s one task, and {0}'s requests would take longer than its gateway hops do",
            model.names[caller]
        );
    }
    model.constraints.objective.why_not().to_string()
}

/// One entry point's figures under a plan.
#[derive(Debug, Clone, Serialize)]
pub struct EntryPoint {
    pub function: String,
    /// Its share of the application's requests (the shares add up to 1).
    pub share: f64,
    pub critical_before: f64,
    pub critical_after: f64,
    pub total_before: f64,
    pub total_after: f64,
    /// The critical path's cost removed, each gateway call at its measured
    /// cost (else hop-ms): the gain with the calls in the rounds the code
    /// makes them; were every call made one after another, up to
    /// `latency_gain_max_ms` (every call's cost).
    pub latency_gain_ms: f64,
    pub latency_gain_max_ms: f64,
}

pub fn entries(model: &Model, plan: &Plan) -> Vec<EntryPoint> {
    model
        .entries()
        .into_iter()
        .map(|e| {
            let Hops {
                critical_before,
                critical_after,
                total_before,
                total_after,
            } = model.hops(e, &plan.groups);
            let ms = model.latency(e, &plan.groups);
            EntryPoint {
                function: model.names[e].clone(),
                share: model.external[e],
                critical_before,
                critical_after,
                total_before,
                total_after,
                latency_gain_ms: ms.critical_before - ms.critical_after,
                latency_gain_max_ms: ms.total_before - ms.total_after,
            }
        })
        .collect()
}

/// The report printed after planning.
pub fn report(model: &Model, plan: &Plan, how: &str, hop_source: &str) -> String {
    let mut out = String::new();
    let hop_ms = model.constraints.hop_ms;
    let arrivals = model.value(&plan.groups).arrivals;
    let _ = writeln!(
        out,
        "search: {how}; objective: {} ({})",
        model.constraints.objective.name(),
        model.constraints.objective.says()
    );
    let _ = writeln!(out, "{}", bound_line(model, plan));
    let dropped = model.dropped(&plan.groups);
    for CallerGroup { caller: r, set } in plan.merged() {
        let hops = model.flow(r, set).removed;
        let memory: Option<f64> = members(set).map(|i| model.memory[i]).sum();
        let _ = writeln!(
            out,
            "group {}: {} ({:.2} hops removed per request it gets, {:.2} requests per request of the application{})",
            model.names[r],
            model.names_of(set).join(", "),
            hops,
            arrivals[r],
            memory
                .map(|b| format!(", {:.0}Mi", b / MIB))
                .unwrap_or_default()
        );
        // A group no request reaches removes nothing: it is there so that
        // its callees' own deployments can go.
        let goes = model.names_of(set & dropped);
        if arrivals[r] == 0.0 && !goes.is_empty() {
            let _ = writeln!(
                out,
                "  no request reaches {}: its group holds {} so that {} own deployment can go",
                model.names[r],
                goes.join(", "),
                if goes.len() == 1 { "its" } else { "their" }
            );
        }
    }
    out.push_str(&super::cluster::report(model, plan));
    // Why a callee a group could reach is not in it.
    for (r, &arrived) in arrivals.iter().enumerate() {
        if arrived == 0.0 || model.callees(r).next().is_none() {
            continue;
        }
        let set = plan.groups[r];
        let mut told = Vec::new();
        for u in members(set) {
            for v in model.callees(u) {
                if !set.contains(v) && !told.contains(&v) {
                    told.push(v);
                    let _ = writeln!(
                        out,
                        "  {} stays remote from {}: {}",
                        model.names[v],
                        model.names[r],
                        why_not(model, r, set, v)
                    );
                }
            }
        }
    }
    if model.measured {
        let _ = writeln!(out, "note: {}", rates_note(model));
    }
    for &CallEdge { from: u, to: v } in &model.cycles {
        let _ = writeln!(
            out,
            "note: the call {} → {} closes a cycle, a call back to a function the request runs in already: in-process where the caller's merged process holds {1} (the group's caller included), and taken to make no call of its own",
            model.names[u], model.names[v]
        );
    }
    for &CallEdge { from: u, to: v } in &model.unplaced {
        let _ = writeln!(
            out,
            "note: the order of {}'s calls of {} is not read from its code or a call log: taken as one call after another on the critical path",
            model.names[u], model.names[v]
        );
    }
    for &i in &model.assumed {
        let _ = writeln!(
            out,
            "note: the traffic has no figures for {}, which no function calls: planned as an entry point with the measured entry points' mean of requests",
            model.names[i]
        );
    }
    if !model.measured {
        let _ = writeln!(
            out,
            "note: no traffic given (--metrics or --access-log): each function no other calls is taken to get an equal share of the requests, every call site to be made once per invocation (a looped one once), every branch to be taken"
        );
    }
    let _ = writeln!(out, "per-hop latency: {hop_ms} ms, from {hop_source}");
    for (&CallEdge { from: u, to: v }, ms) in &model.measured_hop_ms {
        let _ = writeln!(
            out,
            "  {} → {}: {ms:.2} ms per call, measured ({})",
            model.names[u],
            model.names[v],
            crate::graph::traffic::HOP_MEASURED
        );
    }
    service_lines(model, &mut out);
    let _ = writeln!(
        out,
        "per entry point, gateway hops before → after: on the critical path (each function's calls in the rounds its code, or a call log, shows: \
         a round's calls at once, one round after another) and in all; \
         the latency gain lies between the critical path's cost removed and every call's cost removed (were every call made one after another), \
         a call at its measured cost where there is one, else {hop_ms} ms"
    );
    let width = model
        .names
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(11)
        .max(11);
    let _ = writeln!(
        out,
        "{:<width$} {:>9} {:>14} {:>14} {:>20}",
        "entry point", "share", "critical path", "in all", "latency gain"
    );
    for e in entries(model, plan) {
        let _ = writeln!(
            out,
            "{:<width$} {:>9} {:>14} {:>14} {:>17} ms",
            e.function,
            trim(e.share),
            format!("{} → {}", trim(e.critical_before), trim(e.critical_after)),
            format!("{} → {}", trim(e.total_before), trim(e.total_after)),
            format!("{:.2}–{:.2}", e.latency_gain_ms, e.latency_gain_max_ms)
        );
    }
    let _ = writeln!(
        out,
        "in all: {} gateway hops removed per request of the application, and {:.2} ms of expected latency",
        trim(plan.removed),
        plan.gain_ms
    );
    out
}

/// The functions' own time the latency figures count, where measured.
fn service_lines(model: &Model, out: &mut String) {
    if model.own_ms.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "service time: each function's own time per request (its handler's time, else its serving time, less its calls as they ran) is on every critical path through it; merged, its cpu runs on its caller's task, one burst at a time, so a group whose calls would queue there longer than the hops it removes is in no plan"
    );
    for i in (0..model.n()).filter(|&i| model.own(i) > 1e-9) {
        let _ = writeln!(
            out,
            "  {}: {:.2} ms own, {:.2} ms of it cpu",
            model.names[i],
            model.own(i),
            model.busy(i)
        );
    }
}

/// The best figure any plan can reach by the objective, known without a
/// search ([`Model::trivial_bound`]), in the objective's own figure (ms or
/// calls removed, at most; bytes of copies or the cost, at least), and the
/// plan's gap to it.
fn bound_and_gap(model: &Model, plan: &Plan) -> (f64, f64) {
    use super::model::{Figures, Objective, Resource};
    let objective = model.constraints.objective;
    let bound = model.trivial_bound();
    let score = objective.score(&Figures {
        removed: plan.removed,
        gain_ms: plan.gain_ms,
        copies: (0..model.n())
            .map(|r| model.copies(Resource::Memory, r, plan.groups[r]))
            .sum(),
        cost: model.cost(&plan.groups),
    });
    let shown = match objective {
        Objective::Latency | Objective::Calls => bound,
        // Scored as their negatives (less is better); `+ 0.0` shows -0 as 0.
        Objective::Memory | Objective::Cost => -bound + 0.0,
    };
    (shown, (bound - score).max(0.0))
}

/// The report's line on the bound: the best figure any plan can reach, and
/// how far this plan is from it (a plan at it is proven, whatever the
/// search).
pub(super) fn bound_line(model: &Model, plan: &Plan) -> String {
    use super::model::{Objective, Resource};
    let (bound, gap) = bound_and_gap(model, plan);
    match model.constraints.objective {
        Objective::Latency => {
            let floor = match model.own_ms.is_empty() {
                true => "every critical path at 0",
                false => "every critical path down to its functions' own time",
            };
            format!("bound: at most {bound:.2} ms removed per request ({floor}); gap {gap:.2} ms")
        }
        Objective::Calls => format!(
            "bound: at most {bound:.2} gateway calls removed per request (every call in-process); gap {gap:.2}"
        ),
        Objective::Memory => format!(
            "bound: copies reserve at least {} (none); gap {}",
            Resource::Memory.show(bound),
            Resource::Memory.show(gap)
        ),
        Objective::Cost => format!(
            "bound: the cluster reserves at least {bound:.2} of the unmerged application's (a pod for each deployment that stays whatever merges, at the least it can request); gap {gap:.2}"
        ),
    }
}

/// plan.json: the plan's figures for programs (the bench puts them beside
/// what it measures): per entry point the hops and latency gain, and what
/// the cluster reserves before → after ([`super::cluster`]).
pub fn json(model: &Model, plan: &Plan, how: &str) -> String {
    let value = serde_json::json!({
        "search": how,
        "bound": bound_and_gap(model, plan).0,
        "gap": bound_and_gap(model, plan).1,
        "objective": model.constraints.objective.name(),
        "removed": plan.removed,
        "gain_ms": plan.gain_ms,
        "entries": entries(model, plan),
        "reserved": super::cluster::reservations(model, plan),
        "cluster": super::cluster::json(model, plan),
    });
    serde_json::to_string_pretty(&value).expect("plain numbers and strings") + "\n"
}

fn trim(n: f64) -> String {
    if (n - n.round()).abs() < 1e-9 {
        format!("{}", n.round())
    } else {
        format!("{n:.2}")
    }
}

/// Where the calls per invocation come from: per call path (the call log's
/// parent requests), or each caller's average, which prices a call one
/// caller's path makes on every path.
fn rates_note(model: &Model) -> String {
    match &model.paths {
        Some(log) => format!(
            "calls per invocation are per call path on the {} paths {log} names parent requests for, and each caller's average over all its runs elsewhere",
            model.via.len()
        ),
        None => "calls per invocation are each caller's average over all its runs, whoever called it, so a call made on one caller's path only is priced on every path; a call log whose records name their parent request (--call-log) gives rates per call path".to_string(),
    }
}
