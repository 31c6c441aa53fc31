//! The planner's unit tests: entry points after the cycle cut, memory
//! caps, the front, measured hop costs, the built-in hop figure.

use super::model::{CallEdge, CallerGroup, MIB, Objective, bit};
use super::*;
use crate::graph::{Edge, Function, Round};
use std::collections::BTreeMap;

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

/// `from`'s calls in these rounds (each call a callee's name, once).
fn in_rounds(g: &mut Graph, from: &str, rounds: &[&[&str]]) {
    let f = g.functions.iter_mut().find(|f| f.name == from).unwrap();
    f.rounds = rounds
        .iter()
        .map(|r| Round {
            calls: r.iter().map(|c| c.to_string()).collect(),
            looped: Vec::new(),
        })
        .collect();
}

/// Asserts that [`model`] refuses `g` under `c` with an error that says
/// `says`.
fn refused(g: &Graph, c: &Constraints, says: &str) {
    let e = model(g, c).unwrap_err().to_string();
    assert!(e.contains(says), "{e}");
}

/// `method`'s plan of `m`, whose report must say `says`.
fn plan_saying(m: &Model, method: Method, says: &str) -> Plan {
    let plan = solve(m, method).unwrap().plan;
    let text = report(m, &plan, "test", "test");
    assert!(text.contains(says), "{method:?}: {text}");
    plan
}

/// Asserts that both searches make a's group a and b, and that each
/// report says `says`.
fn both_searches_merge_a_b_saying(m: &Model, says: &str) {
    for method in [Method::Exact, Method::Heuristic] {
        let plan = plan_saying(m, method, says);
        assert_eq!(named_groups(m, &plan)["a"], ["a", "b"], "{method:?}");
    }
}

/// a calls b twice and c once, all at once; 100Mi each.
fn fan_out_of_100mi() -> Graph {
    let mut g = graph(&[("a", "b"), ("a", "c")]);
    g.edges[0].sites = 2;
    in_rounds(&mut g, "a", &[&["b", "b", "c"]]);
    for f in &mut g.functions {
        f.memory_bytes = Some(100.0 * MIB);
    }
    g
}

#[test]
fn measured_hop_costs_price_each_call_and_the_rest_take_the_default() {
    // a calls b and c at once; a → b measured at 5 ms, a → c unmeasured.
    let mut g = graph(&[("a", "b"), ("a", "c")]);
    in_rounds(&mut g, "a", &[&["b", "c"]]);
    g.edges[0].hop_ms = Some(5.0);
    let m = model(&g, &hop(2.0)).unwrap();
    let alone: Vec<Set> = (0..m.n()).map(bit).collect();
    let ms = m.latency(0, &alone);
    assert_eq!((ms.critical_before, ms.total_before), (5.0, 7.0));
    let plan = plan_saying(&m, Method::Exact, "a → b: 5.00 ms per call, measured");
    let e = &entries(&m, &plan)[0];
    assert_eq!((e.latency_gain_ms, e.latency_gain_max_ms), (5.0, 7.0));
    assert_eq!(plan.gain_ms, 5.0);
}

/// `g` with what a drop needs (`docs/planning.md`, "What a drop
/// requires"): the functions no other calls declared entry points with one
/// request each from outside, and a scrape that names every caller, each
/// call site made once per invocation.
fn observed(mut g: Graph) -> Graph {
    let called = |g: &Graph, name: &str| g.edges.iter().any(|e| e.to.as_deref() == Some(name));
    let mut runs: BTreeMap<String, f64> = BTreeMap::new();
    for f in &g.functions {
        let entry = !called(&g, &f.name);
        runs.insert(f.name.clone(), if entry { 1.0 } else { 0.0 });
    }
    for _ in 0..g.functions.len() {
        for f in &g.functions {
            if called(&g, &f.name) {
                let into: f64 = g
                    .edges
                    .iter()
                    .filter(|e| e.to.as_deref() == Some(f.name.as_str()))
                    .map(|e| runs[&e.from] * e.sites as f64)
                    .sum();
                runs.insert(f.name.clone(), into);
            }
        }
    }
    for e in &mut g.edges {
        e.calls = Some(runs[&e.from] * e.sites as f64);
    }
    for i in 0..g.functions.len() {
        let entry = !called(&g, &g.functions[i].name);
        let f = &mut g.functions[i];
        f.entry |= entry;
        f.external = Some(if entry { 1.0 } else { 0.0 });
        f.watched = true;
    }
    g.traffic = Some("prometheus test".into());
    g
}

