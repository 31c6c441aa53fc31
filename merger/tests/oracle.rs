//! The planner's exact search against an integer program that shares none
//! of its code (`support/ilp.rs`, solved by `good_lp`'s pure-Rust microlp),
//! up to the size `docs/planning.md` claims the exact search for: random
//! graphs of 7 to 14 functions, socialNetwork's 26 functions and random
//! applications of its shape and size; all with several entry points,
//! measured traffic, calls back up the graph (cycles), keep-apart pairs and
//! both memory caps. And the latency and memory objectives against the
//! enumeration oracle (`support/oracle.rs`), on small graphs with random
//! call rounds, loops and measured hop costs.

#[path = "support/graphs.rs"]
mod graphs;
#[path = "support/ilp.rs"]
mod ilp;
#[path = "support/oracle.rs"]
mod oracle;

use fmerge::graph::Graph;
use fmerge::plan::model::{MIB, Model, Objective, bit};
use fmerge::plan::search::{self, Limits};
use fmerge::plan::{self, Constraints};
use graphs::{
    Rng, edge, random_app, random_graph, random_rounds, random_traffic, social_network_app,
};

/// What the random cases reached, so that a test can say they reach what
/// they are for (each case agreed, or its test failed).
#[derive(Debug, Default)]
struct Reached {
    /// The exact plan merges something.
    merged: usize,
    /// A total-memory cap, and a call cut to break a cycle.
    capped_with_cycle: usize,
    /// The total-memory cap lowered the optimum.
    cap_binds: usize,
    /// A keep-apart pair or a conflict held.
    apart: usize,
    /// Outside requests at two functions or more.
    entries: usize,
}

/// Measured traffic on `graph` (`random_traffic`: outside requests at
/// random, a call or two back up the graph), outside requests at every
/// function nobody calls, and, at random, a call back from a callee to its
/// caller: cycles the model cuts.
fn traffic(rng: &mut Rng, graph: Graph) -> Graph {
    let mut graph = random_traffic(rng, graph);
    if !graph.edges.is_empty() && rng.below(2) == 0 {
        // A call back to a caller: a cycle the model cuts.
        let e = &graph.edges[rng.below(graph.edges.len() as u64) as usize];
        let mut back = edge(e.to.as_ref().unwrap(), &e.from);
        back.calls = Some((1 + rng.below(20)) as f64);
        graph.edges.push(back);
    }
    for f in &mut graph.functions {
        if !graph.edges.iter().any(|e| e.to.as_ref() == Some(&f.name)) {
            f.external = Some((1 + rng.below(100)) as f64);
        }
    }
    graph
}

/// Random caps and keep-apart pairs: a per-group cap of 48 to 208Mi, a
/// total cap of what the functions reserve alone plus 0 to 22 copies of
/// 16Mi, a pair or two kept apart; each at random.
fn constraints(rng: &mut Rng, graph: &Graph) -> Constraints {
    let n = graph.functions.len() as u64;
    let own: f64 = graph.functions.iter().filter_map(|f| f.memory_bytes).sum();
    let name = |i: u64| graph.functions[i as usize].name.clone();
    let mut keep_apart = Vec::new();
    for _ in 0..rng.below(3) {
        let (a, b) = (rng.below(n), rng.below(n));
        if a != b {
            keep_apart.push(vec![name(a), name(b)]);
        }
    }
    Constraints {
        max_memory: (rng.below(2) == 0).then(|| (48 + 16 * rng.below(11)) as f64 * MIB),
        max_total_memory: (rng.below(2) == 0).then(|| own + (16 * rng.below(23)) as f64 * MIB),
        keep_apart,
        // The programs value gateway calls removed.
        objective: Objective::Calls,
        ..Constraints::default()
    }
}

/// The model with every function a declared entry point: no deployment is
/// dropped, so a total cap counts every function's own deployment plus the
/// copies, as the programs here count it (the cap's count with dropped
/// deployments is `fmerge_plan`'s own tests', `merger/plan/tests/cost.rs`).
fn kept_all(mut model: Model) -> Model {
    model.declared = vec![true; model.n()];
    model
}

