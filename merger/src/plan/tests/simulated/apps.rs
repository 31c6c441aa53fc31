//! The applications the oracle of simulated requests (`simulated.rs`)
//! checks the planner on: cycles, a fan-out with a loop and a branch, and
//! a call only one caller's path makes; every objective on each.

use super::*;

fn objective(objective: Objective, min_gain_ms: Option<f64>) -> Constraints {
    Constraints {
        objective,
        min_gain_ms,
        hop_ms: 0.45,
        ..Constraints::default()
    }
}

/// x → a, a → b, b → a three times (the call backs make no call).
fn back_and_forth() -> App {
    let backs = || (0..3).map(|_| vec![call("a", vec![])]).collect();
    App {
        code: vec![
            ("x", vec![vec!["a"]]),
            ("a", vec![vec!["b"]]),
            ("b", vec![vec!["a"]]),
        ],
        requests: vec![kind(
            "x",
            100.0,
            vec![vec![call("a", vec![vec![call("b", backs())]])]],
        )],
        hop_ms: 0.45,
        memory: Vec::new(),
        ..App::default()
    }
}

/// e calls a; a calls b, then c; b calls back to a once; c gets requests
/// of its own, and calls back to e when they do (a call back only it
/// makes, reached from c alone).
fn two_cycles() -> App {
    App {
        code: vec![
            ("e", vec![vec!["a"]]),
            ("a", vec![vec!["b"], vec!["c"]]),
            ("b", vec![vec!["a"]]),
            ("c", vec![vec!["e"]]),
        ],
        requests: vec![
            kind(
                "e",
                60.0,
                vec![vec![call(
                    "a",
                    vec![
                        vec![call("b", vec![vec![call("a", vec![])]])],
                        vec![call("c", vec![])],
                    ],
                )]],
            ),
            kind("c", 40.0, vec![vec![call("e", vec![])]]),
        ],
        hop_ms: 0.45,
        memory: Vec::new(),
        ..App::default()
    }
}

/// e calls a and b at once; a calls c three times, one after another; b
/// calls d on 30% of its requests.
fn fan_out() -> App {
    let a = || {
        let c = || vec![call("c", vec![])];
        call("a", vec![c(), c(), c()])
    };
    App {
        code: vec![
            ("e", vec![vec!["a", "b"]]),
            ("a", vec![vec!["c"], vec!["c"], vec!["c"]]),
            ("b", vec![vec!["d"]]),
        ],
        requests: vec![
            kind(
                "e",
                30.0,
                vec![vec![a(), call("b", vec![vec![call("d", vec![])]])]],
            ),
            kind("e", 70.0, vec![vec![a(), call("b", vec![])]]),
        ],
        hop_ms: 0.45,
        memory: vec![("c", 16.0)],
        ..App::default()
    }
}

#[test]
fn the_plan_scores_the_best_the_requests_show_for_every_objective() {
    let apps = [
        (back_and_forth(), "back and forth"),
        (two_cycles(), "two cycles"),
        (path_dependent(), "path dependent"),
        (fan_out(), "fan-out"),
    ];
    for (app, name) in apps {
        for o in [Objective::Calls, Objective::Latency, Objective::Cost] {
            app.agrees(&objective(o, None), &format!("{name}, {}", o.name()));
        }
        app.agrees(
            &objective(Objective::Memory, Some(0.5)),
            &format!("{name}, memory"),
        );
    }
}

/// A and B both call s; s calls t only when B called it: 160 requests at
/// A, 140 at B (the example); s is large, t small.
fn path_dependent() -> App {
    App {
        code: vec![
            ("A", vec![vec!["s"]]),
            ("B", vec![vec!["s"]]),
            ("s", vec![vec!["t"]]),
        ],
        requests: vec![
            kind("A", 160.0, vec![vec![call("s", vec![])]]),
            kind(
                "B",
                140.0,
                vec![vec![call("s", vec![vec![call("t", vec![])]])]],
            ),
        ],
        hop_ms: 0.45,
        memory: vec![("s", 256.0), ("t", 16.0)],
        ..App::default()
    }
}

#[test]
fn rates_per_call_path_price_a_call_only_one_caller_makes_on_its_path() {
    // The least memory for 0.33 ms: B's group removes 0.42 ms (B → s and
    // s → t on B's requests); A's only 0.24 (s calls t on none of A's),
    // though the average over s's callers prices it at 0.35; two copies
    // of s (both callers' groups with s alone) cost more than one of t.
    let app = path_dependent();
    let c = objective(Objective::Memory, Some(0.33));
    let plan = app.agrees_reading(&c, true, "path dependent, from the call log");
    let m = app.model(&c, true);
    let groups = named_groups(&m, &plan);
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups["B"], ["B", "s", "t"]);
    assert!(
        (plan.gain_ms - 140.0 / 300.0 * 0.9).abs() < 1e-9,
        "{}",
        plan.gain_ms
    );
    let text = report(&m, &plan, "test", "test");
    assert!(text.contains("calls per invocation are per call path on the 2 paths calls.txt names parent requests for"), "{text}");
    // Without the call log: the average, said so.
    let m = app.model(&c, false);
    let plan = solve(&m, Method::Exact).unwrap().plan;
    let text = report(&m, &plan, "test", "test");
    assert!(
        text.contains("calls per invocation are each caller's average over all its runs"),
        "{text}"
    );
}
