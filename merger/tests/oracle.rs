//! `fmerge plan` against an oracle that starts from the graph
//! (`support/oracle.rs`, `support/oracle_value.rs`): each case writes a
//! `calls.json` (and a `--metrics` scrape when it has one), the oracle reads
//! them with its own code and finds the best plan (every plan of graphs of
//! up to 8 functions; past that, for the calls objective, the integer
//! program of `support/ilp.rs` on the oracle's reading), and the real
//! `fmerge plan --graph calls.json --search exact …` must choose a plan the
//! oracle finds valid and optimal, and report the figures the oracle gives
//! that plan (latency and calls removed, what it reserves).

#[path = "support/graphs.rs"]
mod graphs;
#[path = "support/ilp.rs"]
mod ilp;
#[path = "support/oracle.rs"]
mod oracle;
#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;
#[path = "support/oracle_value.rs"]
mod value;

use fmerge::graph::{Graph, Round};
use fmerge::plan::PlanFile;
use fmerge_plan::model::{Constraints, Objective};
use graphs::{
    Rng, edge, function, random_app, random_graph, random_rounds, social_network,
    social_network_app,
};
use oracle::{MIB, Reading};
use serde_json::Value;
use support::Ran;
use value::{Figures, Set, bit};

/// A case: the graph file, the scrape given with `--metrics`, the flags.
struct Case {
    graph: Graph,
    metrics: Option<String>,
    flags: Constraints,
}

