//! The searches on seeded random applications: the search under a
//! deadline ([`search::within`]) against the exact search, one test per
//! objective and cap; 200 functions under a total memory cap; and the
//! heuristic's documented bound against the exact search
//! (`docs/planning.md`, "Search").

#[path = "support/random.rs"]
mod random;

use fmerge_plan::front;
use fmerge_plan::model::{MIB, Model, Objective, Plan, Resource};
use fmerge_plan::search::{self, Limits};
use std::time::{Duration, Instant};

/// The heuristic's plan removes at least this share of what the exact
/// search's does, on every case of [`the_heuristic_keeps_its_bound`]
/// (`docs/planning.md` states it).
const HEURISTIC_BOUND: f64 = 0.3;

/// A deadline no test reaches on small applications.
fn generous() -> Limits {
    Limits {
        deadline: Some(Instant::now() + Duration::from_secs(600)),
        nodes: u64::MAX,
        ..Limits::default()
    }
}

/// Whether `plan` keeps every rule and cap of `model`, by the model's own
/// figures: each group connected from its caller and allowed, the totals
/// within their caps, the minimums met.
fn valid(model: &Model, plan: &Plan) -> bool {
    let connected = (0..model.n()).all(|r| {
        let g = plan.groups[r];
        g.contains(r) && model.reach_within(r, g) == g
    });
    connected && search::score(model, &plan.groups).is_some()
}

/// What the deployments `plan` leaves reserve, memory and cpu limits,
/// counted here from the rules `docs/planning.md` states, not by the
/// model's own figures: a function keeps its own deployment when it is a
/// group's caller, no group holds it as a copy, it is a declared entry
/// point or gets requests from outside (the random applications trace
/// every caller, so nothing else keeps one), or a process that stays calls
/// it through the gateway; each deployment that stays reserves its
/// members' limits added up (nothing is measured, so nothing is shared).
fn deployed_limits(model: &Model, plan: &Plan) -> [f64; 2] {
    let groups = &plan.groups;
    let n = model.n();
    let copy = |f: usize| (0..n).any(|r| r != f && groups[r].contains(f));
    let mut stays: Vec<bool> = (0..n)
        .map(|f| {
            groups[f].count_ones() > 1 || !copy(f) || model.declared[f] || model.external[f] > 0.0
        })
        .collect();
    let mut todo: Vec<usize> = (0..n).filter(|&f| stays[f]).collect();
    while let Some(d) = todo.pop() {
        for u in groups[d].iter() {
            for f in model.calls[u].iter().map(|c| c.callee) {
                if !groups[d].contains(f) && !stays[f] {
                    stays[f] = true;
                    todo.push(f);
                }
            }
        }
    }
    let sum = |limits: &[Option<f64>], d: usize| -> f64 {
        groups[d].iter().map(|m| limits[m].unwrap()).sum()
    };
    let deployed = (0..n).filter(|&d| stays[d]);
    [
        deployed.clone().map(|d| sum(&model.memory, d)).sum(),
        deployed.map(|d| sum(&model.cpu, d)).sum(),
    ]
}

/// Whether `plan` keeps `model`'s caps, judged here ([`deployed_limits`],
/// each group's members' memory added up), not by the model's own check.
fn caps_hold(model: &Model, plan: &Plan) -> bool {
    let c = &model.constraints;
    let fits = |total: f64, cap: Option<f64>| cap.is_none_or(|max| total <= max * (1.0 + 1e-12));
    let [memory, cpu] = deployed_limits(model, plan);
    let groups_fit = plan.groups.iter().all(|g| {
        fits(
            g.iter().map(|m| model.memory[m].unwrap()).sum(),
            c.max_memory,
        )
    });
    groups_fit && fits(memory, c.max_total_memory) && fits(cpu, c.max_total_cpu)
}

/// Small random applications (the exact search proves them) under
/// `objective`, changed by `setup`: the deadline's plan is proven, scores
/// what the exact search's does, and is valid.
fn agrees_with_exact(objective: Objective, setup: &dyn Fn(&mut Model)) -> usize {
    let mut merged = 0;
    for seed in 0..8 {
        let mut model = random::app(seed, 10 + (seed as usize % 3) * 3);
        model.constraints.objective = objective;
        setup(&mut model);
        let exact = search::exact(&model, Limits::default()).expect("small enough");
        let found = search::within(&model, generous());
        assert!(found.proven, "seed {seed}");
        assert!(valid(&model, &found.plan), "seed {seed}");
        assert!(caps_hold(&model, &found.plan), "seed {seed}: over a cap");
        let (a, b) = (
            search::score(&model, &exact.groups),
            search::score(&model, &found.plan.groups),
        );
        assert!(
            (a.unwrap() - b.unwrap()).abs() < 1e-9,
            "seed {seed}: exact {a:?}, within {b:?}"
        );
        merged += usize::from(found.plan.merged_count() > 0);
    }
    merged
}