/// Every function but the first declared an entry point: each callee's
/// own deployment stays, so every copy adds to what the cluster reserves.
fn all_entries(mut g: Graph) -> Graph {
    for f in g.functions.iter_mut().skip(1) {
        f.entry = true;
    }
    g
}

#[test]
fn what_stays_deployed_counts_against_the_total_memory() {
    // a calls b and c (b twice); b and c entry points, so they stay: room
    // for one copy, so b, the busier.
    let total = |mi: f64| Constraints {
        objective: Objective::Calls,
        max_total_memory: Some(mi * MIB),
        ..Constraints::default()
    };
    let g = all_entries(fan_out_of_100mi());
    let m = model(&g, &total(400.0)).unwrap();
    both_searches_merge_a_b_saying(
        &m,
        "pods 3 → 3; memory limits 300Mi → 400Mi (--max-total-memory 400Mi)",
    );
    // No room for a copy: no group.
    let m = model(&g, &total(350.0)).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert!(plan.merged().is_empty());
    // Not entry points, and the traffic shows no other caller: their
    // deployments go with the merge, and the whole group fits where the
    // unmerged application does.
    let mut g = observed(fan_out_of_100mi());
    let m = model(&g, &total(300.0)).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert_eq!(named_groups(&m, &plan)["a"], ["a", "b", "c"]);
    assert!(
        report(&m, &plan, "test", "test").contains("pods 3 → 1; memory limits 300Mi → 300Mi"),
        "{}",
        report(&m, &plan, "test", "test")
    );
    // Below what any plan reserves with no usage measured: refused before
    // any search, saying so.
    refused(&g, &total(200.0), "reserves 300Mi before any merge");
    // A function without a limit cannot be counted.
    g.functions[2].memory_bytes = None;
    refused(
        &g,
        &total(400.0),
        "--max-total-memory needs each function's memory limit, and c sets no",
    );
}

#[test]
fn a_group_no_request_reaches_says_which_deployment_it_lets_go() {
    // a and b, both declared entry points, call c; the traffic reaches a
    // only. b's group gains nothing, yet holding c there drops c's pod.
    let mut g = graph(&[("a", "c"), ("b", "c")]);
    g.traffic = Some("test".into());
    for f in &mut g.functions {
        f.entry = f.name != "c";
        f.external = Some(if f.name == "a" { 10.0 } else { 0.0 });
        f.watched = true;
    }
    for e in &mut g.edges {
        e.calls = Some(if e.from == "a" { 10.0 } else { 0.0 });
    }
    let constraints = Constraints {
        hop_ms: 1.0,
        ..Constraints::default()
    };
    let m = model(&g, &constraints).unwrap();
    let plan = plan_saying(
        &m,
        Method::Auto,
        "no request reaches b: its group holds c so that its own deployment can go",
    );
    assert_eq!(named_groups(&m, &plan)["b"], ["b", "c"]);
    // a's group, which requests reach, says no such thing.
    let text = report(&m, &plan, "test", "test");
    assert!(!text.contains("no request reaches a"), "{text}");
}

#[test]
fn the_front_trades_latency_for_cost_and_marks_the_plan() {
    // c an entry point: a group with c keeps c's deployment and pays its
    // copy; b is dropped with its merge.
    let mut g = observed(fan_out_of_100mi());
    g.functions[2].entry = true;
    let m = model(&g, &hop(1.0)).unwrap();
    let points = front::front(&m, Method::Exact, search::DEFAULT_TIME_LIMIT).unwrap();
    // {a, b}: 2 pods of 3, 300Mi of requests (limits, as none is set) of
    // 300Mi: cost (2/3 + 1) / 2; {a, b, c}: 2 pods, 400Mi.
    let steps: Vec<(f64, f64)> = points.iter().map(|p| (p.cost, p.plan.gain_ms)).collect();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(
        close(steps[0].0, (2.0 / 3.0 + 1.0) / 2.0) && close(steps[0].1, 0.0),
        "{steps:?}"
    );
    assert!(
        close(steps[1].0, (2.0 / 3.0 + 4.0 / 3.0) / 2.0) && close(steps[1].1, 1.0),
        "{steps:?}"
    );
    let chosen = solve(&m, Method::Exact).unwrap().plan;
    let table = front::table(&m, &points, &chosen);
    for row in [
        "*     1.00        1.00 ms           3.00  a+2",
        "      0.83        0.00 ms           2.00  a+1",
    ] {
        assert!(table.contains(row), "{row} missing:\n{table}");
    }
    assert!(!table.contains("-0"), "{table}");
    let svg = front::svg(&points, &chosen).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("the plan written"),
        "{svg}"
    );
}