/// What a checked case came to.
struct Checked {
    reading: Reading,
    /// The oracle's best score (`None`: no plan meets the minimums, and the
    /// planner refused).
    best: Option<f64>,
    /// The planner's plan, as the oracle values it.
    groups: Vec<Set>,
    figures: Option<Figures>,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// Runs `fmerge plan --graph calls.json --search SEARCH` on `case`: the
/// plan's groups and plan.json, or what it said when it refused.
///
/// Every function is declared an entry point in the calls.json written, so
/// every deployment stays whatever is merged and a total cap counts what
/// the oracle counts: each function's own deployment plus the copies
/// (`docs/planning.md`, "The oracle's count"; the count with dropped deployments
/// is `merger/plan/tests/cost.rs`').
fn plan(case: &Case, reading: &Reading, search: &str) -> Result<(Vec<Set>, Value), String> {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("calls.json");
    let mut kept_all = case.graph.clone();
    kept_all.functions.iter_mut().for_each(|f| f.entry = true);
    std::fs::write(&graph, serde_json::to_string(&kept_all).unwrap()).unwrap();
    let out = dir.path().join("plan");
    let mut args: Vec<String> = [
        "plan",
        "--graph",
        graph.to_str().unwrap(),
        "--search",
        search,
    ]
    .map(String::from)
    .to_vec();
    args.extend(["--out".into(), out.to_str().unwrap().into()]);
    // The oracle asks for the proven optimum: a busy machine must not turn
    // the default deadline into a failure.
    args.extend(["--time-limit".into(), "3600".into()]);
    if let Some(scrape) = &case.metrics {
        let path = dir.path().join("metrics.txt");
        std::fs::write(&path, scrape).unwrap();
        args.extend(["--metrics".into(), path.to_str().unwrap().into()]);
    }
    args.extend(oracle::args(&case.flags));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Ran { ok, stdout, stderr } = support::fmerge_cli(dir.path(), &args);
    if !ok {
        return Err(stderr);
    }
    let file = PlanFile::load(&out.join("plan.toml")).unwrap().file;
    let mut groups = value::alone(reading.n());
    for g in &file.group {
        let caller = reading.index(&g.caller);
        groups[caller] = g
            .callees
            .iter()
            .fold(bit(caller), |s, c| s | bit(reading.index(c)));
    }
    let json = std::fs::read_to_string(out.join("plan.json")).unwrap();
    Ok((
        groups,
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {stdout}")),
    ))
}

/// The oracle's best for `case` (enumerated, or the program for the calls
/// objective on larger graphs) against the planner's plan: valid, as good,
/// and reported as the oracle values it.
fn check(case: &Case, name: &str) -> Checked {
    let graph = serde_json::to_string(&case.graph).unwrap();
    let reading = oracle::read(&graph, case.metrics.as_deref(), &case.flags);
    let best = if reading.n() <= 8 {
        value::best(&reading).map(|b| b.0)
    } else {
        let f = &case.flags;
        assert!(
            f.min_gain_ms.is_none() && f.min_calls_removed.is_none(),
            "{name}"
        );
        match f.objective {
            Objective::Calls => Some(ilp::best(&reading).0),
            Objective::Latency => Some(value::best_latency_uncoupled(&reading)),
            other => panic!(
                "{name}: no second method for {} past 8 functions",
                other.name()
            ),
        }
    };
    let planned = plan(case, &reading, "exact");
    let Some(best) = best else {
        let said = planned.err().unwrap_or_else(|| {
            panic!("{name}: no plan meets the minimums, and the planner planned")
        });
        assert!(
            said.contains("no plan under these constraints removes"),
            "{name}: {said}"
        );
        return Checked {
            reading,
            best: None,
            groups: Vec::new(),
            figures: None,
        };
    };
    let (groups, json) = planned.unwrap_or_else(|e| panic!("{name}: the planner refused: {e}"));
    let f = value::figures(&reading, &groups);
    assert!(
        value::allowed(&reading, &groups, &f),
        "{name}: the plan {groups:?} breaks a rule: {f:?}"
    );
    let got = value::score(&reading, &f);
    assert!(
        close(got, best),
        "{name}: the planner's plan scores {got}, the oracle's best {best} ({groups:?})"
    );
    let figures = [("removed", f.removed), ("gain_ms", f.gain_ms)];
    assert_figures(&json, &figures, &format!("{name}: plan.json"));
    // Per entry point: its share of the requests and the latency it loses.
    let entries = json["entries"].as_array().unwrap();
    let gains = value::entry_gains(&reading, &groups);
    assert_eq!(
        entries.len(),
        gains.len(),
        "{name}: entry points {entries:?}"
    );
    for (e, gain) in gains {
        let entry = entries
            .iter()
            .find(|x| x["function"] == reading.names[e].as_str())
            .unwrap_or_else(|| panic!("{name}: no entry point {}", reading.names[e]));
        let figures = [("share", reading.share[e]), ("latency_gain_ms", gain)];
        assert_figures(entry, &figures, &format!("{name}: {}'s", reading.names[e]));
    }
    // Every deployment stays (each function an entry point): as many pods
    // after as before, each figure the oracle's base before and its base
    // and copies after. (The planner also lists the requests of functions
    // that set only limits, which the oracle leaves out.)
    let rows = json["reserved"].as_array().unwrap();
    let pods = rows.iter().find(|x| x["what"] == "pods").unwrap();
    for key in ["before", "after"] {
        assert_eq!(
            pods[key].as_f64(),
            Some(reading.n() as f64),
            "{name}: {pods}"
        );
    }
    for r in &f.reserved {
        let row = rows
            .iter()
            .find(|x| x["what"] == r.what)
            .unwrap_or_else(|| panic!("{name}: no {}", r.what));
        let figures = [("before", r.base), ("after", r.base + r.copies)];
        assert_figures(row, &figures, &format!("{name}: {}", r.what));
    }
    Checked {
        reading,
        best: Some(best),
        groups,
        figures: Some(f),
    }
}

/// Asserts that each figure `key` of `said` (whose figures `whose` names)
/// is the oracle's, within [`close`].
fn assert_figures(said: &serde_json::Value, figures: &[(&str, f64)], whose: &str) {
    for &(key, oracle) in figures {
        let said = said[key].as_f64().unwrap();
        assert!(
            close(said, oracle),
            "{whose} {key} {said}, the oracle {oracle}"
        );
    }
}

/// The heuristic's plan on `case`, whose best the oracle found: valid by
/// the oracle's rules, reported as the oracle values it, and never better.
fn check_heuristic(case: &Case, c: &Checked, name: &str) {
    let (groups, json) =
        plan(case, &c.reading, "heuristic").unwrap_or_else(|e| panic!("{name}: {e}"));
    let f = value::figures(&c.reading, &groups);
    assert!(
        value::allowed(&c.reading, &groups, &f),
        "{name}: the heuristic's plan {groups:?} breaks a rule"
    );
    let figures = [("removed", f.removed), ("gain_ms", f.gain_ms)];
    assert_figures(&json, &figures, &format!("{name}: the heuristic's"));
    let got = value::score(&c.reading, &f);
    assert!(
        got <= c.best.unwrap() + 1e-6,
        "{name}: the heuristic's {got} beats the best {:?}",
        c.best
    );
}

fn flags() -> Constraints {
    Constraints {
        hop_ms: 1.0,
        ..Constraints::default()
    }
}

/// `graph` with traffic written into it, as `fmerge graph --metrics` does:
/// outside requests per function, calls per edge.
fn measured(mut graph: Graph, external: &[(&str, f64)], calls: &[(&str, &str, f64)]) -> Graph {
    graph.traffic = Some("test".into());
    for f in &mut graph.functions {
        f.external = Some(external.iter().find(|x| x.0 == f.name).map_or(0.0, |x| x.1));
    }
    for e in &mut graph.edges {
        let to = e.to.as_deref().unwrap();
        e.calls = Some(
            calls
                .iter()
                .find(|c| c.0 == e.from && c.1 == to)
                .map_or(0.0, |c| c.2),
        );
    }
    graph
}

/// This repo's eight socialNetwork functions, without traffic, checked
/// under `flags`.
fn check_social(flags: Constraints, name: &str) -> Checked {
    let graph = social_network();
    let metrics = None;
    check(
        &Case {
            graph,
            metrics,
            flags,
        },
        name,
    )
}

/// A graph of 64Mi functions with these calls, one site each, in listing
/// order of first mention.
fn calls_graph(edges: &[(&str, &str)]) -> Graph {
    let mut names: Vec<&str> = Vec::new();
    for (a, b) in edges {
        for x in [a, b] {
            if !names.contains(x) {
                names.push(x);
            }
        }
    }
    Graph {
        functions: names.iter().map(|n| function(n, "64Mi")).collect(),
        edges: edges.iter().map(|(a, b)| edge(a, b)).collect(),
        ..Graph::default()
    }
}

fn rounds(graph: &mut Graph, name: &str, rounds: Vec<Round>) {
    graph
        .functions
        .iter_mut()
        .find(|f| f.name == name)
        .unwrap()
        .rounds = rounds;
}

fn round(calls: &[&str], looped: &[&str]) -> Round {
    let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    Round {
        calls: names(calls),
        looped: names(looped),
    }
}

/// The scrape line of `n` requests to `function` from `caller` (`""`: outside).
fn sample(function: &str, caller: &str, n: f64) -> String {
    format!("http_requests_total{{function=\"{function}\",caller=\"{caller}\"}} {n}\n")
}

#[test]
fn the_latency_objective_on_compose_posts_tree() {
    let c = check_social(flags(), "latency");
    // compose-post's critical path is 4 hops of 1 ms (text-service →
    // url-shorten, then write-home-timeline → social-graph-get-followers);
    // all of it goes.
    assert!(close(c.best.unwrap(), 4.0), "{:?}", c.best);
}

#[test]
fn the_calls_objective_with_a_memory_cap_per_group() {
    let flags = Constraints {
        objective: Objective::Calls,
        max_memory: Some(256.0 * MIB),
        ..flags()
    };
    let c = check_social(flags, "calls");
    let uncapped = Constraints {
        objective: Objective::Calls,
        ..self::flags()
    };
    let uncapped = check_social(uncapped, "calls, no cap");
    assert!(close(uncapped.best.unwrap(), 7.0));
    assert!(
        c.best.unwrap() < 7.0 && c.best.unwrap() >= 4.0,
        "{:?}",
        c.best
    );
}

#[test]
fn the_latency_objective_under_a_memory_cap_per_group() {
    // 192Mi: compose-post (128Mi) and one 64Mi callee.
    let flags = Constraints {
        max_memory: Some(192.0 * MIB),
        ..flags()
    };
    let c = check_social(flags, "max-memory");
    assert!(
        c.best.unwrap() > 0.0 && c.best.unwrap() < 4.0,
        "{:?}",
        c.best
    );
    for (r, &g) in c.groups.iter().enumerate() {
        let sum: f64 = (0..c.reading.n())
            .filter(|&i| g & bit(i) != 0)
            .map(|i| c.reading.memory[i].unwrap())
            .sum();
        assert!(g == bit(r) || sum <= 192.0 * MIB);
    }
}

#[test]
fn a_total_memory_cap_bounds_the_copies() {
    // What the eight functions reserve alone (576Mi) and room for two copies.
    let flags = Constraints {
        max_total_memory: Some((576.0 + 128.0) * MIB),
        ..flags()
    };
    let c = check_social(flags, "max-total-memory");
    let f = c.figures.unwrap();
    assert!(f.copies("memory limits") <= 128.0 * MIB && f.copies("memory limits") > 0.0);
    assert!(
        c.best.unwrap() < 4.0 && c.best.unwrap() > 0.0,
        "{:?}",
        c.best
    );
}

#[test]
fn a_total_cpu_cap_bounds_the_copies() {
    let mut graph = social_network();
    for (i, f) in graph.functions.iter_mut().enumerate() {
        f.cpu = Some(0.1 * (1 + i % 3) as f64);
        f.requests_cpu = Some(0.05);
        f.requests_memory_bytes = Some(16.0 * MIB);
    }
    let base: f64 = graph.functions.iter().map(|f| f.cpu.unwrap()).sum();
    let flags = Constraints {
        max_total_cpu: Some(base + 0.3),
        ..flags()
    };
    let c = check(
        &Case {
            graph,
            metrics: None,
            flags,
        },
        "max-total-cpu",
    );
    let f = c.figures.unwrap();
    assert_eq!(f.reserved.len(), 4, "{:?}", f.reserved);
    assert!(f.copies("cpu limits") <= 0.3 + 1e-9 && f.copies("cpu limits") > 0.0);
    assert!(c.best.unwrap() < 4.0, "{:?}", c.best);
}

#[test]
fn minimums_bound_every_objective_and_refuse_what_no_plan_reaches() {
    let graph = social_network();
    // The least copies' memory that removes 2 ms.
    let memory = Constraints {
        objective: Objective::Memory,
        min_gain_ms: Some(2.0),
        ..flags()
    };
    let c = check(
        &Case {
            graph: graph.clone(),
            metrics: None,
            flags: memory,
        },
        "memory objective",
    );
    let f = c.figures.unwrap();
    assert!(f.gain_ms >= 2.0 - 1e-9 && f.copies("memory limits") < 7.0 * 64.0 * MIB);
    // Calls removed under a per-group cap, at least 5 of them.
    let calls = Constraints {
        objective: Objective::Calls,
        max_memory: Some(256.0 * MIB),
        min_calls_removed: Some(5.0),
        ..flags()
    };
    check(
        &Case {
            graph: graph.clone(),
            metrics: None,
            flags: calls,
        },
        "min-calls-removed",
    );
    // More than any plan removes: refused, by both.
    for (flags, what) in [
        (
            Constraints {
                min_gain_ms: Some(4.5),
                ..flags()
            },
            "min-gain-ms",
        ),
        (
            Constraints {
                min_calls_removed: Some(7.5),
                objective: Objective::Calls,
                ..flags()
            },
            "min-calls-removed",
        ),
    ] {
        let c = check(
            &Case {
                graph: graph.clone(),
                metrics: None,
                flags,
            },
            what,
        );
        assert!(c.best.is_none(), "{what}");
    }
}

/// `a` calls `b` on 99% of its requests and `c` on 1%, in one round; the
/// scrape says so.
fn rare_branch() -> Case {
    let mut graph = calls_graph(&[("a", "b"), ("a", "c")]);
    rounds(&mut graph, "a", vec![round(&["b", "c"], &[])]);
    let metrics = [
        sample("a", "", 100.0),
        sample("b", "a", 99.0),
        sample("c", "a", 1.0),
    ]
    .concat();
    Case {
        graph,
        metrics: Some(metrics),
        flags: flags(),
    }
}

#[test]
fn a_rare_branch_counts_for_its_share_of_the_requests() {
    // 128Mi a group: a and one callee; b, made 99 times in 100, pays.
    let mut case = rare_branch();
    case.flags.max_memory = Some(128.0 * MIB);
    let c = check(&case, "rare branch, capped");
    assert_eq!(c.groups[0], bit(0) | bit(1), "{:b}", c.groups[0]);
    assert!(close(c.best.unwrap(), 0.99), "{:?}", c.best);
    // Uncapped: the 1% callee is worth its 1%.
    let c = check(&rare_branch(), "rare branch");
    assert!(close(c.best.unwrap(), 1.0), "{:?}", c.best);
}

#[test]
fn a_looped_site_is_on_the_critical_path_once_per_iteration() {
    // a calls b ten times a request in a loop, beside one call of c that
    // costs 4 ms; merging b takes 10 ms off, merging c nothing while b's
    // loop is longer.
    let mut graph = calls_graph(&[("a", "b"), ("a", "c")]);
    rounds(&mut graph, "a", vec![round(&["c"], &["b"])]);
    let mut graph = measured(
        graph,
        &[("a", 10.0)],
        &[("a", "b", 100.0), ("a", "c", 10.0)],
    );
    graph.edges[1].hop_ms = Some(4.0);
    let mut case = Case {
        graph,
        metrics: None,
        flags: flags(),
    };
    case.flags.max_memory = Some(128.0 * MIB);
    let c = check(&case, "looped");
    assert!(close(c.best.unwrap(), 6.0), "{:?}", c.best); // 10 → 4
    assert_eq!(c.groups[0], bit(0) | bit(1));
}

#[test]
fn an_entry_point_the_scrape_misses_is_planned_from_the_code() {
    // x and y are entry points; the scrape has y's figures and none of x's.
    let graph = calls_graph(&[("x", "a"), ("y", "b")]);
    let metrics = [sample("y", "", 30.0), sample("b", "y", 30.0)].concat();
    let case = Case {
        graph,
        metrics: Some(metrics),
        flags: flags(),
    };
    let c = check(&case, "unscraped entry point");
    let x = c.reading.index("x");
    assert!(close(c.reading.share[x], 0.5), "{:?}", c.reading.share);
    assert_eq!(c.groups[x], bit(x) | bit(c.reading.index("a")));
}

/// How the random cases' traffic reaches the planner.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Traffic {
    /// None: each function no other calls gets one request, each site a call.
    None,
    /// Written into `calls.json`, as `fmerge graph --metrics` writes it.
    InGraph,
    /// A `--metrics` scrape; now and then a function has no sample.
    Scrape,
}

