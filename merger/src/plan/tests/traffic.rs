//! The model under measured traffic: cycles cut where traffic is lightest,
//! entry points the scrape misses, one unit (per request of the
//! application) everywhere, rare calls priced by their share, calls only
//! the traffic names, and the report's figures.

use super::*;
use crate::graph::traffic;

/// `g` with traffic: requests from outside per function (a function left
/// out has no figures: not scraped) and calls per edge.
pub(super) fn measured(
    mut g: Graph,
    external: &[(&str, f64)],
    calls: &[(&str, &str, f64)],
) -> Graph {
    g.traffic = Some("test".into());
    for f in &mut g.functions {
        f.external = external.iter().find(|(n, _)| *n == f.name).map(|x| x.1);
    }
    for (from, to, n) in calls {
        let e = g
            .edges
            .iter_mut()
            .find(|e| e.from == *from && e.to.as_deref() == Some(*to))
            .unwrap();
        e.calls = Some(*n);
    }
    g
}

fn alone(m: &Model) -> Vec<Set> {
    (0..m.n()).map(bit).collect()
}

#[test]
fn mutual_calls_are_cut_where_the_traffic_is_lightest() {
    // b gets the requests and calls a on each; a never calls b back.
    for listing in [["a", "b"], ["b", "a"]] {
        let mut g = graph(&[("a", "b"), ("b", "a")]);
        g.functions
            .sort_by_key(|f| listing.iter().position(|n| *n == f.name));
        let g = measured(
            g,
            &[("a", 0.0), ("b", 100.0)],
            &[("b", "a", 100.0), ("a", "b", 0.0)],
        );
        let m = model(&g, &Constraints::default()).unwrap();
        let (a, b) = (m.index("a").unwrap(), m.index("b").unwrap());
        assert_eq!(m.cycles, [CallEdge { from: a, to: b }], "{listing:?}");
        assert_eq!(m.hops(b, &alone(&m)).critical_before, 1.0, "{listing:?}");
        let plan = solve(&m, Method::Exact).unwrap().plan;
        let mut group = named_groups(&m, &plan)["b"].clone();
        group.sort();
        assert_eq!(group, ["a", "b"], "{listing:?}");
    }
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
    let plan = solve(&m, Method::Exact).unwrap().plan;
    let groups = named_groups(&m, &plan);
    assert_eq!(groups["a"], ["a", "b"]);
    assert_eq!(groups["c"], ["c", "d"]);
}

#[test]
fn an_entry_point_the_scrape_misses_is_planned_from_the_code() {
    // a is scraped; c is not: c, which no function calls, is an entry
    // point with a's requests, and its call of d is made once, whether d
    // is scraped or not. Scraped, d counts no call from c: c did not run,
    // which says nothing of how often it calls d when it does.
    for (case, external, calls) in [
        (
            "d not scraped",
            &[("a", 10.0), ("b", 0.0)][..],
            &[("a", "b", 10.0)][..],
        ),
        (
            "d scraped, no call from c",
            &[("a", 10.0), ("b", 0.0), ("d", 0.0)],
            &[("a", "b", 10.0), ("c", "d", 0.0)],
        ),
    ] {
        let g = measured(graph(&[("a", "b"), ("c", "d")]), external, calls);
        let m = model(&g, &Constraints::default()).unwrap();
        let c = m.index("c").unwrap();
        assert_eq!(m.external[c], m.external[m.index("a").unwrap()], "{case}");
        assert_eq!(m.hops(c, &alone(&m)).critical_before, 1.0, "{case}");
        let plan = plan_saying(
            &m,
            Method::Exact,
            "no figures for c, which no function calls",
        );
        let groups = named_groups(&m, &plan);
        assert_eq!(groups["c"], ["c", "d"], "{case}");
        assert_eq!(groups["a"], ["a", "b"], "{case}");
    }
}

