//! `fmerge plan --front`: the plans no other beats on both counts, expected
//! latency removed and what the cluster reserves (the cost objective's
//! figure, [`Model::cost`]), found by solving for cost again under an ever
//! higher `--min-gain-ms`; as a table and a picture.

use super::model::{Model, Objective, Plan};
use super::{Method, solve};
use anyhow::Result;
use plotters::prelude::*;
use std::fmt::Write as _;

/// One plan of the front.
#[derive(Debug, Clone)]
pub struct Point {
    /// What the cluster reserves under it, as a share of the unmerged
    /// application's ([`Model::cost`]).
    pub cost: f64,
    pub plan: Plan,
}

/// The front under `model`'s caps and minimums, cheapest first. Each plan
/// is the cost search's best among those that remove more expected latency
/// than the previous one; the dominated ones (as much latency removed for
/// more) are dropped.
pub fn front(model: &Model, method: Method) -> Result<Vec<Point>> {
    let mut asked = model.clone();
    asked.constraints.objective = Objective::Cost;
    let mut points: Vec<Point> = Vec::new();
    loop {
        // A gain no plan reaches ends the front.
        let Ok((plan, _)) = solve(&asked, method) else {
            break;
        };
        let more = plan.gain_ms + 1e-6;
        if asked.constraints.min_gain_ms.is_some_and(|min| more <= min) {
            break;
        }
        asked.constraints.min_gain_ms = Some(more);
        points.push(Point {
            cost: model.cost(&plan.groups),
            plan,
        });
    }
    if points.is_empty() {
        // Not even the cheapest plan meets the minimums: say why.
        solve(&asked, method)?;
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
    Ok(kept)
}

/// The front as text; `*` marks the plan written (`chosen`).
pub fn table(model: &Model, points: &[Point], chosen: &Plan) -> String {
    let mut out = String::from(
        "the Pareto front: expected latency removed per request against what the cluster reserves (cost: pods, memory and cpu requests as a share of the unmerged application's; * the plan written)\n",
    );
    let _ = writeln!(
        out,
        "  {:>8} {:>14} {:>14}  groups",
        "cost", "latency gain", "hops removed"
    );
    for p in points {
        let groups: Vec<String> = p
            .plan
            .merged()
            .iter()
            .map(|&(r, set)| format!("{}+{}", model.names[r], set.count_ones() - 1))
            .collect();
        let _ = writeln!(
            out,
            "{} {:>8.2} {:>11.2} ms {:>14.2}  {}",
            if p.plan.groups == chosen.groups {
                "*"
            } else {
                " "
            },
            p.cost,
            p.plan.gain_ms,
            p.plan.removed,
            if groups.is_empty() {
                "none".to_string()
            } else {
                groups.join(", ")
            }
        );
    }
    out
}

/// The front as an SVG picture: expected latency removed against cost, the
/// chosen plan marked.
pub fn svg(points: &[Point], chosen: &Plan) -> Result<String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (720, 440)).into_drawing_area();
        root.fill(&WHITE)?;
        let x_max = points.iter().map(|p| p.cost).fold(1.0, f64::max) * 1.1;
        let y_max = points.iter().map(|p| p.plan.gain_ms).fold(0.5, f64::max) * 1.2;
        let mut chart = ChartBuilder::on(&root)
            .caption("fmerge plan --front", ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("cost: what the cluster reserves, as a share of the unmerged application's")
            .y_desc("expected latency removed per request (ms)")
            .draw()?;
        let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.cost, p.plan.gain_ms)).collect();
        chart.draw_series(LineSeries::new(xy.iter().copied(), &BLUE))?;
        chart.draw_series(
            xy.iter()
                .map(|&(x, y)| Circle::new((x, y), 4, BLUE.filled())),
        )?;
        if let Some(p) = points.iter().find(|p| p.plan.groups == chosen.groups) {
            let at = (p.cost, p.plan.gain_ms);
            chart.draw_series(std::iter::once(Circle::new(at, 8, RED.stroke_width(2))))?;
            // Above the front (it only rises), on the side with room.
            let x = if at.0 > x_max / 2.0 {
                at.0 - x_max * 0.2
            } else {
                at.0 + x_max * 0.02
            };
            chart.draw_series(std::iter::once(Text::new(
                "the plan written",
                (x, at.1 * 1.06),
                ("sans-serif", 14).into_font().color(&RED),
            )))?;
        }
        root.present()?;
    }
    Ok(text)
}