/// `graph` (with `random_traffic`'s figures) with its traffic as `how`
/// says: a scrape of the same figures, or none; the scrape may miss a
/// function (`missing`).
fn traffic_as(mut graph: Graph, how: Traffic, missing: Option<usize>) -> (Graph, Option<String>) {
    let figures = graph.clone();
    if how != Traffic::InGraph {
        graph.traffic = None;
        graph.functions.iter_mut().for_each(|f| f.external = None);
        graph.edges.iter_mut().for_each(|e| e.calls = None);
    }
    if how != Traffic::Scrape {
        return (graph, None);
    }
    let mut scrape = String::new();
    for (i, f) in figures.functions.iter().enumerate() {
        if Some(i) == missing {
            continue;
        }
        scrape.push_str(&sample(&f.name, "", f.external.unwrap_or(0.0)));
        for e in figures
            .edges
            .iter()
            .filter(|e| e.to.as_deref() == Some(&f.name))
        {
            scrape.push_str(&sample(&f.name, &e.from, e.calls.unwrap_or(0.0)));
        }
    }
    (graph, Some(scrape))
}

/// A random case: `n` functions in a random call DAG, random memory and cpu limits, conflicts, a
/// function left out now and then, measured traffic (or none), rounds with
/// loops and measured hop costs, and random caps and minimums.
fn random_case(rng: &mut Rng, n: usize, objective: Objective) -> (Case, Traffic) {
    let graph = random_graph(rng, n);
    let mut graph = graphs::random_traffic(rng, graph);
    for f in &mut graph.functions {
        f.cpu = Some(0.1 * (1 + rng.below(4)) as f64);
    }
    if rng.below(5) == 0 {
        graph.functions[rng.below(n as u64) as usize].left_out = Some("test".into());
    }
    let graph = random_rounds(rng, graph);
    let how = [Traffic::None, Traffic::InGraph, Traffic::Scrape][rng.below(3) as usize];
    // A function the scrape misses: f0, an entry point, or any.
    let missing = match rng.below(4) {
        0 => Some(0),
        1 => Some(rng.below(n as u64) as usize),
        _ => None,
    };
    let (graph, metrics) = traffic_as(graph, how, missing);
    let memory: f64 = graph.functions.iter().filter_map(|f| f.memory_bytes).sum();
    let cpu: f64 = graph.functions.iter().filter_map(|f| f.cpu).sum();
    let mut flags = Constraints {
        objective,
        hop_ms: 0.5 * (1 + rng.below(4)) as f64,
        // Small groups past 6 functions: the enumeration's size.
        max_memory: (n > 6 || rng.below(2) == 0).then(|| (48 + 16 * rng.below(6)) as f64 * MIB),
        max_total_memory: (rng.below(3) == 0).then(|| memory + (16 * rng.below(8)) as f64 * MIB),
        max_total_cpu: (rng.below(3) == 0).then(|| cpu + 0.1 * rng.below(6) as f64),
        ..Constraints::default()
    };
    if rng.below(4) == 0 {
        let (a, b) = (rng.below(n as u64), rng.below(n as u64));
        if a != b {
            flags
                .keep_apart
                .push(vec![format!("f{a}"), format!("f{b}")]);
        }
    }
    let minimum = 0.1 * rng.below(8) as f64;
    match (objective, rng.below(4)) {
        (Objective::Memory, 0 | 1) | (Objective::Latency, 0) => flags.min_gain_ms = Some(minimum),
        (Objective::Memory, _) | (Objective::Calls, 0) => flags.min_calls_removed = Some(minimum),
        _ => {}
    }
    (
        Case {
            graph,
            metrics,
            flags,
        },
        how,
    )
}

