//! `fmerge plan --front`: the plans no other beats on both counts, expected
//! latency removed and memory reserved by copies, found by solving for
//! latency again under an ever tighter `--max-total-memory`; as a table and
//! a picture.

use super::model::{MIB, Model, Objective, Plan, Resource};
use super::{Method, solve};
use anyhow::{Result, bail};
use plotters::prelude::*;
use std::fmt::Write as _;

/// One plan of the front.
#[derive(Debug, Clone)]
pub struct Point {
    /// Memory its merged pods reserve beyond every function's own deployment.
    pub copies: f64,
    pub plan: Plan,
}

/// The front under `model`'s caps and minimums, fewest copies first. Each
/// plan is the latency search's best within the memory left by the
/// previous one, less a byte; the dominated ones (as much latency removed
/// for more memory) are dropped.
pub fn front(model: &Model, method: Method) -> Result<Vec<Point>> {
    let missing: Vec<&str> = (0..model.n())
        .filter(|&i| model.memory[i].is_none())
        .map(|i| model.names[i].as_str())
        .collect();
    if !missing.is_empty() {
        bail!(
            "--front weighs plans by the memory they reserve, and {} set{} no `limits: memory:` in the stack file\n\
             fix: set their limits, or plan without --front",
            missing.join(", "),
            if missing.len() == 1 { "s" } else { "" }
        );
    }
    let base = model.base(Resource::Memory);
    let mut tighter = model.clone();
    tighter.objective = Objective::Latency;
    let mut points: Vec<Point> = Vec::new();
    loop {
        // A cap so tight that no plan meets the minimums ends the front.
        let Ok((plan, _)) = solve(&tighter, method) else {
            break;
        };
        let copies = plan
            .merged()
            .iter()
            .map(|&(r, set)| model.copies(Resource::Memory, r, set))
            .fold(0.0, |a, b| a + b);
        points.push(Point { copies, plan });
        if copies <= 0.0 {
            break;
        }
        tighter.max_total_memory = Some(base + copies - 1.0);
    }
    if points.is_empty() {
        // Not even the plan with no cap meets the minimums: say why.
        solve(&tighter, method)?;
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
    Ok(kept)
}

/// The front as text; `*` marks the plan written (`chosen`).
pub fn table(model: &Model, points: &[Point], chosen: &Plan) -> String {
    let mut out = String::from(
        "the Pareto front: expected latency removed per request against the memory copies reserve (* the plan written)\n",
    );
    let _ = writeln!(
        out,
        "  {:>8} {:>14} {:>14}  groups",
        "copies", "latency gain", "hops removed"
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
            "{} {:>8} {:>11.2} ms {:>14.2}  {}",
            if p.plan.groups == chosen.groups {
                "*"
            } else {
                " "
            },
            Resource::Memory.show(p.copies),
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

/// The front as an SVG picture: expected latency removed against copies'
/// memory, the chosen plan marked.
pub fn svg(points: &[Point], chosen: &Plan) -> Result<String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (720, 440)).into_drawing_area();
        root.fill(&WHITE)?;
        let x_max = points.iter().map(|p| p.copies / MIB).fold(1.0, f64::max) * 1.1;
        let y_max = points.iter().map(|p| p.plan.gain_ms).fold(0.5, f64::max) * 1.2;
        let mut chart = ChartBuilder::on(&root)
            .caption("fmerge plan --front", ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("memory reserved by copies (MiB)")
            .y_desc("expected latency removed per request (ms)")
            .draw()?;
        let xy: Vec<(f64, f64)> = points
            .iter()
            .map(|p| (p.copies / MIB, p.plan.gain_ms))
            .collect();
        chart.draw_series(LineSeries::new(xy.iter().copied(), &BLUE))?;
        chart.draw_series(
            xy.iter()
                .map(|&(x, y)| Circle::new((x, y), 4, BLUE.filled())),
        )?;
        if let Some(p) = points.iter().find(|p| p.plan.groups == chosen.groups) {
            let at = (p.copies / MIB, p.plan.gain_ms);
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
