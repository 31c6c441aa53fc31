//! What the cluster pays under a plan, as `fmerge plan` reports it and
//! writes it: pods, requests and limits before → after, which callees'
//! deployments are dropped and why the others stay, and each merged pod's
//! requests and limits with where each figure comes from. The rules are
//! the model's (`fmerge_plan::model::cost`); this file only shows them.

use super::model::{Kept, Model, Plan, Reserved, Resource, RootedGroup, Set, bit};
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
pub fn pod_quantities(model: &Model, root: usize, set: Set) -> [BTreeMap<String, String>; 2] {
    let pod = model.pod(root, set);
    [pod.requests, pod.limits].map(|figures| {
        [("memory", Resource::Memory), ("cpu", Resource::Cpu)]
            .iter()
            .filter_map(|&(key, r)| {
                let amount = figures[r.index()].amount?;
                Some((key.to_string(), fmerge_ship::quantity::format(key, amount)))
            })
            .collect()
    })
}

/// Why a callee's deployment stays, in words.
fn why_kept(model: &Model, kept: Kept) -> String {
    match kept {
        Kept::NoCopy => "no group holds a copy of it".into(),
        Kept::Root => "it roots a group".into(),
        Kept::Declared => "a declared entry point (com.openfaas.fmerge.entry)".into(),
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
    }
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
    let dropped = model.names_of(model.dropped(&plan.groups));
    if !dropped.is_empty() {
        let _ = writeln!(
            out,
            "deployments dropped (only their groups call them, in-process): {}",
            dropped.join(", ")
        );
    }
    for (i, why) in kept.iter().enumerate() {
        if let Some(why) = why.filter(|w| !matches!(w, Kept::NoCopy | Kept::Root)) {
            let _ = writeln!(
                out,
                "  {} stays deployed: {}",
                model.names[i],
                why_kept(model, why)
            );
        }
    }
    for RootedGroup { root: r, set } in plan.merged() {
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
        .map(|RootedGroup { root: r, set }| {
            let pod = model.pod(r, set);
            let figure = |f: super::model::Figure| {
                serde_json::json!({"amount": f.amount, "from": f.from.name()})
            };
            serde_json::json!({
                "caller": model.names[r],
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
        "pods": pods,
    })
}