/// What the random cases reached, so that the sweep can say they reach
/// what they are for (each case agreed, or the sweep failed).
#[derive(Debug, Default)]
struct Reached {
    checked: usize,
    merged: usize,
    refused: usize,
    scraped: usize,
    unscraped_entry: usize,
    looped: usize,
    capped: usize,
}

impl Reached {
    fn add(&mut self, c: &Checked, case: &Case, how: Traffic) {
        self.checked += 1;
        let merged = c.groups.iter().enumerate().any(|(r, &g)| g != bit(r));
        self.merged += usize::from(merged);
        self.refused += usize::from(c.best.is_none());
        self.scraped += usize::from(how == Traffic::Scrape && merged);
        let unscraped = |i: usize| {
            let own = format!("function=\"{}\"", c.reading.names[i]);
            case.metrics.as_ref().is_some_and(|m| !m.contains(&own))
        };
        self.unscraped_entry +=
            usize::from((0..c.reading.n()).any(|i| unscraped(i) && c.reading.share[i] > 0.0));
        let looped = c
            .reading
            .rounds
            .iter()
            .flatten()
            .flatten()
            .any(|s| s.times > 1.0 || s.chance < 1.0);
        self.looped += usize::from(looped && merged);
        let f = &case.flags;
        let capped =
            f.max_memory.is_some() || f.max_total_memory.is_some() || f.max_total_cpu.is_some();
        self.capped += usize::from(capped && merged);
    }
}

