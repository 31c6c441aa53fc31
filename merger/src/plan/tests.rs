//! The planner's unit tests: entry points after the cycle cut, memory
//! caps, the front, measured hop costs, the built-in hop figure.

use super::model::bit;
use super::*;
use crate::graph::{Edge, Function};

fn graph(edges: &[(&str, &str)]) -> Graph {
    let mut names: Vec<&str> = edges.iter().flat_map(|(a, b)| [*a, *b]).collect();
    names.sort();
    names.dedup();
    Graph {
        functions: names
            .iter()
            .map(|n| Function {
                name: n.to_string(),
                ..Function::default()
            })
            .collect(),
        edges: edges
            .iter()
            .map(|(a, b)| Edge {
                from: a.to_string(),
                to: Some(b.to_string()),
                sites: 1,
                ..Edge::default()
            })
            .collect(),
        ..Graph::default()
    }
}

/// a calls b twice and c once; 100Mi each.
fn fan_out_of_100mi() -> Graph {
    let mut g = graph(&[("a", "b"), ("a", "c")]);
    g.edges[0].sites = 2;
    for f in &mut g.functions {
        f.memory_bytes = Some(100.0 * MIB);
    }
    g
}

#[test]
fn measured_hop_costs_price_each_call_and_the_rest_take_the_default() {
    // a calls b and c at once; a → b measured at 5 ms, a → c unmeasured.
    let mut g = graph(&[("a", "b"), ("a", "c")]);
    g.edges[0].hop_ms = Some(5.0);
    let m = model(&g, &Constraints::default()).unwrap();
    let alone: Vec<Set> = (0..m.n()).map(bit).collect();
    let ms = m.latency(0, &alone, 2.0);
    assert_eq!((ms.critical_before, ms.total_before), (5.0, 7.0));
    let (plan, _) = solve(&m, Method::Exact).unwrap();
    let e = &entries(&m, &plan, 2.0)[0];
    assert_eq!((e.latency_gain_ms, e.latency_gain_max_ms), (5.0, 7.0));
    let text = report(&m, &plan, "exact", 2.0, "test");
    assert!(text.contains("a → b: 5.00 ms per call, measured"), "{text}");
}

#[test]
fn every_copy_counts_against_the_total_memory() {
    // a calls b and c (b twice): room for one copy, so b, the busier.
    let mut g = fan_out_of_100mi();
    let total = |mi: f64| Constraints {
        max_total_memory: Some(mi * MIB),
        ..Constraints::default()
    };
    let m = model(&g, &total(400.0)).unwrap();
    for method in [Method::Exact, Method::Heuristic] {
        let (plan, _) = solve(&m, method).unwrap();
        assert_eq!(named_groups(&m, &plan)["a"], ["a", "b"], "{method:?}");
        let text = report(&m, &plan, "test", 1.0, "test");
        assert!(
            text.contains("memory reserved: 300Mi by every function's own deployment + 100Mi of copies in merged pods = 400Mi (--max-total-memory 400Mi)"),
            "{text}"
        );
    }
    // No room for a copy: no group.
    let m = model(&g, &total(350.0)).unwrap();
    let (plan, _) = solve(&m, Method::Exact).unwrap();
    assert!(plan.merged().is_empty());
    // Below what the application reserves unmerged: an error that says so.
    let e = model(&g, &total(200.0)).unwrap_err().to_string();
    assert!(e.contains("reserves 300Mi before any merge"), "{e}");
    // A size that is not one is refused under the flag's own name.
    let e = parse_memory("--max-total-memory", "lots")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--max-total-memory \"lots\" is not a memory size"),
        "{e}"
    );
    // A function without a limit cannot be counted.
    g.functions[2].memory_bytes = None;
    let e = model(&g, &total(400.0)).unwrap_err().to_string();
    assert!(
        e.contains("--max-total-memory needs each function's memory limit, and c sets no"),
        "{e}"
    );
}

#[test]
fn the_front_trades_hops_for_copies_and_marks_the_plan() {
    let mut g = fan_out_of_100mi();
    let m = model(&g, &Constraints::default()).unwrap();
    let points = front::front(&m, Method::Exact, 1.0).unwrap();
    let steps: Vec<(f64, f64)> = points.iter().map(|p| (p.copies / MIB, p.removed)).collect();
    assert_eq!(steps, [(0.0, 0.0), (100.0, 2.0), (200.0, 3.0)]);
    let (chosen, _) = solve(&m, Method::Exact).unwrap();
    let table = front::table(&m, &points, &chosen);
    assert!(table.contains("*    200Mi           3.00"), "{table}");
    // b alone: c's hop still sets the critical path (calls made at once).
    assert!(
        table.contains("     100Mi           2.00        0.00 ms  a+1"),
        "{table}"
    );
    let svg = front::svg(&points, &chosen).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("the plan written"),
        "{svg}"
    );
    // Without every limit, no front.
    g.functions[1].memory_bytes = None;
    let m = model(&g, &Constraints::default()).unwrap();
    let e = front::front(&m, Method::Exact, 1.0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--front weighs plans by the memory") && e.contains("b sets no"),
        "{e}"
    );
}

#[test]
fn the_default_hop_is_the_bench_figure_built_in() {
    let bench = r#"{"finished": "D", "load": {"modes": {"pinned": {"chain": {"hop_cost": {"latency_ms": 0.5}}}}}}"#;
    let (ms, from) = hop_ms(None, bench);
    assert_eq!(ms, 0.5);
    assert!(
        from.contains("built in") && from.contains("measured D UTC"),
        "{from}"
    );
    assert_eq!(hop_ms(None, "").0, DEFAULT_HOP_MS);
    assert_eq!(hop_ms(Some(2.0), bench), (2.0, "--hop-ms".to_string()));
}

#[test]
fn functions_that_call_each_other_or_themselves_are_entry_points_with_a_group() {
    // a and b call each other (8 gateway calls a request, in the case
    // that found it); c calls itself and d.
    let g = graph(&[("a", "b"), ("b", "a"), ("c", "c"), ("c", "d")]);
    let m = model(&g, &Constraints::default()).unwrap();
    let entries: Vec<&str> = m
        .entries()
        .into_iter()
        .map(|i| m.names[i].as_str())
        .collect();
    assert_eq!(entries, ["a", "c"]);
    assert_eq!(m.cycles.len(), 2, "{:?}", m.cycles);
    let (plan, _) = solve(&m, Method::Exact).unwrap();
    let groups = named_groups(&m, &plan);
    assert_eq!(groups["a"], ["a", "b"]);
    assert_eq!(groups["c"], ["c", "d"]);
}

#[test]
fn what_the_graph_allows_to_share_every_group_file_says_to_the_build() {
    let mut g = graph(&[("a", "b")]);
    g.allow_shared_static = vec!["helper".into(), "other::COUNT".into()];
    let m = model(&g, &Constraints::default()).unwrap();
    let (plan, _) = solve(&m, Method::Exact).unwrap();
    let (root, set) = plan.merged()[0];
    let group: crate::group::Group = toml::from_str(&group_toml(&m, root, set, 1.0)).unwrap();
    assert_eq!(group.allow_shared_static, g.allow_shared_static);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan_toml(&m, &plan, None, 1.0, "exact")).unwrap();
    let (_, groups) = PlanFile::load(&path).unwrap();
    assert_eq!(groups[0].allow_shared_static, g.allow_shared_static);
}
