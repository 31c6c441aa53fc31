//! The critical path over each function's rounds: rounds add up, a round
//! is its longest call, unplaced and looped calls, the cycle cut, and a
//! graph written before rounds.

use super::*;

#[test]
fn the_critical_path_adds_rounds_and_takes_the_longest_call_of_each() {
    // a: b and c at once, then d; b calls e. In hops: max(1 + 1, 1) + 1.
    let mut g = graph(&[("a", "b"), ("a", "c"), ("a", "d"), ("b", "e")]);
    in_rounds(&mut g, "a", &[&["b", "c"], &["d"]]);
    in_rounds(&mut g, "b", &[&["e"]]);
    let m = model(&g, &Constraints::default()).unwrap();
    assert!(m.unplaced.is_empty(), "{:?}", m.unplaced);
    let (a, b, e) = (
        m.index("a").unwrap(),
        m.index("b").unwrap(),
        m.index("e").unwrap(),
    );
    let alone: Vec<Set> = (0..m.n()).map(bit).collect();
    let h = m.hops(a, &alone);
    assert_eq!((h.critical_before, h.total_before), (3.0, 4.0));
    // b and e in a's process: their calls cost nothing; c still takes a hop.
    let mut groups = alone.clone();
    groups[a] = bit(a) | bit(b) | bit(e);
    let h = m.hops(a, &groups);
    assert_eq!((h.critical_after, h.total_after), (2.0, 2.0));
    // Every call at once (one round): the longest chain only.
    in_rounds(&mut g, "a", &[&["b", "c", "d"]]);
    let m = model(&g, &Constraints::default()).unwrap();
    assert_eq!(m.hops(a, &alone).critical_before, 2.0);
}

#[test]
fn calls_the_code_does_not_order_are_taken_one_after_another_and_said_so() {
    // a calls b at two sites the rounds do not place, and c placed.
    let mut g = graph(&[("a", "b"), ("a", "c")]);
    g.edges[0].sites = 2;
    in_rounds(&mut g, "a", &[&["c"]]);
    let m = model(&g, &Constraints::default()).unwrap();
    let (a, b) = (m.index("a").unwrap(), m.index("b").unwrap());
    assert_eq!(m.unplaced, [CallEdge { from: a, to: b }]);
    let alone: Vec<Set> = (0..m.n()).map(bit).collect();
    assert_eq!(m.hops(a, &alone).critical_before, 3.0);
    let says = "note: the order of a's calls of b is not read from its code";
    plan_saying(&m, Method::Exact, says);
}

#[test]
fn a_looped_call_counts_once_per_iteration_from_the_traffic() {
    // 10 requests at a, 30 calls of b from its one looped site: 3 a request,
    // one after another; c once, in the round before.
    let mut g = graph(&[("a", "b"), ("a", "c")]);
    let f = g.functions.iter_mut().find(|f| f.name == "a").unwrap();
    f.external = Some(10.0);
    f.rounds = vec![
        Round {
            calls: vec!["c".into()],
            looped: Vec::new(),
        },
        Round {
            calls: Vec::new(),
            looped: vec!["b".into()],
        },
    ];
    g.edges[0].calls = Some(30.0);
    g.edges[1].calls = Some(10.0);
    g.traffic = Some("test".into());
    let m = model(&g, &Constraints::default()).unwrap();
    let a = m.index("a").unwrap();
    let alone: Vec<Set> = (0..m.n()).map(bit).collect();
    let h = m.hops(a, &alone);
    assert_eq!((h.critical_before, h.total_before), (4.0, 4.0));
}

#[test]
fn a_call_back_keeps_its_place_in_the_rounds() {
    // b's call back to a runs beside its call of c: the round is as long
    // as one hop, the call back's, a run that makes no call.
    let mut g = graph(&[("a", "b"), ("b", "a"), ("b", "c")]);
    in_rounds(&mut g, "a", &[&["b"]]);
    in_rounds(&mut g, "b", &[&["a", "c"]]);
    let m = model(&g, &Constraints::default()).unwrap();
    let (a, b, c) = (
        m.index("a").unwrap(),
        m.index("b").unwrap(),
        m.index("c").unwrap(),
    );
    assert_eq!(m.cycles, [CallEdge { from: b, to: a }]);
    assert_eq!(m.rounds[b].len(), 1);
    assert_eq!(m.rounds[b][0].calls, [a, c]);
    assert!(m.unplaced.is_empty());
    let alone: Vec<Set> = (0..m.n()).map(bit).collect();
    assert_eq!(m.hops(a, &alone).critical_before, 2.0);
}

#[test]
fn a_graph_written_before_rounds_loads_with_every_call_one_after_another() {
    let old = r#"{"stack": null, "traffic": null, "conflicts": [],
        "functions": [
            {"name": "a", "memory": null, "memory_bytes": null, "left_out": null, "external": null},
            {"name": "b", "memory": null, "memory_bytes": null, "left_out": null, "external": null},
            {"name": "c", "memory": null, "memory_bytes": null, "left_out": null, "external": null}],
        "edges": [
            {"from": "a", "to": "b", "sites": 1, "within": ["a::handle"], "calls": null},
            {"from": "a", "to": "c", "sites": 1, "within": ["a::handle"], "calls": null}]}"#;
    let g: Graph = serde_json::from_str(old).unwrap();
    assert!(g.functions.iter().all(|f| f.rounds.is_empty()));
    let m = model(&g, &Constraints::default()).unwrap();
    assert_eq!(m.unplaced.len(), 2);
    let alone: Vec<Set> = (0..m.n()).map(bit).collect();
    assert_eq!(m.hops(0, &alone).critical_before, 2.0);
}

#[test]
fn a_callee_placed_by_the_call_log_is_a_round_of_the_model() {
    // The code places b and c at once, not d; the log has d after them.
    let mut g = graph(&[("a", "b"), ("a", "c"), ("a", "d")]);
    in_rounds(&mut g, "a", &[&["b", "c"]]);
    let log = "\
# fmerge calls: request caller callee start_us end_us
p1.1 a b 100 250
p1.1 a c 110 200
p1.1 a d 250 300
";
    let notes = g.order_from(&crate::graph::call_log::parse(log, "calls.txt").unwrap());
    assert_eq!(notes.len(), 1, "{notes:?}");
    // d after b and c, not one more call apart.
    let m = model(&g, &Constraints::default()).unwrap();
    assert!(m.unplaced.is_empty(), "{:?}", m.unplaced);
    let a = m.index("a").unwrap();
    assert_eq!(m.rounds[a].len(), 2);
}