#[test]
fn every_objective_agrees_with_the_enumeration_on_random_graphs_of_up_to_8_functions() {
    let mut rng = Rng(0x007a_c1e5_2026);
    let mut reached = Reached::default();
    for k in 0..180 {
        let n = 3 + k % 6;
        let objective = [Objective::Latency, Objective::Calls, Objective::Memory][k / 6 % 3];
        let (case, how) = random_case(&mut rng, n, objective);
        let c = check(
            &case,
            &format!(
                "case {k}, {n} functions, {}, traffic {how:?}",
                objective.name()
            ),
        );
        reached.add(&c, &case, how);
    }
    let r = &reached;
    assert!(
        r.checked == 180
            && r.merged >= 90
            && r.refused >= 10
            && r.scraped >= 25
            && r.unscraped_entry >= 10
            && r.looped >= 45
            && r.capped >= 60,
        "{reached:?}"
    );
}

/// Past what the enumeration takes: random graphs of 9 to 14 functions,
/// socialNetwork's 26, and random applications of 26 in call trees of at
/// most 11, in turn.
fn large_graph(rng: &mut Rng, k: usize) -> (usize, Graph) {
    match k % 3 {
        0 => {
            let n = 9 + k / 3 % 6;
            (n, random_graph(rng, n))
        }
        1 => (26, social_network_app()),
        _ => (26, random_app(rng, 26)),
    }
}