/// a calls b three times and c, all at once, c calls d; 100Mi and 200m each;
/// a → b measured at 0.5 ms, every other hop 1 ms (with [`hop`]). The
/// critical path: a → c → d, 2 ms.
fn two_paths() -> Graph {
    let mut g = graph(&[("a", "b"), ("a", "c"), ("c", "d")]);
    g.edges[0].sites = 3;
    g.edges[0].hop_ms = Some(0.5);
    in_rounds(&mut g, "a", &[&["b", "b", "b", "c"]]);
    for f in &mut g.functions {
        f.memory_bytes = Some(100.0 * MIB);
        f.cpu = Some(0.2);
    }
    g
}

fn hop(ms: f64) -> Constraints {
    Constraints {
        hop_ms: ms,
        ..Constraints::default()
    }
}

/// [`hop`] at 1 ms, with room for `mib` MiB in a merged pod (`--max-memory`).
fn room_for(mib: f64) -> Constraints {
    Constraints {
        max_memory: Some(mib * MIB),
        ..hop(1.0)
    }
}

#[test]
fn the_objective_chooses_between_latency_and_calls() {
    let g = all_entries(two_paths());
    let room_for_two = |objective| Constraints {
        objective,
        max_total_memory: Some(600.0 * MIB),
        ..hop(1.0)
    };
    for method in [Method::Exact, Method::Heuristic] {
        // Latency: the longer path in-process shortens the critical path.
        let m = model(&g, &room_for_two(Objective::Latency)).unwrap();
        let plan = solve(&m, method).unwrap().plan;
        assert_eq!(named_groups(&m, &plan)["a"], ["a", "c", "d"], "{method:?}");
        assert_eq!((plan.gain_ms, plan.removed), (1.5, 2.0), "{method:?}");
        // Calls: b's three calls and c's one.
        let m = model(&g, &room_for_two(Objective::Calls)).unwrap();
        let plan = solve(&m, method).unwrap().plan;
        assert_eq!(named_groups(&m, &plan)["a"], ["a", "b", "c"], "{method:?}");
        assert_eq!((plan.gain_ms, plan.removed), (1.0, 4.0), "{method:?}");
    }
    // No cap: every member is needed to take the whole critical path.
    let m = model(&g, &hop(1.0)).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    assert_eq!(named_groups(&m, &plan)["a"], ["a", "b", "c", "d"]);
    assert_eq!(plan.gain_ms, 2.0);
}

#[test]
fn the_memory_objective_takes_the_least_copies_for_the_gain_asked() {
    let g = two_paths();
    let least = |min_gain_ms| Constraints {
        objective: Objective::Memory,
        min_gain_ms: Some(min_gain_ms),
        ..hop(1.0)
    };
    for method in [Method::Exact, Method::Heuristic] {
        for (gain, members) in [
            (1.0, &["a", "c"][..]),
            (1.5, &["a", "c", "d"]),
            (2.0, &["a", "b", "c", "d"]),
        ] {
            let m = model(&g, &least(gain)).unwrap();
            let plan = solve(&m, method).unwrap().plan;
            assert_eq!(named_groups(&m, &plan)["a"], members, "{method:?} {gain}");
        }
        // More than any plan gains: refused with the most there is.
        let m = model(&g, &least(3.0)).unwrap();
        let e = solve(&m, method).unwrap_err().to_string();
        assert!(
            e.contains("no plan under these constraints removes 3 ms (--min-gain-ms)")
                && e.contains("the most one does is 2.00 ms"),
            "{e}"
        );
    }
    // Without a minimum the least memory is no merge: refused, with the fix.
    let memory = Constraints {
        objective: Objective::Memory,
        ..Constraints::default()
    };
    refused(
        &g,
        &memory,
        "\nfix: give --min-gain-ms MS or --min-calls-removed N",
    );
}