/// The exact plan has the program's optimum, its groups are valid by the
/// oracle's rules, and the oracle values it as the planner does; the
/// heuristic's plan is valid and worth no more.
fn agree(model: &Model, case: &str, reached: &mut Reached) {
    let exact = search::exact(model, Limits::default())
        .unwrap_or_else(|| panic!("{case}: the exact search passed its limits"));
    let (best, chosen) = ilp::best(model);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    assert!(
        close(exact.removed, best),
        "{case}: exact {} but the program finds {best}",
        exact.removed
    );
    // The program's own plan is worth what it says.
    assert!(close(oracle::value(model, &chosen), best), "{case}");
    for (r, &g) in exact.groups.iter().enumerate() {
        assert!(
            g == bit(r) || oracle::valid(model, r, g),
            "{case}: group {g:b}"
        );
    }
    assert!(oracle::within_total_memory(model, &exact.groups), "{case}");
    assert!(
        close(oracle::value(model, &exact.groups), exact.removed),
        "{case}"
    );
    // The heuristic's plan is valid too, and never beats the optimum.
    let greedy = search::heuristic(model);
    for (r, &g) in greedy.groups.iter().enumerate() {
        assert!(
            g == bit(r) || oracle::valid(model, r, g),
            "{case}: heuristic"
        );
    }
    assert!(oracle::within_total_memory(model, &greedy.groups), "{case}");
    assert!(
        oracle::value(model, &greedy.groups) <= best * (1.0 + 1e-6) + 1e-6,
        "{case}"
    );
    reached.merged += usize::from(!exact.merged().is_empty());
    reached.capped_with_cycle +=
        usize::from(model.constraints.max_total_memory.is_some() && !model.cycles.is_empty());
    reached.apart += usize::from(!model.apart.is_empty());
    reached.entries += usize::from(model.entries().len() >= 2);
    // Without the total cap a simpler oracle agrees, and tells whether the
    // cap lowered the optimum.
    let uncapped = ilp::best_uncapped(model);
    if model.constraints.max_total_memory.is_some() {
        reached.cap_binds += usize::from(!close(uncapped, best));
    } else {
        assert!(close(uncapped, best), "{case}: {uncapped} without a cap");
    }
}

/// [`agree`] on `graph` under random constraints.
fn check(rng: &mut Rng, graph: &Graph, case: &str, reached: &mut Reached) {
    let constraints = constraints(rng, graph);
    let model = kept_all(plan::model(graph, &constraints).unwrap());
    agree(&model, case, reached);
}

#[test]
fn the_exact_search_agrees_with_the_program_on_random_graphs_of_up_to_14_functions() {
    let mut rng = Rng(0x11_9e5e);
    let mut reached = Reached::default();
    for round in 0..120 {
        let n = 7 + round % 8;
        let graph = random_graph(&mut rng, n);
        let graph = traffic(&mut rng, graph);
        check(
            &mut rng,
            &graph,
            &format!("round {round}, {n} functions"),
            &mut reached,
        );
    }
    let r = &reached;
    assert!(
        r.merged >= 110
            && r.capped_with_cycle >= 30
            && r.cap_binds >= 40
            && r.apart >= 100
            && r.entries >= 110,
        "{reached:?}"
    );
}

#[test]
fn the_exact_search_agrees_with_the_program_on_socialnetworks_26_functions() {
    let mut rng = Rng(0x50c1a1);
    let mut reached = Reached::default();
    for round in 0..40 {
        let graph = traffic(&mut rng, social_network_app());
        assert_eq!(graph.functions.len(), 26);
        check(&mut rng, &graph, &format!("round {round}"), &mut reached);
    }
    let r = &reached;
    assert!(
        r.merged >= 25
            && r.capped_with_cycle >= 8
            && r.cap_binds >= 10
            && r.apart >= 15
            && r.entries == 40,
        "{reached:?}"
    );
}

#[test]
fn the_exact_search_agrees_with_the_program_on_random_applications_of_26_functions() {
    let mut rng = Rng(0xa99_5eed);
    let mut reached = Reached::default();
    for round in 0..40 {
        let graph = random_app(&mut rng, 26);
        let graph = traffic(&mut rng, graph);
        check(&mut rng, &graph, &format!("round {round}"), &mut reached);
    }
    let r = &reached;
    assert!(
        r.merged >= 35
            && r.capped_with_cycle >= 8
            && r.cap_binds >= 10
            && r.apart >= 15
            && r.entries == 40,
        "{reached:?}"
    );
}