/// Functions `a` and `b` of `graph`, kept apart.
fn apart(graph: &Graph, a: usize, b: usize) -> Vec<Vec<String>> {
    let name = |i: usize| graph.functions[i].name.clone();
    vec![vec![name(a), name(b)]]
}

/// A random `--max-memory` for the large graphs: 48 to 208Mi.
fn group_cap(rng: &mut Rng) -> f64 {
    (48 + 16 * rng.below(11)) as f64 * MIB
}

/// The sweep past what the enumeration takes: `cases` large graphs with
/// random traffic, which `shape` adds to and which `flags` plans for (given
/// the graph as written and its function count); each case checked against
/// the oracle, and the heuristic's plan valid and never better.
fn sweep_large(
    seed: u64,
    cases: usize,
    mut shape: impl FnMut(&mut Rng, Graph) -> Graph,
    mut flags: impl FnMut(&mut Rng, &Graph, usize) -> Constraints,
) -> Reached {
    let mut rng = Rng(seed);
    let mut reached = Reached::default();
    for k in 0..cases {
        let (n, graph) = large_graph(&mut rng, k);
        let graph = graphs::random_traffic(&mut rng, graph);
        let graph = shape(&mut rng, graph);
        // Each kind of traffic in turn for each kind of graph
        // ([`large_graph`]), so that every pair is swept.
        let how = [Traffic::None, Traffic::InGraph, Traffic::Scrape][k / 3 % 3];
        let (graph, metrics) = traffic_as(graph, how, None);
        let flags = flags(&mut rng, &graph, n);
        let case = Case {
            graph,
            metrics,
            flags,
        };
        let name = format!("case {k}, {n} functions, traffic {how:?}");
        let c = check(&case, &name);
        check_heuristic(&case, &c, &name);
        reached.add(&c, &case, how);
    }
    reached
}

