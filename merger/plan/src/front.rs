//! The Pareto front of expected latency removed against what the cluster
//! reserves (the cost objective's figure, [`Model::cost`]): the cost search
//! again and again under an ever higher minimum gain, each plan's search
//! started where the last one's gain left off and all within one deadline.

use crate::model::{Model, Objective, Plan};
use crate::search::{Limits, score, within};
use std::time::Instant;

/// One plan of the front.
#[derive(Debug, Clone)]
pub struct Point {
    /// What the cluster reserves under it, as a share of the unmerged
    /// application's ([`Model::cost`]).
    pub cost: f64,
    pub plan: Plan,
    /// Whether the plan is the cheapest of those that remove at least its
    /// minimum gain (else the best found in its share of the time).
    pub proven: bool,
}

/// The front under `model`'s caps and minimums, cheapest first; empty when
/// no plan meets the minimums. Each plan is the cost search's best among
/// those that remove more expected latency than the last one, given a
/// third of the time left before `deadline` (the last ones, under high
/// minimums, are the quickest); plans that remove no more latency for more
/// are dropped.
pub fn front(model: &Model, limits: Limits, deadline: Instant) -> Vec<Point> {
    let mut asked = model.clone();
    asked.constraints.objective = Objective::Cost;
    let mut points: Vec<Point> = Vec::new();
    while Instant::now() < deadline {
        let now = Instant::now();
        let share = now + deadline.saturating_duration_since(now) / 3;
        let found = within(
            &asked,
            Limits {
                deadline: Some(limits.deadline.map_or(share, |d| d.min(share))),
                ..limits
            },
        );
        // A gain no plan reaches ends the front.
        if score(&asked, &found.plan.groups).is_none() {
            break;
        }
        let more = found.plan.gain_ms + 1e-6;
        if asked.constraints.min_gain_ms.is_some_and(|min| more <= min) {
            break;
        }
        asked.constraints.min_gain_ms = Some(more);
        points.push(Point {
            cost: model.cost(&found.plan.groups),
            plan: found.plan,
            proven: found.proven,
        });
    }
    points.sort_by(|a, b| {
        a.cost
            .total_cmp(&b.cost)
            .then(b.plan.gain_ms.total_cmp(&a.plan.gain_ms))
    });
    let mut kept: Vec<Point> = Vec::new();
    for p in points {
        if kept
            .last()
            .is_none_or(|k| p.plan.gain_ms > k.plan.gain_ms + 1e-9)
        {
            kept.push(p);
        }
    }
    kept
}
