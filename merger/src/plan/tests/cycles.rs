//! Cycles as the runtime runs them: a call back to a member of the caller's
//! merged process (the group's caller included) is in-process, the call cut to
//! order the model does not count its callee's runs twice, and a group that
//! holds the whole cycle is a candidate.

use super::traffic::measured;
use super::*;
use crate::plan::search::candidates;

/// x → a, a → b, b → a three times: five gateway hops a request at x.
fn back_and_forth() -> Model {
    let g = measured(
        graph(&[("x", "a"), ("a", "b"), ("b", "a")]),
        &[("x", 100.0), ("a", 0.0), ("b", 0.0)],
        &[("x", "a", 100.0), ("a", "b", 100.0), ("b", "a", 300.0)],
    );
    model(&g, &Constraints::default()).unwrap()
}

fn alone(m: &Model) -> Vec<Set> {
    (0..m.n()).map(bit).collect()
}

fn set(m: &Model, names: &[&str]) -> Set {
    names
        .iter()
        .fold(Set::EMPTY, |s, n| s | bit(m.index(n).unwrap()))
}

#[test]
fn a_call_back_is_priced_as_the_traffic_shows_it() {
    let m = back_and_forth();
    let x = m.index("x").unwrap();
    let h = m.hops(x, &alone(&m));
    assert_eq!(h.total_before, 5.0, "{h:?}");
    assert!(m.unreached().is_empty(), "{:?}", m.unreached());
    // The group of the whole cycle is a candidate, and removes all five.
    let all = set(&m, &["x", "a", "b"]);
    assert!(candidates(&m, x, 1000).unwrap().contains(&all));
    assert_eq!(m.flow(x, all).removed, 5.0);
    // a's group: a → b in-process, and b's calls back to a, the group's caller.
    let a = m.index("a").unwrap();
    assert_eq!(m.flow(a, set(&m, &["a", "b"])).removed, 4.0);
}

#[test]
fn the_plan_merges_the_whole_cycle_and_reports_its_five_hops() {
    let m = back_and_forth();
    for method in [Method::Exact, Method::Heuristic] {
        let plan = solve(&m, method).unwrap().plan;
        assert_eq!(named_groups(&m, &plan)["x"], ["a", "b", "x"], "{method:?}");
        assert_eq!(plan.removed, 5.0, "{method:?}");
        let text = report(&m, &plan, "test", "test");
        assert!(!text.contains("no request reaches b"), "{text}");
        assert!(text.contains("5 → 0"), "{text}");
    }
}

#[test]
fn a_group_reached_through_a_call_back_alone_is_a_candidate() {
    // x → a, a calls b three times; b gets requests of its own, a quarter
    // of its runs, and calls back to a on those: its only way to a, and
    // the lightest call of the cycle.
    let g = measured(
        graph(&[("x", "a"), ("a", "b"), ("b", "a")]),
        &[("x", 100.0), ("a", 0.0), ("b", 100.0)],
        &[("x", "a", 100.0), ("a", "b", 300.0), ("b", "a", 100.0)],
    );
    let m = model(&g, &Constraints::default()).unwrap();
    let (a, b) = (m.index("a").unwrap(), m.index("b").unwrap());
    assert_eq!(m.cycles, [CallEdge { from: b, to: a }]);
    let ab = set(&m, &["a", "b"]);
    assert!(candidates(&m, b, 1000).unwrap().contains(&ab));
    assert_eq!(m.flow(b, ab).removed, 0.25);
    // a's calls of b count its runs from x alone: three each.
    assert_eq!(m.flow(a, ab).removed, 3.0 + 3.0 * 0.25);
}

#[test]
fn a_function_a_call_back_alone_reaches_is_not_idle() {
    // x's path to a and b carries no request; y's reaches b, which calls
    // back to a: a runs, and its usage sizes it.
    let mut g = measured(
        graph(&[("x", "a"), ("a", "b"), ("y", "b"), ("b", "a")]),
        &[("x", 100.0), ("y", 100.0), ("a", 0.0), ("b", 0.0)],
        &[
            ("x", "a", 0.0),
            ("a", "b", 0.0),
            ("y", "b", 100.0),
            ("b", "a", 100.0),
        ],
    );
    for f in &mut g.functions {
        (f.usage_memory_bytes, f.usage_cpu) = (Some(8.0 * MIB), Some(0.01));
    }
    let m = model(&g, &Constraints::default()).unwrap();
    let (a, b) = (m.index("a").unwrap(), m.index("b").unwrap());
    assert_eq!(m.cycles, [CallEdge { from: b, to: a }]);
    assert!(!m.unreached().contains(&a));
    assert_eq!(m.unmeasured[a], None);
    assert!(m.usage[a][0].is_some());
}