#[test]
fn every_copy_counts_against_the_total_cpu() {
    let mut g = all_entries(two_paths());
    // 0.8 cores unmerged; room for one copy of 0.2.
    let capped = Constraints {
        max_total_cpu: Some(1.0),
        objective: Objective::Calls,
        ..hop(1.0)
    };
    let m = model(&g, &capped).unwrap();
    both_searches_merge_a_b_saying(
        &m,
        "cpu limits 0.80 cores → 1.00 cores (--max-total-cpu 1.00 cores)",
    );
    g.functions[3].cpu = None;
    refused(
        &g,
        &capped,
        "--max-total-cpu needs each function's cpu limit, and d sets no `limits: cpu:`",
    );
}

#[test]
fn the_default_hop_is_the_named_constant_and_says_where_it_comes_from() {
    let HopCost { ms, source: from } = hop_ms(None);
    assert_eq!(ms, DEFAULT_HOP_MS);
    assert!(from.contains("docs/PERFORMANCE.md"), "{from}");
    assert_eq!(
        hop_ms(Some(2.0)),
        HopCost {
            ms: 2.0,
            source: "--hop-ms"
        }
    );
}

#[test]
fn what_the_graph_allows_to_share_every_group_file_says_to_the_build() {
    let mut g = graph(&[("a", "b")]);
    g.allow_shared_static = vec!["helper".into(), "other::COUNT".into()];
    let m = model(&g, &Constraints::default()).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    let CallerGroup { caller, set } = plan.merged()[0];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.toml");
    std::fs::write(&file, group_toml(&m, caller, set, 1.0)).unwrap();
    let group = crate::group::Group::load(&file).unwrap();
    assert_eq!(
        group.merge.sharing.allow_shared_static,
        g.allow_shared_static
    );
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan_toml(&m, &plan, None, "exact")).unwrap();
    let groups = PlanFile::load(&path).unwrap().groups;
    assert_eq!(
        groups[0].merge.sharing.allow_shared_static,
        g.allow_shared_static
    );
}

#[test]
fn a_plan_file_read_back_is_valued_as_searched_and_plan_json_has_its_figures() {
    // a calls b twice (5 ms measured) and c once; 100Mi each.
    let mut g = observed(fan_out_of_100mi());
    g.edges[0].hop_ms = Some(5.0);
    let m = model(&g, &hop(2.0)).unwrap();
    let solution = solve(&m, Method::Exact).unwrap();
    let (plan, how) = (solution.plan, solution.proof.name());
    let file: PlanFile = toml::from_str(&plan_toml(&m, &plan, None, how)).unwrap();
    assert_eq!(file.plan(&m).unwrap(), plan);
    // Groups chosen elsewhere are valued as given: a with c only.
    let only_c = PlanFile {
        group: vec![PlanGroup {
            caller: "a".into(),
            callees: vec!["c".into()],
            ..PlanGroup::default()
        }],
        ..PlanFile::default()
    };
    let given = only_c.plan(&m).unwrap();
    assert_eq!(named_groups(&m, &given)["a"], ["a", "c"]);
    let doc: serde_json::Value = serde_json::from_str(&json(&m, &given, "given")).unwrap();
    let a = &doc["entries"][0];
    assert_eq!(a["function"], "a");
    // b's two calls stay at 5 ms: the critical path is unchanged; c's 2 ms go.
    assert_eq!(
        (
            a["latency_gain_ms"].as_f64(),
            a["latency_gain_max_ms"].as_f64()
        ),
        (Some(0.0), Some(2.0))
    );
    // c's deployment goes: only a calls it, and in-process now.
    let limits = &doc["reserved"][1];
    assert_eq!(limits["what"], "memory limits");
    assert_eq!(
        (limits["before"].as_f64(), limits["after"].as_f64()),
        (Some(300.0 * MIB), Some(300.0 * MIB))
    );
    // A name the graph lacks is refused with the group it is in.
    let mut wrong = only_c;
    wrong.group[0].callees = vec!["z".into()];
    let e = wrong.plan(&m).unwrap_err().to_string();
    assert!(
        e.contains("group of a names z, which is not in the call graph"),
        "{e}"
    );
}

mod cycles;
mod rounds;
mod simulated;
mod traffic;

