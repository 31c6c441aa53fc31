//! Service time on the oracle's clock: fan-outs whose callees spend their
//! time on cpu or waiting. Merged, a member runs on its caller's task, so a
//! cpu-bound fan-out that ran on several pods queues on one core: slower
//! than the hops it removes. An I/O-bound one overlaps its waits as before
//! and gains every hop.

use super::*;

const HOP_MS: f64 = 0.45;

fn objective(objective: Objective) -> Constraints {
    Constraints {
        objective,
        hop_ms: HOP_MS,
        ..Constraints::default()
    }
}

/// e calls a, b and c at once, 100 requests; each callee's run does
/// `work`, on a pod of one core (so the oracle's clock and the model's
/// figures meet: a member alone had a whole core).
fn fan_out(work: [Work; 3]) -> App {
    let callees = ["a", "b", "c"];
    App {
        code: vec![("e", vec![callees.to_vec()])],
        requests: vec![kind(
            "e",
            100.0,
            vec![callees.iter().map(|&c| call(c, vec![])).collect()],
        )],
        hop_ms: HOP_MS,
        work: callees.iter().copied().zip(work).collect(),
        cores: ["e", "a", "b", "c"].iter().map(|&f| (f, 1.0)).collect(),
        ..App::default()
    }
}

const CPU: Work = Work { cpu: 2.0, io: 0.0 };
const IO: Work = Work { cpu: 0.05, io: 2.0 };

/// Asserts that the planner agrees with the oracle on `app` (`what`) under
/// the latency, calls and cost objectives ([`App::agrees`]).
fn agrees_on_every_objective(app: &App, what: &str) {
    for o in [Objective::Latency, Objective::Calls, Objective::Cost] {
        app.agrees(&objective(o), &format!("{what}, {}", o.name()));
    }
}

fn groups_of(app: &App, c: &Constraints) -> (BTreeMap<String, Vec<String>>, Plan) {
    let plan = app.agrees_reading(c, false, "service");
    let m = app.model(c, false);
    (named_groups(&m, &plan), plan)
}

#[test]
fn a_cpu_bound_fan_out_is_not_merged_onto_one_task() {
    // Apart: 0.45 + 2 ms. Merged: 3 × 2 ms on the caller's task, 6 ms,
    // though each member's hop is gone. Merging one member leaves the
    // others' hops on the critical path: no gain, no loss.
    let app = fan_out([CPU; 3]);
    agrees_on_every_objective(&app, "cpu-bound fan-out");
    // No gain; at most one callee, which costs nothing on the critical
    // path and lets its own deployment go (`search::cheaper`).
    let (groups, plan) = groups_of(&app, &objective(Objective::Latency));
    assert!(groups.values().all(|g| g.len() <= 2), "{groups:?}");
    assert!(plan.gain_ms.abs() < 1e-9, "{}", plan.gain_ms);
    let m = app.model(&objective(Objective::Latency), false);
    let text = report(&m, &plan, "test", "test");
    for says in [
        "a: 2.00 ms own, 2.00 ms of it cpu",
        "merged, its cpu would queue with the group's on e's one task",
        "every critical path down to its functions' own time",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    // The model's own figures: merged whole, e's path is 6 ms, not 2.45.
    let e = m.index("e").unwrap();
    let mut merged: Vec<Set> = (0..m.n()).map(bit).collect();
    merged[e] = (0..m.n()).fold(Set::EMPTY, |s, i| s | bit(i));
    let hops = m.latency(e, &merged);
    assert!((hops.critical_before - 2.45).abs() < 1e-9, "{hops:?}");
    assert!((hops.critical_after - 6.0).abs() < 1e-9, "{hops:?}");
    assert!(m.slower(e, merged[e]));
    // Under the calls objective too: one member merged does not queue past
    // the others' hops, two do (4 ms > 2.45 ms).
    let (groups, _) = groups_of(&app, &objective(Objective::Calls));
    assert!(
        groups.values().all(|g| g.len() <= 2),
        "{groups:?}: a group that slows its caller"
    );
}

#[test]
fn an_io_bound_fan_out_still_gains_its_hop_merged() {
    // Apart: 0.45 + 0.05 + 2 ms. Merged: the three bursts one after
    // another (0.15 ms), the waits overlapping: 2.15 ms, 0.35 ms gained.
    let app = fan_out([IO; 3]);
    agrees_on_every_objective(&app, "I/O-bound fan-out");
    let (groups, plan) = groups_of(&app, &objective(Objective::Latency));
    assert_eq!(groups["e"], ["a", "b", "c", "e"]);
    assert!((plan.gain_ms - 0.35).abs() < 1e-9, "{}", plan.gain_ms);
}

#[test]
fn a_mixed_fan_out_merges_its_waiting_callees_and_leaves_the_busy_one() {
    // a spends 1 ms of cpu, b and c wait 2 ms each. Apart: 2.5 ms (b and
    // c's hop, wait and cpu). b and c merged: 2.1 ms, a's 1.45 ms beside
    // them. a merged too queues their cpu behind its own: 3.1 ms.
    let app = fan_out([Work { cpu: 1.0, io: 0.0 }, IO, IO]);
    agrees_on_every_objective(&app, "mixed fan-out");
    let (groups, plan) = groups_of(&app, &objective(Objective::Latency));
    assert_eq!(groups["e"], ["b", "c", "e"]);
    assert!((plan.gain_ms - 0.4).abs() < 1e-9, "{}", plan.gain_ms);
}

#[test]
fn calls_made_at_once_from_one_site_each_queue_their_cpu() {
    // e's one site of a is made three times at once (`join_all` over a
    // list, `buffer_unordered`). Merged, their cpu queues on e's task:
    // 3 × 2 ms. Apart, on a pod of three cores, 0.45 + 2 ms: merging is
    // slower; on a pod of one core they queue there too, 0.45 + 6 ms:
    // merging gains the hop. Waiting callees gain it either way.
    for (work, cores, merged) in [
        (CPU, 3.0, false),
        (CPU, 1.0, true),
        (IO, 3.0, true),
        (IO, 1.0, true),
    ] {
        let app = App {
            code: vec![("e", vec![vec!["a"]])],
            requests: vec![kind(
                "e",
                100.0,
                vec![(0..3).map(|_| call("a", vec![])).collect()],
            )],
            hop_ms: HOP_MS,
            work: vec![("a", work)],
            cores: vec![("e", 1.0), ("a", cores)],
            ..App::default()
        };
        let case = format!("one site at once, {work:?} on {cores} cores");
        agrees_on_every_objective(&app, &case);
        let (groups, _) = groups_of(&app, &objective(Objective::Latency));
        assert_eq!(groups.contains_key("e"), merged, "{case}: {groups:?}");
    }
}