/// The latency objective: the exact search finds the most expected latency
/// any valid plan removes (the enumeration's own critical paths), and both
/// searches' plans are valued alike; the memory objective: the least
/// copies' memory among the plans that remove half that.
#[test]
fn the_latency_and_memory_objectives_agree_with_the_enumeration() {
    let mut rng = Rng(0x1a7e_4c11);
    let (mut checked, mut gained, mut partial) = (0, 0, 0);
    for round in 0..120 {
        let n = 3 + round % 4;
        let graph = random_graph(&mut rng, n);
        let graph = traffic(&mut rng, graph);
        let graph = random_rounds(&mut rng, graph);
        let constraints = Constraints {
            objective: Objective::Latency,
            hop_ms: 1.0,
            ..constraints(&mut rng, &graph)
        };
        let Ok(model) = plan::model(&graph, &constraints).map(kept_all) else {
            continue; // a total cap below what the functions reserve alone
        };
        let (best, _) = oracle::best_by(&model, &|g| Some(oracle::latency_gain(&model, g)));
        let exact = search::exact(&model, Limits::default()).expect("small enough");
        assert!(
            (exact.gain_ms - best).abs() < 1e-6,
            "round {round}: exact {} ms, the enumeration {best} ms",
            exact.gain_ms
        );
        for (how, p) in [("exact", &exact), ("heuristic", &search::heuristic(&model))] {
            let v = oracle::latency_gain(&model, &p.groups);
            assert!(
                (v - p.gain_ms).abs() < 1e-6,
                "round {round}: {how} {} vs {v}",
                p.gain_ms
            );
            assert!(v <= best + 1e-6, "round {round}: {how}");
            assert!(
                oracle::within_total_memory(&model, &p.groups),
                "round {round}: {how}"
            );
        }
        checked += 1;
        if best <= 0.0 {
            continue;
        }
        gained += 1;
        let mut least = model.clone();
        (least.constraints.objective, least.constraints.min_gain_ms) =
            (Objective::Memory, Some(best / 2.0));
        let copies = |groups: &[u128]| -> f64 {
            let memory = |i: usize| model.memory[i].unwrap_or(0.0);
            (0..n)
                .flat_map(|r| (0..n).filter(move |&i| i != r && groups[r] & (1 << i) != 0))
                .map(memory)
                .sum()
        };
        let (fewest, _) = oracle::best_by(&least, &|g| {
            (oracle::latency_gain(&model, g) >= best / 2.0 - 1e-9).then(|| -copies(g))
        });
        let (p, _) = plan::solve(&least, plan::Method::Exact).unwrap();
        assert!(
            (copies(&p.groups) + fewest).abs() < 1e-3,
            "round {round}: memory objective {} MiB, the enumeration {} MiB",
            copies(&p.groups) / MIB,
            -fewest / MIB
        );
        assert!(p.gain_ms >= best / 2.0 - 1e-9, "round {round}");
        partial += usize::from(-fewest < copies(&exact.groups) - 1.0);
    }
    // Most cases plan and gain; in some, half the gain costs less memory.
    assert!(
        checked >= 80 && gained >= 50 && partial >= 10,
        "{checked} {gained} {partial}"
    );
}