#[test]
fn a_search_stopped_by_its_time_limit_says_its_plan_is_not_proven() {
    // Room for a and one callee: no plan takes every critical path to 0.
    let m = model(&fan_out_of_100mi(), &room_for(200.0)).unwrap();
    let solution = solve_within(&m, Method::Auto, Duration::ZERO).unwrap();
    let (plan, how) = (solution.plan, solution.proof.name());
    assert_eq!(how, BEST_FOUND);
    assert!(m.meets(&plan));
    let e = solve_within(&m, Method::Exact, Duration::ZERO)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("did not finish within --time-limit") && e.contains("\nfix: raise --time-limit"),
        "{e}"
    );
    // How far the best plan it found may be from the optimum.
    assert!(
        e.contains(
            "the best plan it found is not proven: bound: at most 1.00 ms removed per request"
        ),
        "{e}"
    );
    let how = solve_within(&m, Method::Auto, search::DEFAULT_TIME_LIMIT)
        .unwrap()
        .proof
        .name();
    assert_eq!(how, "exact");
}

#[test]
fn plan_json_and_the_plan_file_give_the_cluster_before_and_after() {
    // a calls b twice and c; 100Mi / 0.2 cores of limits and 32Mi / 0.1 core of
    // requests each; b and c measured at 8Mi and 0.02 cores a pod, a not.
    let mut g = observed(fan_out_of_100mi());
    for f in &mut g.functions {
        (f.requests_memory_bytes, f.requests_cpu) = (Some(32.0 * MIB), Some(0.1));
        f.cpu = Some(0.2);
    }
    for f in &mut g.functions[1..] {
        (f.usage_memory_bytes, f.usage_cpu) = (Some(8.0 * MIB), Some(0.02));
    }
    let m = model(&g, &hop(1.0)).unwrap();
    let solution = solve(&m, Method::Exact).unwrap();
    let (plan, how) = (solution.plan, solution.proof.name());
    assert_eq!(named_groups(&m, &plan)["a"], ["a", "b", "c"]);
    let doc: serde_json::Value = serde_json::from_str(&json(&m, &plan, how)).unwrap();
    let cluster = &doc["cluster"];
    assert_eq!(cluster["before"]["pods"], 3);
    assert_eq!(cluster["after"]["pods"], 1);
    assert_eq!(cluster["dropped"], serde_json::json!(["b", "c"]));
    let mem = |side: &str, what: &str| cluster[side][what]["memory"].as_f64().unwrap();
    assert_eq!(mem("before", "requests"), 96.0 * MIB);
    // a's own 32Mi, and b and c as one process: 8Mi each, of which the
    // shared part (the least measured, 8Mi) counts once; with the headroom.
    assert_eq!(mem("after", "requests"), (32.0 + 8.0 * 1.25) * MIB);
    assert_eq!(mem("before", "limits"), 300.0 * MIB);
    // What holds when all three peak at once: their 300Mi of limits, the
    // part every process holds (8Mi) counted once.
    assert_eq!(mem("after", "limits"), 284.0 * MIB);
    let pod = &cluster["pods"][0];
    assert_eq!(pod["requests"]["memory"]["from"], "mixed");
    let rows: Vec<&str> = doc["reserved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        rows,
        [
            "pods",
            "memory limits",
            "cpu limits",
            "memory requests",
            "cpu requests"
        ]
    );
    let text = report(&m, &plan, how, "test");
    assert!(
        text.contains("pods 3 → 1; memory limits 300Mi → 284Mi")
            && text.contains("deployments dropped (only their groups call them, in-process): b, c")
            && text.contains("a's merged pod: requests 42Mi (mixed)"),
        "{text}"
    );
    // The plan file carries the decision and the pod's figures.
    let file: PlanFile = toml::from_str(&plan_toml(&m, &plan, None, how)).unwrap();
    assert_eq!(file.dropped, ["b", "c"]);
    let group = file.group("a").unwrap();
    assert_eq!(group.requests["memory"], "42Mi");
    assert_eq!(group.limits["memory"], "284Mi");
    // --limits-assume-apart: the most a member needs, b's (or c's) own
    // 100Mi beside a's limit (a is unmeasured) and what the other adds
    // beyond the shared part; the report says the risk.
    let apart = Constraints {
        limits_assume_apart: true,
        ..hop(1.0)
    };
    let m = model(&g, &apart).unwrap();
    let plan = plan_saying(
        &m,
        Method::Exact,
        "risk: its memory limit assumes its members never peak together (--limits-assume-apart); at once they may need 284Mi",
    );
    let pod = m.pod(0, plan.groups[0]);
    assert_eq!(pod.limits[0].amount, Some(200.0 * MIB));
}