/// Past what the enumeration takes, up to the size `docs/planning.md`
/// claims the exact search for (socialNetwork's 26 functions, call trees of
/// at most 11): the calls objective against the integer program on the
/// oracle's reading; the heuristic's plans are valid there and never
/// better.
#[test]
fn the_calls_objective_agrees_with_the_program_up_to_26_functions() {
    let with_cpu = |rng: &mut Rng, mut graph: Graph| {
        for f in &mut graph.functions {
            f.cpu = Some(0.1 * (1 + rng.below(4)) as f64);
        }
        graph
    };
    let reached = sweep_large(0x11_9e5e_2026, 60, with_cpu, |rng, graph, n| {
        let memory: f64 = graph.functions.iter().filter_map(|f| f.memory_bytes).sum();
        let cpu: f64 = graph.functions.iter().filter_map(|f| f.cpu).sum();
        Constraints {
            objective: Objective::Calls,
            hop_ms: 1.0,
            max_memory: (rng.below(2) == 0).then(|| group_cap(rng)),
            max_total_memory: (rng.below(2) == 0)
                .then(|| memory + (16 * rng.below(23)) as f64 * MIB),
            max_total_cpu: (rng.below(3) == 0).then(|| cpu + 0.1 * rng.below(10) as f64),
            keep_apart: apart(graph, 0, n - 1),
            ..Constraints::default()
        }
    });
    let r = &reached;
    assert!(
        r.checked == 60 && r.merged >= 45 && r.capped >= 35 && r.scraped >= 15,
        "{reached:?}"
    );
}