/// Every combination of every root's candidate groups.
#[test]
fn the_exact_search_matches_the_oracle_and_is_never_beaten_by_the_heuristic() {
    let mut rng = Rng(0x5eed_f00d);
    let (mut agree, mut runs) = (0, 0);
    for round in 0..200 {
        let n = if round < 30 {
            3 + (round % 4)
        } else {
            8 + (round % 7)
        };
        let graph = random_graph(&mut rng, n);
        let max_memory = (rng.below(2) == 0).then(|| (64 + 16 * rng.below(6)) as f64 * 1048576.0);
        let constraints = Constraints {
            max_memory,
            objective: Objective::Calls,
            ..Constraints::default()
        };
        let model = kept_all(plan::model(&graph, &constraints).unwrap());
        let cands: Vec<usize> = (0..model.n())
            .map(|r| search::candidates(&model, r, usize::MAX).unwrap().len())
            .collect();
        eprintln!("round {round}: n {n} candidates {cands:?}");
        let exact = search::exact(&model, Limits::default()).expect("small enough");
        let greedy = search::heuristic(&model);
        // Both plans are feasible, and valued as the model values them.
        for p in [&exact, &greedy] {
            for &g in &p.groups {
                assert!(model.feasible(g), "round {round}: infeasible group {g:b}");
            }
            assert!((model.value(&p.groups).0 - p.removed).abs() < 1e-6);
        }
        assert!(
            exact.removed >= greedy.removed - 1e-6,
            "round {round}: heuristic {} beat exact {}",
            greedy.removed,
            exact.removed
        );
        if n <= 6 {
            let (best, _) = oracle::best(&model);
            assert!(
                (best - exact.removed).abs() < 1e-6,
                "round {round}: the oracle {best}, exact {}",
                exact.removed
            );
        }
        if max_memory.is_none() && graph.conflicts.is_empty() {
            // Nothing bounds a group: both take every reachable function.
            assert!(
                (exact.removed - greedy.removed).abs() < 1e-6,
                "round {round}"
            );
        }
        runs += 1;
        agree += usize::from((exact.removed - greedy.removed).abs() < 1e-6);
    }
    eprintln!("heuristic equal to exact in {agree} of {runs} random graphs");
}

/// The exact search against the oracle (`support/oracle.rs`, none of the
/// planner's code) on graphs with several entry points and measured
/// traffic, calls back up the graph (cycles), keep-apart pairs and both
/// memory caps.
#[test]
fn the_exact_search_agrees_with_an_independent_oracle() {
    let mut rng = Rng(0x0_0ac1e5);
    let (mut checked, mut merged, mut capped) = (0, 0, 0);
    for round in 0..120 {
        let n = 3 + round % 4;
        let graph = random_graph(&mut rng, n);
        let graph = random_traffic(&mut rng, graph);
        let mib = 1048576.0;
        let constraints = Constraints {
            max_memory: (rng.below(2) == 0).then(|| (48 + 16 * rng.below(6)) as f64 * mib),
            max_total_memory: (rng.below(2) == 0)
                .then(|| (64 * n as u64 + 16 * rng.below(8)) as f64 * mib),
            keep_apart: (rng.below(3) == 0)
                .then(|| vec![format!("f{}", rng.below(n as u64)), format!("f{}", n - 1)])
                .filter(|pair| pair[0] != pair[1])
                .into_iter()
                .collect(),
            objective: Objective::Calls,
            ..Constraints::default()
        };
        let Ok(model) = plan::model(&graph, &constraints).map(kept_all) else {
            continue; // a total cap below what the functions reserve alone
        };
        let (best, _) = oracle::best(&model);
        let exact = search::exact(&model, Limits::default()).expect("small enough");
        let greedy = search::heuristic(&model);
        assert!(
            (exact.removed - best).abs() < 1e-6,
            "round {round}: exact {} but the oracle finds {best}",
            exact.removed
        );
        for (how, p) in [("exact", &exact), ("heuristic", &greedy)] {
            // Valid by the oracle's rules, and valued alike.
            for (r, &g) in p.groups.iter().enumerate() {
                assert!(
                    g == bit(r) || oracle::valid(&model, r, g),
                    "round {round}: {how} group {g:b}"
                );
            }
            assert!(
                oracle::within_total_memory(&model, &p.groups),
                "round {round}: {how}"
            );
            let v = oracle::value(&model, &p.groups);
            assert!(
                (v - p.removed).abs() < 1e-6,
                "round {round}: {how} says {}, the oracle {v}",
                p.removed
            );
            assert!(v <= best + 1e-6, "round {round}: {how}");
        }
        checked += 1;
        merged += usize::from(!exact.merged().is_empty());
        capped +=
            usize::from(model.constraints.max_total_memory.is_some() && !model.cycles.is_empty());
    }
    // The random cases reach what they are for: most plan, most merge
    // something, some under a total cap with a cycle cut.
    assert!(
        checked >= 80 && merged >= 50 && capped >= 5,
        "{checked} {merged} {capped}"
    );
}