#[test]
fn the_stack_declares_socialnetworks_entry_points_once() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions/stack.yml");
    let stack = fmerge_ship::stack_in::StackIn::load(&path).unwrap();
    let functions = crate::graph::functions_of(&stack, stack.names())
        .unwrap()
        .functions;
    let entry = |name: &str| functions.iter().find(|f| f.name == name).unwrap().entry;
    for name in [
        "compose-post",
        "read-home-timeline",
        "user-login",
        "social-graph-follow",
    ] {
        assert!(entry(name), "{name}");
    }
    for name in [
        "unique-id",
        "text-service",
        "read-posts",
        "write-home-timeline",
    ] {
        assert!(!entry(name), "{name}");
    }
    // Another value than "true" or "false" is refused, naming the fix.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replacen(
            "      com.openfaas.fmerge.entry: \"true\"",
            "      com.openfaas.fmerge.entry: \"yes\"",
            1,
        )
        .replace(
            "handler: ./",
            &format!("handler: {}/", path.parent().unwrap().display()),
        );
    std::fs::write(dir.path().join("stack.yml"), text).unwrap();
    let stack = fmerge_ship::stack_in::StackIn::load(&dir.path().join("stack.yml")).unwrap();
    let e = format!("{:#}", stack.entry("compose-post").unwrap_err());
    assert!(
        e.contains("com.openfaas.fmerge.entry is `yes`") && e.contains("fix:"),
        "{e}"
    );
    // A connector's topic declares its function an entry point too, and
    // is no label: the graph keeps the two apart.
    let text = std::fs::read_to_string(dir.path().join("stack.yml"))
        .unwrap()
        .replacen(
            "/sn-unique-id:latest\n",
            "/sn-unique-id:latest\n    annotations:\n      topic: cron-function\n      schedule: \"*/5 * * * *\"\n",
            1,
        )
        .replace("\"yes\"", "\"true\"");
    assert!(text.contains("topic: cron-function"));
    std::fs::write(dir.path().join("stack.yml"), text).unwrap();
    let stack = fmerge_ship::stack_in::StackIn::load(&dir.path().join("stack.yml")).unwrap();
    let functions = crate::graph::functions_of(&stack, stack.names())
        .unwrap()
        .functions;
    let f = functions.iter().find(|f| f.name == "unique-id").unwrap();
    assert_eq!(
        (f.entry, f.connector.as_deref()),
        (false, Some("cron-function"))
    );
    let g = Graph {
        functions,
        ..Graph::default()
    };
    let m = model(&g, &Constraints::default()).unwrap();
    let unique_id = m.index("unique-id").unwrap();
    assert!(m.declared[unique_id]);
    assert_eq!(
        m.labelled().count(),
        m.declared.iter().filter(|&&d| d).count() - 1
    );
}

/// a calls b once a request; both observed, a declared. a runs 1 pod at
/// 0.1 core, b 4 pods at 0.5 core each; 1 core of cpu limit each.
fn busy_callee() -> Graph {
    let mut g = observed(graph(&[("a", "b")]));
    for (f, (cores, pods)) in g.functions.iter_mut().zip([(0.1, 1), (0.5, 4)]) {
        (f.usage_cpu, f.usage_pods) = (Some(cores), Some(pods));
        f.cpu = Some(1.0);
        f.memory_bytes = Some(64.0 * MIB);
        f.usage_memory_bytes = Some(8.0 * MIB);
        f.usage_scrapes = Some(2);
    }
    g
}

#[test]
fn a_merged_pods_cpu_request_is_its_members_work_at_the_rate_it_serves() {
    // b's 4 pods do 2 cores of work for a's requests; merged into a's one
    // pod, that pod does a's 0.1 and b's 2: 2.1 cores, with the headroom.
    let m = model(&busy_callee(), &hop(1.0)).unwrap();
    let pod = m.pod(0, bit(0) | bit(1));
    let cpu = pod.requests[1].amount.unwrap();
    assert!((cpu - 2.1 * (1.0 + model::HEADROOM)).abs() < 1e-9, "{cpu}");
    // Its limit holds when all of it peaks: a's core and b's four.
    assert_eq!(pod.limits[1].amount, Some(5.0));
    let lines = cluster::sizing(&m, 0, bit(0) | bit(1)).join("\n");
    assert!(
        lines.contains("each merged pod carries more than one pod's work of b 4.00 pods (their replicas over a's"),
        "{lines}"
    );
    // Half of b's requests from elsewhere (an entry point of its own):
    // a's group serves half of b's work.
    let mut g = busy_callee();
    g.functions[1].external = Some(1.0);
    g.edges[0].calls = Some(1.0);
    let m = model(&g, &hop(1.0)).unwrap();
    let cpu = m.pod(0, bit(0) | bit(1)).requests[1].amount.unwrap();
    assert!((cpu - 1.1 * (1.0 + model::HEADROOM)).abs() < 1e-9, "{cpu}");
}