#[test]
fn minimums_are_per_request_of_the_application_whatever_the_scrapes_count() {
    // 1000 requests at a, each calling b once: one call a request.
    let metrics = [sample("a", "", 1000.0), sample("b", "a", 1000.0)].concat();
    let case = |min: f64| Case {
        graph: calls_graph(&[("a", "b")]),
        metrics: Some(metrics.clone()),
        flags: Constraints {
            objective: Objective::Calls,
            min_calls_removed: Some(min),
            ..flags()
        },
    };
    assert!(check(&case(50.0), "50 calls").best.is_none());
    assert!(close(check(&case(1.0), "1 call").best.unwrap(), 1.0));
}

#[test]
fn a_call_only_the_scrape_shows_is_planned_from_the_traffic() {
    // No `invoke` of a's names b (a name computed at run time); the scrape
    // counts 3 calls a request, taken one after another.
    let mut graph = calls_graph(&[("a", "c")]);
    graph.functions.push(function("b", "64Mi"));
    let metrics = [
        sample("a", "", 10.0),
        sample("b", "a", 30.0),
        sample("c", "a", 10.0),
    ]
    .concat();
    let c = check(
        &Case {
            graph,
            metrics: Some(metrics),
            flags: flags(),
        },
        "computed name",
    );
    assert!(close(c.best.unwrap(), 4.0), "{:?}", c.best);
}

/// The latency objective past what the enumeration takes, up to 26
/// functions, with a memory cap per group and keep-apart pairs (no total
/// cap or minimum, which would couple the deployments): against a dynamic
/// program on the oracle's reading.
#[test]
fn the_latency_objective_agrees_with_a_dynamic_program_up_to_26_functions() {
    let reached = sweep_large(0x1a7e_2026, 45, random_rounds, |rng, graph, n| {
        Constraints {
            hop_ms: 0.5 * (1 + rng.below(4)) as f64,
            max_memory: (rng.below(3) != 0).then(|| group_cap(rng)),
            keep_apart: apart(graph, 1, n - 1),
            ..Constraints::default()
        }
    });
    let r = &reached;
    assert!(
        r.checked == 45 && r.merged >= 35 && r.capped >= 20 && r.looped >= 20 && r.scraped >= 10,
        "{reached:?}"
    );
}
