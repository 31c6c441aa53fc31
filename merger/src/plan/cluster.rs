//! What the cluster pays under a plan, as `fmerge plan` reports it and
//! writes it: pods, requests and limits before → after, which callees'
//! deployments are dropped and why the others stay, and each merged pod's
//! requests and limits with where each figure comes from. The rules are
//! the model's (`fmerge_plan::model::cost`); this file only shows them.

use super::model::{
    CallEdge, CallerGroup, Kept, Model, Plan, Reserved, Resource, Set, Unproven, bit,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One row of plan.json's `reserved`: what the deployments reserve of one
/// figure, before any merge and under the plan.
#[derive(Debug, Clone, Serialize)]
pub struct Reservation {
    /// `pods`, `memory limits`, `cpu limits`, `memory requests`, `cpu requests`.
    pub what: &'static str,
    pub before: f64,
    pub after: f64,
    /// The total cap asked for (`--max-total-memory`, `--max-total-cpu`).
    pub cap: Option<f64>,
    #[serde(skip)]
    resource: Option<Resource>,
    #[serde(skip)]
    flag: Option<&'static str>,
}

impl Reservation {
    fn show(&self, x: f64) -> String {
        match self.resource {
            Some(r) => r.show(x),
            None => format!("{x}"),
        }
    }
}

/// What every deployment reserves with no merge.
fn unmerged(model: &Model) -> Reserved {
    let alone: Vec<Set> = (0..model.n()).map(bit).collect();
    model.reserved(&alone)
}

/// Pods, limits and requests, before → after. A limit some deployment does
/// not set (unbounded) is left out.
pub fn reservations(model: &Model, plan: &Plan) -> Vec<Reservation> {
    let (before, after) = (unmerged(model), model.reserved(&plan.groups));
    let c = &model.constraints;
    let mut out = vec![Reservation {
        what: "pods",
        before: before.pods as f64,
        after: after.pods as f64,
        cap: None,
        resource: None,
        flag: None,
    }];
    for (what, resource, flag, cap) in [
        (
            "memory limits",
            Resource::Memory,
            "--max-total-memory",
            c.max_total_memory,
        ),
        (
            "cpu limits",
            Resource::Cpu,
            "--max-total-cpu",
            c.max_total_cpu,
        ),
    ] {
        let k = resource.index();
        if let (Some(b), Some(a)) = (before.limits[k], after.limits[k]) {
            out.push(Reservation {
                what,
                before: b,
                after: a,
                cap,
                resource: Some(resource),
                flag: Some(flag),
            });
        }
    }
    for (what, resource) in [
        ("memory requests", Resource::Memory),
        ("cpu requests", Resource::Cpu),
    ] {
        let k = resource.index();
        out.push(Reservation {
            what,
            before: before.requests[k],
            after: after.requests[k],
            cap: None,
            resource: Some(resource),
            flag: None,
        });
    }
    out
}

/// One merged pod's requests and limits as stack.yml writes them, with
/// where each comes from (the plan file's `[group.requests]` and
/// `[group.limits]`).
pub fn pod_quantities(model: &Model, caller: usize, set: Set) -> [BTreeMap<String, String>; 2] {
    let pod = model.pod(caller, set);
    [pod.requests, pod.limits].map(|figures| {
        [("memory", Resource::Memory), ("cpu", Resource::Cpu)]
            .iter()
            .filter_map(|&(key, r)| {
                // No figure of 0 is written: a request of `0m` would
                // override the namespace's default with nothing.
                let amount = figures[r.index()].amount.filter(|&a| a > 0.0)?;
                Some((key.to_string(), fmerge_ship::quantity::format(key, amount)))
            })
            .collect()
    })
}

/// Why a callee's deployment stays, in words.
fn why_kept(model: &Model, i: usize, kept: Kept) -> String {
    match kept {
        Kept::NoCopy => "no group holds a copy of it".into(),
        Kept::Caller => "it is a group's caller".into(),
        Kept::Declared => match model.connector.get(i).and_then(Option::as_ref) {
            Some(topic) => format!(
                "a connector invokes it (annotation topic: {topic}), whether or not it fired in the window"
            ),
            None => "a declared entry point (com.openfaas.fmerge.entry)".into(),
        },
        Kept::Outside => "it gets requests from outside the application".into(),
        Kept::Called { by, from } if by == from => {
            format!("{} calls it over the gateway", model.names[by])
        }
        Kept::Called { by, from } => format!(
            "{} calls it over the gateway (in {}'s deployment)",
            model.names[by], model.names[from]
        ),
        Kept::Computed(by) => format!(
            "{} calls a name computed at run time, which may be this one",
            model.names[by]
        ),
        Kept::Unproven(why) => unproven(model, why),
    }
}

/// Why nothing shows a copy's deployment unneeded, and what would.
fn unproven(model: &Model, why: Unproven) -> String {
    match why {
        Unproven::Partial => format!(
            "the plan covers part of the stack ({}), and the rest may call it; plan the whole stack to let it go",
            model.partial.as_deref().unwrap_or("a selection")
        ),
        Unproven::Undeclared => "the stack declares no entry point, so nothing shows no client calls it; label every function the application's clients call `com.openfaas.fmerge.entry: \"true\"` to let it go".into(),
        Unproven::Untraced => "no traffic was measured, so nothing shows who calls it; give --metrics (scrapes of every function's pods, a window apart) to let it go".into(),
        Unproven::Unwatched => format!(
            "the traffic ({}) does not name the caller of every request it got (an access log names none; a scrape counts callers past the runtime's first 64 as `other`); give a --metrics scrape of its pods that names them to let it go",
            model.traffic.as_deref().unwrap_or("none")
        ),
    }
}

/// What shows that nothing but its groups needs the deployment of `i`,
/// dropped under `groups`: not declared though entry points are, no
/// request from outside, and every caller the traffic saw holding it
/// in-process.
pub fn evidence(model: &Model, groups: &[Set], i: usize) -> String {
    let declared = model.labelled().count();
    let mut callers: Vec<String> = (0..model.n())
        .filter_map(|u| {
            let seen = model.seen.get(&CallEdge { from: u, to: i })?;
            Some(format!("{} {seen}", model.names[u]))
        })
        .collect();
    if callers.is_empty() {
        callers.push("none".into());
    }
    let holders: Vec<&str> = (0..model.n())
        .filter(|&r| groups[r] != bit(r) && groups[r].contains(i))
        .map(|r| model.names[r].as_str())
        .collect();
    format!(
        "not one of the {declared} declared entry points; {}: no request from outside, calls from {}; held in-process by {}",
        model.traffic.as_deref().unwrap_or("no traffic"),
        callers.join(", "),
        holders.join(", ")
    )
}

/// The report's lines: before → after, the deployments dropped, why each
/// copied callee's own deployment stays, and each merged pod's figures.
pub fn report(model: &Model, plan: &Plan) -> String {
    let mut out = String::new();
    let rows: Vec<String> = reservations(model, plan)
        .iter()
        .map(|r| {
            let cap = r
                .flag
                .zip(r.cap)
                .map(|(flag, max)| format!(" ({flag} {})", r.show(max)))
                .unwrap_or_default();
            format!("{} {} → {}{cap}", r.what, r.show(r.before), r.show(r.after))
        })
        .collect();
    let _ = writeln!(
        out,
        "the cluster, before → after: {} (cost {:.2} of the unmerged application's)",
        rows.join("; "),
        model.cost(&plan.groups)
    );
    let kept = model.kept(&plan.groups);
    let dropped = model.dropped(&plan.groups);
    if dropped != Set::EMPTY {
        let _ = writeln!(
            out,
            "deployments dropped (only their groups call them, in-process): {}",
            model.names_of(dropped).join(", ")
        );
        for i in dropped.iter() {
            let _ = writeln!(
                out,
                "  {} goes: {}",
                model.names[i],
                evidence(model, &plan.groups, i)
            );
        }
    }
    for (i, why) in kept.iter().enumerate() {
        if let Some(why) = why.filter(|w| !matches!(w, Kept::NoCopy | Kept::Caller)) {
            let _ = writeln!(
                out,
                "  {} stays deployed: {}",
                model.names[i],
                why_kept(model, i, why)
            );
        }
    }
    for CallerGroup { caller: r, set } in plan.merged() {
        let pod = model.pod(r, set);
        let show = |f: super::model::Figure, res: Resource| {
            f.amount.map_or("unset".to_string(), |a| {
                format!("{} ({})", res.show(a), f.from.name())
            })
        };
        let _ = writeln!(
            out,
            "  {}'s merged pod: requests {}, {}; limits {}, {}",
            model.names[r],
            show(pod.requests[0], Resource::Memory),
            show(pod.requests[1], Resource::Cpu),
            show(pod.limits[0], Resource::Memory),
            show(pod.limits[1], Resource::Cpu),
        );
        for line in sizing(model, r, set) {
            let _ = writeln!(out, "    {line}");
        }
        if model.constraints.limits_assume_apart {
            for (k, res) in [Resource::Memory, Resource::Cpu].into_iter().enumerate() {
                if let (Some(limit), Some(together)) =
                    (pod.limits[k].amount, model.together(res, r, set))
                    && limit < together
                {
                    let _ = writeln!(
                        out,
                        "    risk: its {} limit assumes its members never peak together (--limits-assume-apart); at once they may need {}",
                        ["memory", "cpu"][k],
                        res.show(together)
                    );
                }
            }
        }
    }
    out
}

/// What a merged pod's figures are not measured from, member by member:
/// those sized from the stack's figures and why, and memory taken from one
/// instant rather than the window's peak; and the members whose cpu counts
/// more than one pod's work in it (`caller`'s group `set`).
pub fn sizing(model: &Model, caller: usize, set: Set) -> Vec<String> {
    let at = |v: &[bool], i: usize| v.get(i).copied().unwrap_or(false);
    let mut out = Vec::new();
    let from_stack: Vec<String> = set
        .iter()
        .filter_map(|i| {
            let why = model.unmeasured.get(i).cloned().flatten();
            let measured = model.usage[i].iter().all(Option::is_some);
            match (why, measured) {
                (Some(why), _) => Some(format!("{} ({why})", model.names[i])),
                (None, false) => Some(format!(
                    "{} ({})",
                    model.names[i],
                    match model.usage[i] {
                        [Some(_), None] =>
                            "no cpu measured: --metrics URL of each pod, or two timestamped scrapes a window apart, measure it",
                        _ => "not scraped",
                    }
                )),
                (None, true) => None,
            }
        })
        .collect();
    if !from_stack.is_empty() {
        out.push(format!(
            "sized from the stack's figures (requests, else limits): {}",
            from_stack.join(", ")
        ));
    }
    let instant: Vec<&str> = set
        .iter()
        .filter(|&i| at(&model.instant, i) && model.usage[i][0].is_some())
        .map(|i| model.names[i].as_str())
        .collect();
    if !instant.is_empty() {
        out.push(format!(
            "memory of {} from one scrape: one instant, not the window's peak; give --metrics URL of each pod (fmerge scrapes it over a window), or two scrapes a window apart",
            instant.join(", ")
        ));
    }
    // Only a member on more pods than the caller can carry more than one
    // pod's work: the flow is walked for those alone.
    if set
        .iter()
        .any(|i| model.replicas(i) > model.replicas(caller))
    {
        let carried = model.carried(caller, set);
        let more: Vec<String> = set
            .iter()
            .filter(|&i| carried[i] > 1.0 + 1e-9)
            .map(|i| format!("{} {:.2} pods", model.names[i], carried[i]))
            .collect();
        if !more.is_empty() {
            out.push(format!(
                "each merged pod carries more than one pod's work of {} (their replicas over {}'s, for the share of their runs the group serves): their cpu counts that many times in its requests and limits",
                more.join(", "),
                model.names[caller]
            ));
        }
    }
    out
}

/// plan.json's `cluster`: before → after, the weighed cost, the
/// deployments dropped, and each merged pod's figures with their source.
pub fn json(model: &Model, plan: &Plan) -> serde_json::Value {
    let side = |r: &Reserved| {
        serde_json::json!({
            "pods": r.pods,
            "requests": {"memory": r.requests[0], "cpu": r.requests[1]},
            "limits": {"memory": r.limits[0], "cpu": r.limits[1]},
        })
    };
    let pods: Vec<serde_json::Value> = plan
        .merged()
        .into_iter()
        .map(|CallerGroup { caller: r, set }| {
            let pod = model.pod(r, set);
            let figure = |f: super::model::Figure| {
                serde_json::json!({"amount": f.amount, "from": f.from.name()})
            };
            serde_json::json!({
                "caller": model.names[r],
                "sizing": sizing(model, r, set),
                "requests": {"memory": figure(pod.requests[0]), "cpu": figure(pod.requests[1])},
                "limits": {"memory": figure(pod.limits[0]), "cpu": figure(pod.limits[1])},
            })
        })
        .collect();
    serde_json::json!({
        "before": side(&unmerged(model)),
        "after": side(&model.reserved(&plan.groups)),
        "cost": model.cost(&plan.groups),
        "dropped": model.names_of(model.dropped(&plan.groups)),
        "evidence": evidence_by_name(model, plan),
        "pods": pods,
    })
}

/// [`evidence`] of each deployment `plan` drops, by name.
pub fn evidence_by_name(model: &Model, plan: &Plan) -> BTreeMap<String, String> {
    model
        .dropped(&plan.groups)
        .iter()
        .map(|i| (model.names[i].clone(), evidence(model, &plan.groups, i)))
        .collect()
}
