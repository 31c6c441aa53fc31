//! `fmerge plan --front`: the plans no other beats on both counts, expected
//! latency removed and what the cluster reserves (the cost objective's
//! figure, [`Model::cost`]), found by solving for cost again under an ever
//! higher `--min-gain-ms` ([`fmerge_plan::front`]); as a table and a
//! picture.

use super::model::{CallerGroup, Model, Objective, Plan};
use super::search::Limits;
use super::{Method, solve_within};
use anyhow::Result;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

pub use fmerge_plan::front::Point;

/// The front under `model`'s caps and minimums, cheapest first
/// ([`fmerge_plan::front::front`]), its searches all within `time_limit`.
/// Refuses when no plan meets the minimums, saying why.
pub fn front(model: &Model, method: Method, time_limit: Duration) -> Result<Vec<Point>> {
    let points = fmerge_plan::front::front(
        model,
        Limits {
            nodes: u64::MAX,
            ..Limits::default()
        },
        Instant::now() + time_limit,
    );
    if points.is_empty() {
        // Not even the cheapest plan meets the minimums: say why.
        let mut cost = model.clone();
        cost.constraints.objective = Objective::Cost;
        solve_within(&cost, method, time_limit)?;
    }
    Ok(points)
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
            .map(|&CallerGroup { caller: r, set }| {
                format!("{}+{}", model.names[r], set.count_ones() - 1)
            })
            .collect();
        let _ = writeln!(
            out,
            "{} {:>8.2} {}{:>10.2} ms {:>14.2}  {}",
            if p.plan.groups == chosen.groups {
                "*"
            } else {
                " "
            },
            p.cost,
            if p.proven { ' ' } else { '~' },
            p.plan.gain_ms,
            p.plan.removed,
            if groups.is_empty() {
                "none".to_string()
            } else {
                groups.join(", ")
            }
        );
    }
    if points.iter().any(|p| !p.proven) {
        out.push_str(
            "  (~ the best plan found within --time-limit for that gain, not proven optimal)\n",
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