#[test]
fn the_latency_objective_is_proven_optimal_within_the_deadline() {
    assert!(agrees_with_exact(Objective::Latency, &|_| {}) >= 4);
}

#[test]
fn the_calls_objective_is_proven_optimal_within_the_deadline() {
    assert!(agrees_with_exact(Objective::Calls, &|_| {}) >= 4);
}

#[test]
fn the_cost_objective_is_proven_optimal_within_the_deadline() {
    assert!(agrees_with_exact(Objective::Cost, &|_| {}) >= 3);
}

#[test]
fn the_memory_objective_is_proven_optimal_within_the_deadline() {
    let merged = agrees_with_exact(Objective::Memory, &|m| {
        let mut most = m.clone();
        most.constraints.objective = Objective::Latency;
        let best = search::exact(&most, Limits::default()).unwrap().gain_ms;
        m.constraints.min_gain_ms = Some(best / 2.0);
    });
    assert!(merged >= 3);
}

/// The cap tests' own count can fail a plan: a total cap just under what
/// [`deployed_limits`] counts for a plan is broken, one at it kept, and
/// the model judges both alike.
#[test]
fn the_cap_tests_count_what_the_model_counts() {
    for seed in 0..8 {
        let mut model = random::app(seed, 10 + (seed as usize % 3) * 3);
        let plan = search::exact(&model, Limits::default()).expect("small enough");
        let [memory, cpu] = deployed_limits(&model, &plan);
        for (cap, holds) in [(1.0, true), (0.99, false)] {
            model.constraints.max_total_memory = Some(memory * cap);
            model.constraints.max_total_cpu = Some(cpu);
            assert_eq!(caps_hold(&model, &plan), holds, "seed {seed}, {cap}");
            assert_eq!(model.within_caps(&plan.groups), holds, "seed {seed}, {cap}");
        }
    }
}

#[test]
fn a_cap_on_each_group_holds_within_the_deadline() {
    let merged = agrees_with_exact(Objective::Latency, &|m| {
        m.constraints.max_memory = Some(96.0 * MIB)
    });
    assert!(merged >= 3);
}

#[test]
fn a_cap_on_total_memory_holds_within_the_deadline() {
    let merged = agrees_with_exact(Objective::Latency, &|m| {
        m.constraints.max_total_memory = Some(m.base(Resource::Memory) * 1.1)
    });
    assert!(merged >= 3);
}

#[test]
fn a_cap_on_total_cpu_holds_within_the_deadline() {
    let merged = agrees_with_exact(Objective::Calls, &|m| {
        m.constraints.max_total_cpu = Some(m.base(Resource::Cpu) * 1.1)
    });
    assert!(merged >= 3);
}

#[test]
fn two_hundred_functions_under_a_total_memory_cap_get_a_feasible_plan() {
    let mut model = random::app(7, 200);
    model.constraints.max_total_memory = Some(model.base(Resource::Memory) * 1.1);
    let greedy = search::greedy(&model);
    let found = search::within(
        &model,
        Limits {
            deadline: Some(Instant::now() + search::DEFAULT_TIME_LIMIT),
            ..Limits::default()
        },
    );
    assert!(valid(&model, &found.plan));
    let (now, start) = (
        search::score(&model, &found.plan.groups).unwrap(),
        search::score(&model, &greedy.groups).unwrap(),
    );
    assert!(now >= start - 1e-9 && now > 0.0, "{now} {start}");
    assert!(caps_hold(&model, &found.plan), "within the cap");
}

#[test]
fn the_front_of_social_network_is_proven_point_by_point() {
    let model = random::social_network();
    let points = front::front(
        &model,
        generous(),
        Instant::now() + Duration::from_secs(600),
    );
    assert!(points.iter().all(|p| p.proven));
    // Each point costs more and removes more latency than the one before,
    // the first is the cheapest plan of all, the last removes the most.
    let steps: Vec<(f64, f64)> = points.iter().map(|p| (p.cost, p.plan.gain_ms)).collect();
    assert!(
        steps.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 > w[0].1),
        "{steps:?}"
    );
    let mut cheapest = model.clone();
    cheapest.constraints.objective = Objective::Cost;
    let cheapest = search::exact(&cheapest, Limits::default()).unwrap();
    assert!((steps[0].0 - model.cost(&cheapest.groups)).abs() < 1e-9);
    let most = search::exact(&model, Limits::default()).unwrap();
    assert!((points.last().unwrap().plan.gain_ms - most.gain_ms).abs() < 1e-9);
}