#[test]
fn every_figure_is_per_request_of_the_application() {
    // 100 requests at a, each calling b once: one call removed a request.
    let g = measured(
        graph(&[("a", "b")]),
        &[("a", 100.0), ("b", 0.0)],
        &[("a", "b", 100.0)],
    );
    let m = model(&g, &hop(1.0)).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert_eq!((plan.removed, plan.gain_ms), (1.0, 1.0));
    let text = report(&m, &plan, "exact", "test");
    assert!(
        text.contains(
            "(1.00 hops removed per request it gets, 1.00 requests per request of the application)"
        ) && text
            .contains("in all: 1 gateway hops removed per request of the application, and 1.00 ms"),
        "{text}"
    );
    // So a plan removing one call a request does not remove 50.
    let at_least = |n| Constraints {
        min_calls_removed: Some(n),
        ..hop(1.0)
    };
    let m = model(&g, &at_least(50.0)).unwrap();
    let e = solve(&m, Method::Exact).unwrap_err().to_string();
    assert!(
        e.contains("the most one does is 1.00 ms and 1.00 gateway calls"),
        "{e}"
    );
    assert!(solve(&model(&g, &at_least(1.0)).unwrap(), Method::Exact).is_ok());
}

/// a calls b on 99 of its 100 requests and c on 1 (`if`/`else`: one
/// round); 64Mi each.
fn rare_branch() -> Graph {
    let mut g = graph(&[("a", "b"), ("a", "c")]);
    in_rounds(&mut g, "a", &[&["b", "c"]]);
    for f in &mut g.functions {
        f.memory_bytes = Some(64.0 * MIB);
    }
    measured(
        g,
        &[("a", 100.0), ("b", 0.0), ("c", 0.0)],
        &[("a", "b", 99.0), ("a", "c", 1.0)],
    )
}

#[test]
fn a_rare_call_is_priced_by_its_share_of_the_requests() {
    let m = model(&rare_branch(), &room_for(128.0)).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert_eq!(named_groups(&m, &plan)["a"], ["a", "b"]);
    assert!((plan.gain_ms - 0.99).abs() < 1e-9, "{}", plan.gain_ms);
    // Both in: the whole hop; c adds its 1%.
    let m = model(&rare_branch(), &hop(1.0)).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert!((plan.gain_ms - 1.0).abs() < 1e-9, "{}", plan.gain_ms);
}

#[test]
fn the_critical_paths_gain_never_passes_every_calls() {
    // The rare call in a round of its own, then b: merging c removes 1% of
    // a hop on the critical path as in all, not a whole hop.
    let mut g = rare_branch();
    in_rounds(&mut g, "a", &[&["c"], &["b"]]);
    let m = model(&g, &hop(1.0)).unwrap();
    let (a, c) = (m.index("a").unwrap(), m.index("c").unwrap());
    let mut groups = alone(&m);
    groups[a] |= bit(c);
    let ms = m.latency(a, &groups);
    let (critical, every) = (
        ms.critical_before - ms.critical_after,
        ms.total_before - ms.total_after,
    );
    assert!((critical - 0.01).abs() < 1e-9, "{critical}");
    assert!(critical <= every + 1e-9, "{critical}–{every}");
}

#[test]
fn a_plan_without_copies_reserves_no_negative_zero() {
    let mut g = fan_out_of_100mi();
    g.functions[0].memory_bytes = Some(200.0 * MIB);
    let capped = Constraints {
        max_memory: Some(250.0 * MIB),
        ..Constraints::default()
    };
    let m = model(&g, &capped).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert!(plan.merged().is_empty());
    let text = report(&m, &plan, "exact", "test");
    assert!(text.contains("memory limits 400Mi → 400Mi"), "{text}");
    assert!(!text.contains("-0"), "{text}");
    assert!(text.contains("note: no traffic given"), "{text}");
}

#[test]
fn calls_through_a_computed_name_are_planned_from_the_traffic() {
    // a's one call names its callee at run time (unknown in the code); the
    // scrape shows 3 calls of c per request of a.
    let mut g = graph(&[("a", "b")]);
    g.functions.push(Function {
        name: "c".into(),
        ..Function::default()
    });
    g.edges[0].to = None;
    g.functions.retain(|f| f.name != "b");
    let scrape = "http_requests_total{function=\"a\",caller=\"\"} 10\n\
         http_requests_total{function=\"c\",caller=\"a\"} 30\n";
    let notes = g.weigh(&traffic::parse_prometheus(scrape, "m").unwrap());
    assert!(
        notes.iter().any(|n| n.contains("30 calls a → c")),
        "{notes:?}"
    );
    let m = model(&g, &hop(1.0)).unwrap();
    let a = m.index("a").unwrap();
    assert_eq!(m.hops(a, &alone(&m)).critical_before, 3.0);
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert_eq!(named_groups(&m, &plan)["a"], ["a", "c"]);
    assert_eq!(plan.gain_ms, 3.0);
}