#[test]
fn a_cpu_figure_no_pod_could_use_is_refused_with_its_cause() {
    // 1500 cores a pod under a 1-core limit: the window was wrong.
    let mut g = busy_callee();
    g.functions[1].usage_cpu = Some(1500.0);
    refused(
        &g,
        &hop(1.0),
        "b used 1500.00 cores per pod over the window of prometheus test",
    );
    let e = model(&g, &hop(1.0)).unwrap_err().to_string();
    assert!(
        e.contains("above its own cpu limit") && e.contains("\nfix: "),
        "{e}"
    );
}

#[test]
fn a_memory_figure_no_pod_could_hold_is_refused_with_its_cause() {
    // 100Mi resident in a pod the kernel ends at 64Mi: the scrape is not
    // of these deployments' pods.
    let mut g = busy_callee();
    g.functions[1].usage_memory_bytes = Some(100.0 * MIB);
    refused(
        &g,
        &hop(1.0),
        "b held 100Mi in a pod in prometheus test, above its own memory limit of 64Mi",
    );
    let e = model(&g, &hop(1.0)).unwrap_err().to_string();
    assert!(e.contains("\nfix: scrape the pods"), "{e}");
}

#[test]
fn no_request_of_nothing_is_written_into_the_plan() {
    // No function sets a cpu request or limit and none is measured: the
    // merged pod's cpu request is unset, never `0m`.
    let g = observed(fan_out_of_100mi());
    let m = model(&g, &hop(1.0)).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    let file: PlanFile = toml::from_str(&plan_toml(&m, &plan, None, "exact")).unwrap();
    assert_eq!(file.group[0].callees, ["b", "c"]);
    assert_eq!(
        file.group[0].requests.get("cpu"),
        None,
        "{:?}",
        file.group[0]
    );
    assert_eq!(file.group[0].requests["memory"], "300Mi");
}

#[test]
fn idle_unscraped_and_watchdog_members_are_sized_from_the_stack_and_said_so() {
    // a calls b and c; b got no request in the window (idle), c is a
    // watchdog-process function (its scrape is of-watchdog's), d is not
    // scraped at all.
    let mut g = observed(graph(&[("a", "b"), ("a", "c"), ("a", "d")]));
    for f in &mut g.functions {
        f.memory_bytes = Some(64.0 * MIB);
        f.requests_memory_bytes = Some(32.0 * MIB);
        if f.name != "d" {
            (f.usage_memory_bytes, f.usage_scrapes) = (Some(8.0 * MIB), Some(1));
        }
    }
    g.edges[0].calls = Some(0.0);
    g.functions[2].watchdog = true;
    let m = model(&g, &hop(1.0)).unwrap();
    let set = bit(0) | bit(1) | bit(2) | bit(3);
    // a measured (8Mi with the headroom), b, c and d at their 32Mi requests.
    let pod = m.pod(0, set);
    assert_eq!(
        pod.requests[0].amount,
        Some((8.0 * 1.25 + 3.0 * 32.0) * MIB)
    );
    assert_eq!(pod.requests[0].from, model::Origin::Mixed);
    let lines = cluster::sizing(&m, 0, set).join("\n");
    for says in [
        "b (idle in the window",
        "c (its scrape is of-watchdog's process, not the function's: unmeasured)",
        "d (not scraped)",
        "memory of a from one scrape: one instant, not the window's peak",
    ] {
        assert!(lines.contains(says), "{says}: {lines}");
    }
}

