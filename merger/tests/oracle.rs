//! The planner's exact search against an integer program that shares none
//! of its code (`support/ilp.rs`, solved by `good_lp`'s pure-Rust microlp),
//! up to the size `docs/planning.md` claims the exact search for: random
//! graphs of 7 to 14 functions, socialNetwork's 26 functions and random
//! applications of its shape and size; all with several entry points,
//! measured traffic, calls back up the graph (cycles), keep-apart pairs and
//! both memory caps.

#[path = "support/graphs.rs"]
mod graphs;
#[path = "support/ilp.rs"]
mod ilp;
#[path = "support/oracle.rs"]
#[allow(dead_code)] // the small enumeration's entry point is plan.rs's
mod oracle;

use fmerge::graph::Graph;
use fmerge::plan::model::{MIB, Model, Objective, bit};
use fmerge::plan::search::{self, Limits};
use fmerge::plan::{self, Constraints};
use graphs::{Rng, edge, random_app, random_graph, random_traffic, social_network_app};

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
        usize::from(model.max_total_memory.is_some() && !model.cycles.is_empty());
    reached.apart += usize::from(!model.apart.is_empty());
    reached.entries += usize::from(model.entries().len() >= 2);
    // Without the total cap a simpler oracle agrees, and tells whether the
    // cap lowered the optimum.
    let uncapped = ilp::best_uncapped(model);
    if model.max_total_memory.is_some() {
        reached.cap_binds += usize::from(!close(uncapped, best));
    } else {
        assert!(close(uncapped, best), "{case}: {uncapped} without a cap");
    }
}

/// [`agree`] on `graph` under random constraints.
fn check(rng: &mut Rng, graph: &Graph, case: &str, reached: &mut Reached) {
    let constraints = constraints(rng, graph);
    let model = plan::model(graph, &constraints).unwrap();
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