#[test]
fn the_heuristic_keeps_its_bound() {
    let mut worst: f64 = 1.0;
    let mut cases = 0;
    for seed in 0..30 {
        for objective in [Objective::Latency, Objective::Calls] {
            for cap in [None, Some(1.05), Some(1.1), Some(1.25)] {
                let mut model = random::app(1000 + seed, 8 + (seed as usize % 4) * 3);
                model.constraints.objective = objective;
                model.constraints.max_total_memory = cap.map(|c| model.base(Resource::Memory) * c);
                let Some(exact) = search::exact(&model, Limits::default()) else {
                    continue;
                };
                let heuristic = search::heuristic(&model);
                assert!(valid(&model, &heuristic));
                let best = search::score(&model, &exact.groups).unwrap();
                let got = search::score(&model, &heuristic.groups).unwrap();
                assert!(got <= best + 1e-9);
                if best > 0.0 {
                    cases += 1;
                    worst = worst.min(got / best);
                }
            }
        }
    }

    assert!(cases >= 150, "{cases}");
    assert!(worst >= HEURISTIC_BOUND, "{worst}");
}

/// The best score of every plan of `model` (each caller's candidate groups,
/// all combinations), by the model's own [`search::score`]: what an exact
/// search must find.
fn enumerated_best(model: &Model) -> f64 {
    let n = model.n();
    let options: Vec<Vec<fmerge_plan::model::Set>> = (0..n)
        .map(|r| search::candidates(model, r, 10_000).unwrap())
        .collect();
    let mut best = f64::NEG_INFINITY;
    let mut choice = vec![0usize; n];
    loop {
        let groups: Vec<_> = (0..n).map(|r| options[r][choice[r]]).collect();
        if let Some(s) = search::score(model, &groups) {
            best = best.max(s);
        }
        let mut k = 0;
        while k < n {
            choice[k] += 1;
            if choice[k] < options[k].len() {
                break;
            }
            choice[k] = 0;
            k += 1;
        }
        if k == n {
            return best;
        }
    }
}

#[test]
fn a_cost_plan_called_exact_is_the_cheapest_of_every_plan() {
    // Small applications, every combination of groups valued: a plan the
    // search proves must score the best of them, for the cost objective
    // too, whose figure depends on which deployments every group lets go.
    let mut checked = 0;
    for seed in 0..80 {
        let mut model = random::app(seed / 2, 6 + (seed as usize % 3));
        model.constraints.objective = Objective::Cost;
        if seed % 2 == 1 {
            // Usage measured, and requests below the limits: a merged pod
            // then reserves less than its members did apart.
            for i in 0..model.n() {
                let mib = 4.0 + ((seed as usize + 3 * i) % 7) as f64;
                model.usage[i] = [Some(mib * MIB), Some(0.01 * (1 + i % 4) as f64)];
                model.requests[i] = [Some(8.0 * MIB), Some(0.05)];
            }
        }
        if seed % 4 >= 2 {
            // An entry point no request reached in the window: a group
            // there removes no hop, yet may let a callee's deployment go.
            let idle = (0..model.n())
                .rev()
                .find(|&i| model.external[i] > 0.0)
                .unwrap();
            model.external[idle] = 0.0;
            let total: f64 = model.external.iter().sum();
            if total == 0.0 {
                continue;
            }
            model.external.iter_mut().for_each(|x| *x /= total);
        }
        let sizes: usize = (0..model.n())
            .map(|r| search::candidates(&model, r, 10_000).unwrap().len())
            .product();
        if sizes > 200_000 {
            continue;
        }
        let found = search::within(&model, generous());
        if !found.proven {
            continue;
        }
        let best = enumerated_best(&model);
        let got = search::score(&model, &found.plan.groups).unwrap();
        assert!(
            (best - got).abs() < 1e-9,
            "seed {seed}: proven {got}, best {best}"
        );
        checked += 1;
    }
    assert!(checked >= 40, "{checked}");
}

#[test]
fn no_plan_beats_the_trivial_bound_of_any_objective() {
    // Every plan of small applications valued, each objective: the bound the
    // report prints and that proves a plan at it holds every one of them.
    // Half of them with usage measured, which sizes a merged pod below its
    // members' own figures.
    let mut checked = 0;
    for seed in 0..24 {
        let mut model = random::app(seed / 4, 6 + (seed as usize % 3));
        let all = <Objective as clap::ValueEnum>::value_variants();
        model.constraints.objective = all[seed as usize % all.len()];
        if model.constraints.objective == Objective::Memory {
            model.constraints.min_calls_removed = Some(0.5);
        }
        if seed % 8 >= 4 {
            for i in 0..model.n() {
                let mib = 4.0 + ((seed as usize + 3 * i) % 7) as f64;
                model.usage[i] = [Some(mib * MIB), Some(0.01 * (1 + i % 4) as f64)];
                model.requests[i] = [Some(8.0 * MIB), Some(0.05)];
            }
        }
        let sizes: usize = (0..model.n())
            .map(|r| search::candidates(&model, r, 10_000).unwrap().len())
            .product();
        if sizes > 200_000 {
            continue;
        }
        let best = enumerated_best(&model);
        let bound = model.trivial_bound();
        assert!(
            best <= bound + 1e-9,
            "seed {seed} {:?}: a plan scores {best}, over the bound {bound}",
            model.constraints.objective
        );
        checked += 1;
    }
    assert!(checked >= 16, "{checked}");
}