#[test]
fn a_plan_at_the_trivial_bound_is_proven_whatever_stopped_the_search() {
    // No cap: the heuristic's plan takes every critical path to 0, which no
    // plan beats, so it is exact though the branch and bound never ran.
    let m = model(&fan_out_of_100mi(), &hop(1.0)).unwrap();
    let solution = solve_within(&m, Method::Auto, Duration::ZERO).unwrap();
    assert_eq!(solution.proof.name(), "exact");
    // The heuristic alone says which search ran, and that it is optimal.
    let heuristic = solve_within(&m, Method::Heuristic, Duration::ZERO).unwrap();
    assert_eq!(heuristic.proof.name(), "heuristic, at the bound (optimal)");
    let text = report(&m, &solution.plan, "exact", "test");
    assert!(
        text.contains(
            "bound: at most 1.00 ms removed per request (every critical path at 0); gap 0.00 ms"
        ),
        "{text}"
    );
    // Under a cap the bound is out of reach (b's two calls and c's run at
    // once, and only one callee fits): the exact plan removes nothing of
    // the critical path, and its gap is the whole bound.
    let m = model(&fan_out_of_100mi(), &room_for(200.0)).unwrap();
    let heuristic = solve(&m, Method::Heuristic).unwrap();
    assert_eq!(heuristic.proof.name(), "heuristic");
    let plan = solve(&m, Method::Exact).unwrap().plan;
    let doc: serde_json::Value = serde_json::from_str(&json(&m, &plan, "exact")).unwrap();
    assert_eq!(
        (doc["bound"].as_f64(), doc["gap"].as_f64()),
        (Some(1.0), Some(1.0))
    );
}

#[test]
fn the_cost_and_memory_objectives_print_their_bound_and_gap() {
    // a → b → c, a declared, every caller named: b and c may go.
    let chain = || observed(graph(&[("a", "b"), ("b", "c")]));
    let cost = Constraints {
        objective: Objective::Cost,
        ..hop(1.0)
    };
    // Pods alone reserved: one pod, a's, stays whatever merges, and the
    // plan that drops b and c reaches it, proven with no time to search.
    let m = model(&chain(), &cost).unwrap();
    let solution = solve_within(&m, Method::Auto, Duration::ZERO).unwrap();
    assert_eq!(solution.proof.name(), "exact");
    let text = report(&m, &solution.plan, "exact", "test");
    assert!(
        text.contains("bound: the cluster reserves at least 0.33 of the unmerged application's (a pod for each deployment that stays whatever merges, at the least it can request); gap 0.00"),
        "{text}"
    );
    // 64Mi each: the merged pod requests all three, a's own 64Mi is the
    // floor; a third of the memory over the bound's, half of it in cost.
    let mut g = chain();
    for f in &mut g.functions {
        f.memory_bytes = Some(64.0 * MIB);
    }
    let m = model(&g, &cost).unwrap();
    let plan = solve(&m, Method::Exact).unwrap().plan;
    let doc: serde_json::Value = serde_json::from_str(&json(&m, &plan, "exact")).unwrap();
    let (bound, gap) = (doc["bound"].as_f64().unwrap(), doc["gap"].as_f64().unwrap());
    assert!((bound - 1.0 / 3.0).abs() < 1e-9, "{bound}");
    assert!((bound + gap - m.cost(&plan.groups)).abs() < 1e-9, "{gap}");
    // Memory: no copy is the bound, the one copy a call removed needs the gap.
    let memory = Constraints {
        objective: Objective::Memory,
        min_calls_removed: Some(1.0),
        ..hop(1.0)
    };
    let m = model(&g, &memory).unwrap();
    plan_saying(
        &m,
        Method::Exact,
        "bound: copies reserve at least 0Mi (none); gap 64Mi",
    );
}

#[test]
fn a_handlers_own_time_is_not_floored_by_its_pods_cpu() {
    // b's pods used 0.4 ms of cpu a request under a 0.5-core limit (0.8 ms
    // as it ran there), most of it serving HTTP; its handler ran 0.3 ms.
    let mut g = observed(graph(&[("a", "b")]));
    let b = g.functions.iter_mut().find(|f| f.name == "b").unwrap();
    (b.serve_ms, b.cpu_ms, b.cpu) = (Some(0.3), Some(0.4), Some(0.5));
    let m = model(&g, &hop(1.0)).unwrap();
    let i = m.index("b").unwrap();
    // Its serving time alone is no bound on its cpu: own time at least that.
    assert!((m.own(i) - 0.8).abs() < 1e-9, "{}", m.own(i));
    // Its handler's time is: the handler's, its cpu no more than it.
    let b = g.functions.iter_mut().find(|f| f.name == "b").unwrap();
    b.handler_timed = true;
    let m = model(&g, &hop(1.0)).unwrap();
    assert!((m.own(i) - 0.3).abs() < 1e-9, "{}", m.own(i));
    assert!((m.busy(i) - 0.3).abs() < 1e-9, "{}", m.busy(i));
}
