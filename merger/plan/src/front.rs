//! The Pareto front of expected latency removed against the memory copies
//! reserve: the latency search again and again under an ever tighter total
//! memory cap, each plan's search started from what the last one found and
//! all within one deadline.

use crate::model::{Model, Objective, Plan, Resource};
use crate::search::{Limits, score, within};
use std::time::Instant;

/// One plan of the front.
#[derive(Debug, Clone)]
pub struct Point {
    /// Memory its merged pods reserve beyond every function's own deployment.
    pub copies: f64,
    pub plan: Plan,
    /// Whether the plan is the most latency any plan removes within its
    /// memory (else the best found in its share of the time).
    pub proven: bool,
}

/// The front under `model`'s caps and minimums, fewest copies first; empty
/// when no plan meets the minimums. Each plan is the latency search's best
/// within the memory the last one reserved, less a byte, given a third of
/// the time left before `deadline` (the last ones, under tight caps, are
/// the quickest); plans that remove no more latency for more memory are
/// dropped.
pub fn front(model: &Model, limits: Limits, deadline: Instant) -> Vec<Point> {
    let base = model.base(Resource::Memory);
    let mut tighter = model.clone();
    tighter.objective = Objective::Latency;
    let mut points: Vec<Point> = Vec::new();
    loop {
        let now = Instant::now();
        let share = now + deadline.saturating_duration_since(now) / 3;
        let found = within(
            &tighter,
            Limits {
                deadline: Some(limits.deadline.map_or(share, |d| d.min(share))),
                ..limits
            },
        );
        // A cap so tight that no plan meets the minimums ends the front.
        if score(&tighter, &found.plan.groups).is_none() {
            break;
        }
        let copies = copies(model, &found.plan);
        points.push(Point {
            copies,
            plan: found.plan,
            proven: found.proven,
        });
        if copies <= 0.0 {
            break;
        }
        tighter.max_total_memory = Some(base + copies - 1.0);
    }
    points.sort_by(|a, b| a.copies.total_cmp(&b.copies));
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

/// The memory a plan's copies reserve.
fn copies(model: &Model, plan: &Plan) -> f64 {
    plan.merged()
        .iter()
        .map(|&(r, set)| model.copies(Resource::Memory, r, set))
        .fold(0.0, |a, b| a + b)
}
