//! How long the searches take as applications grow (not a test: figures
//! go to docs/PERFORMANCE.md): seeded random applications of 60, 128 and
//! 200 functions under the latency and calls objectives, with and without
//! a total memory cap, each searched with the heuristic and under a
//! deadline; and the front on socialNetwork's 26 functions.
//!
//! `cargo run --release -p fmerge-plan --example scale [SECONDS]`

#[path = "../tests/support/random.rs"]
mod random;

use fmerge_plan::front;
use fmerge_plan::model::{Model, Objective, Resource};
use fmerge_plan::search::{self, Limits};
use std::time::{Duration, Instant};

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map_or(search::DEFAULT_TIME_LIMIT.as_secs_f64(), |s| {
            s.parse().expect("seconds")
        });
    let limit = Duration::from_secs_f64(seconds);
    println!("time limit {seconds} s");
    println!(
        "{:>4} {:>5} {:>9} {:>10} {:>10} {:>8} {:>10} {:>8} {:>7}",
        "n", "seed", "objective", "cap", "heuristic", "h s", "within", "w s", "proven"
    );
    for n in [60, 128, 200] {
        for seed in 1..=3 {
            for objective in [Objective::Latency, Objective::Calls] {
                for capped in [false, true] {
                    let mut model = random::app(seed, n);
                    model.constraints.objective = objective;
                    if capped {
                        // Room for copies of a tenth of the application.
                        model.constraints.max_total_memory =
                            Some(model.base(Resource::Memory) * 1.1);
                    }
                    run(&model, seed, capped, limit);
                }
            }
        }
    }
    let model = random::social_network();
    let started = Instant::now();
    let points = front::front(&model, Limits::default(), started + limit / 2);
    println!(
        "front of socialNetwork ({} functions): {} points in {:.2} s",
        model.n(),
        points.len(),
        started.elapsed().as_secs_f64()
    );
    for p in &points {
        println!(
            "  {:>6.3} {:.3} ms{}",
            p.cost,
            p.plan.gain_ms,
            if p.proven { "" } else { " (best found)" }
        );
    }
}

fn run(model: &Model, seed: u64, capped: bool, limit: Duration) {
    let started = Instant::now();
    let heuristic = search::heuristic_within(
        model,
        &Limits {
            deadline: Some(started + limit),
            ..Limits::default()
        },
    );
    let h_time = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let found = search::within(
        model,
        Limits {
            deadline: Some(started + limit),
            ..Limits::default()
        },
    );
    let w_time = started.elapsed().as_secs_f64();
    let figure = |p: &fmerge_plan::model::Plan| search::score(model, &p.groups).unwrap_or(f64::NAN);
    println!(
        "{:>4} {:>5} {:>9} {:>10} {:>10.4} {:>8.2} {:>10.4} {:>8.2} {:>7}",
        model.n(),
        seed,
        model.constraints.objective.name(),
        if capped { "total+10%" } else { "none" },
        figure(&heuristic),
        h_time,
        figure(&found.plan),
        w_time,
        found.proven
    );
}
