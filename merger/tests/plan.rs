//! `fmerge plan`: constraints, refusals, copied callees, the heuristic's
//! fallback on large graphs, and the command (the oracle is in
//! `oracle.rs`).
//!
//! Most tests plan hand-written graphs (the JSON `fmerge graph` writes), so
//! they need no build; the refusal test reads a real fixture's code.

#[path = "support/graphs.rs"]
mod graphs;
#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use fmerge::graph::{Conflict, Graph};
use fmerge::plan::model::Objective;
use fmerge::plan::search::{self, Limits};
use fmerge::plan::{self, Constraints, LoadedPlan, Method, PlanFile};
use graphs::{Rng, edge, front_and_mid, function, graph, random_graph, social_network};
use std::collections::BTreeMap;
use support::*;

fn groups(graph: &Graph, constraints: &Constraints) -> (BTreeMap<String, Vec<String>>, f64) {
    let model = plan::model(graph, constraints).unwrap();
    let solution = plan::solve(&model, Method::Exact).unwrap();
    let (plan, how) = (solution.plan, solution.proof.name());
    assert_eq!(how, "exact");
    (plan::named_groups(&model, &plan), plan.removed)
}

/// The hop-count objective: these tests are about which calls a group
/// takes in; the latency objective has its own tests (`plan/tests.rs`).
fn by_calls() -> Constraints {
    Constraints {
        objective: Objective::Calls,
        ..Constraints::default()
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn without_constraints_the_whole_call_tree_is_one_group() {
    let (groups, removed) = groups(&social_network(), &by_calls());
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups["compose-post"].len(), 8);
    assert_eq!(removed, 7.0);
}

#[test]
fn memory_and_keep_apart_bound_every_group() {
    let graph = social_network();
    // 256Mi: compose-post (128) and two 64Mi callees, or a 64Mi caller and three.
    let constraints = Constraints {
        max_memory: Some(256.0 * 1048576.0),
        keep_apart: vec![names(&["compose-post", "unique-id"])],
        ..by_calls()
    };
    let (groups, removed) = groups(&graph, &constraints);
    for (caller, members) in &groups {
        let memory: f64 = members
            .iter()
            .map(|m| graph.function(m).unwrap().memory_bytes.unwrap())
            .sum();
        assert!(memory <= 256.0 * 1048576.0, "{caller}: {members:?}");
        assert!(
            !(members.contains(&"compose-post".into()) && members.contains(&"unique-id".into())),
            "{members:?}"
        );
    }
    // compose-post + text-service's and write-home-timeline's subtrees can
    // not all fit; the best is 2 hops in compose-post's group (two 64Mi
    // callees) and the rest in groups of their own callers.
    let unconstrained = self::groups(&graph, &by_calls()).1;
    assert!(
        removed < unconstrained && removed >= 4.0,
        "{removed} {groups:?}"
    );
}

#[test]
fn a_callee_several_callers_use_is_copied_into_each_group() {
    // Two entry points both call `shared`; each group holds a copy.
    let graph = Graph {
        functions: ["front-a", "front-b", "shared", "leaf"]
            .iter()
            .map(|n| function(n, "32Mi"))
            .collect(),
        edges: vec![
            edge("front-a", "shared"),
            edge("front-b", "shared"),
            edge("shared", "leaf"),
        ],
        ..Graph::default()
    };
    let (groups, removed) = groups(&graph, &by_calls());
    assert_eq!(groups["front-a"], names(&["front-a", "shared", "leaf"]));
    assert_eq!(groups["front-b"], names(&["front-b", "shared", "leaf"]));
    // Per request of the application: each entry point's removes two.
    assert_eq!(removed, 2.0);
    // Both groups hold `shared` and `leaf`, and nothing else in the code
    // calls them; but no entry point is declared and no traffic shows who
    // calls them, so their own deployments stay (the plan file's
    // `dropped` is empty; a drop's proof is tested below).
    let model = plan::model(&graph, &by_calls()).unwrap();
    let solution = plan::solve(&model, Method::Exact).unwrap();
    let (p, how) = (solution.plan, solution.proof.name());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan::plan_toml(&model, &p, None, how)).unwrap();
    let LoadedPlan { file, groups: read } = PlanFile::load(&path).unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(file.group[0].caller, "front-a");
    assert_eq!(read[1].merge.callees, names(&["shared", "leaf"]));
    assert!(file.dropped.is_empty(), "{:?}", file.dropped);
}

#[test]
fn a_conflict_keeps_a_callee_out_and_the_report_says_why() {
    let mut graph = social_network();
    graph.conflicts.push(Conflict {
        a: "compose-post".into(),
        b: "store-post".into(),
        reason: "shared state: crate x keeps mutable static `x::N`".into(),
    });
    graph.functions[3].left_out = Some("it sets its own #[global_allocator]".into());
    let model = plan::model(&graph, &by_calls()).unwrap();
    let solution = plan::solve(&model, Method::Exact).unwrap();
    let (p, how) = (solution.plan, solution.proof.name());
    let groups = plan::named_groups(&model, &p);
    assert!(!groups["compose-post"].contains(&"store-post".to_string()));
    assert!(
        groups
            .values()
            .all(|g| !g.contains(&"url-shorten".to_string()))
    );
    let report = plan::report(&model, &p, how, "test");
    assert!(
        report.contains("store-post stays remote from compose-post: cannot share a binary with compose-post: shared state"),
        "{report}"
    );
    assert!(
        report.contains(
            "url-shorten stays remote from compose-post: it sets its own #[global_allocator]"
        ),
        "{report}"
    );
}

#[test]
fn traffic_weights_choose_the_busy_path() {
    // a calls b and c; b's path is hot, c's cold; room for one callee.
    let mut graph = Graph {
        functions: ["a", "b", "c"]
            .iter()
            .map(|n| function(n, "32Mi"))
            .collect(),
        edges: vec![edge("a", "b"), edge("a", "c")],
        ..Graph::default()
    };
    let traffic = fmerge::graph::traffic::parse_prometheus(
        "http_requests_total{function=\"a\",caller=\"\"} 100\n\
         http_requests_total{function=\"b\",caller=\"a\"} 10\n\
         http_requests_total{function=\"c\",caller=\"a\"} 90\n",
        "test",
    )
    .unwrap();
    assert!(graph.weigh(&traffic).is_empty());
    let constraints = Constraints {
        max_memory: Some(64.0 * 1048576.0),
        ..by_calls()
    };
    let (groups, removed) = groups(&graph, &constraints);
    assert_eq!(groups["a"], names(&["a", "c"]));
    // 90 of the 100 requests call c: 0.9 hops a request.
    assert!((removed - 0.9).abs() < 1e-6, "{removed}");
}

#[test]
fn past_its_limits_the_exact_search_gives_up_and_the_heuristic_plans() {
    let mut rng = Rng(42);
    let graph = random_graph(&mut rng, 100);
    let model = plan::model(&graph, &by_calls()).unwrap();
    let tight = Limits {
        candidates: 10,
        nodes: 1000,
        ..Limits::default()
    };
    assert!(search::exact(&model, tight).is_none());
    let p = search::heuristic(&model);
    assert!(p.removed > 0.0);
}

fn write_graph(dir: &std::path::Path, graph: &Graph) -> std::path::PathBuf {
    let path = dir.join("calls.json");
    std::fs::write(&path, serde_json::to_string(graph).unwrap()).unwrap();
    path
}

/// The arguments of `fmerge plan --graph GRAPH EXTRA`.
fn plan_args<'a>(graph: &'a std::path::Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["plan", "--graph", graph.to_str().unwrap()];
    args.extend(extra);
    args
}

/// `fmerge plan --graph GRAPH --out <dir>/OUT --hop-ms 8.8 EXTRA` in `dir`,
/// which must succeed; its stdout.
fn plan_into(dir: &std::path::Path, graph: &std::path::Path, out: &str, extra: &[&str]) -> String {
    let out = dir.join(out);
    let mut args = plan_args(graph, &["--out", out.to_str().unwrap(), "--hop-ms", "8.8"]);
    args.extend(extra);
    let Ran { ok, stdout, stderr } = fmerge_cli(dir, &args);
    assert!(ok, "fmerge {args:?} failed:\n{stderr}");
    stdout
}

#[test]
fn the_plan_command_writes_group_files_fmerge_build_reads() {
    let dir = tempfile::tempdir().unwrap();
    let graph = write_graph(dir.path(), &social_network());
    let stdout = plan_into(dir.path(), &graph, "plan", &[]);
    assert_says(
        &stdout,
        &[
            "per-hop latency: 8.8 ms, from --hop-ms",
            "compose-post",
            "4 → 0",
            "7 → 0",
            "35.20–61.60 ms",
        ],
    );
    let out = dir.path().join("plan");
    let group = fmerge::group::Group::load(&out.join("compose-post.toml")).unwrap();
    assert_eq!(group.caller.as_deref(), Some("compose-post"));
    assert_eq!(group.merge.callees.len(), 7);
    let groups = PlanFile::load(&out.join("plan.toml")).unwrap().groups;
    assert_eq!(groups[0].merge.callees, group.merge.callees);
}

#[test]
fn evaluate_values_the_groups_of_a_plan_file_and_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let graph = write_graph(dir.path(), &social_network());
    plan_into(dir.path(), &graph, "plan", &[]);
    // The plan's own groups, valued again: the same groups, said to be given.
    let plan_file = dir.path().join("plan/plan.toml");
    let evaluate = ["--evaluate", plan_file.to_str().unwrap()];
    let stdout = plan_into(dir.path(), &graph, "again", &evaluate);
    assert_says(&stdout, &["search: given (--evaluate)", "compose-post"]);
    let callees = |file: &std::path::Path| {
        PlanFile::load(file).unwrap().groups[0]
            .merge
            .callees
            .clone()
    };
    assert_eq!(
        callees(&dir.path().join("again/plan.toml")),
        callees(&plan_file)
    );
    // A plan file that is not there, or that names a function the graph
    // does not have, is refused with its fix.
    cli_refuses(
        dir.path(),
        &plan_args(&graph, &["--evaluate", "missing.toml"]),
        &["missing.toml", "fix:"],
    );
    let text = std::fs::read_to_string(&plan_file).unwrap();
    std::fs::write(
        dir.path().join("other.toml"),
        text.replace("\"unique-id\"", "\"nope\""),
    )
    .unwrap();
    cli_refuses(
        dir.path(),
        &plan_args(&graph, &["--evaluate", "other.toml"]),
        &["names nope, which is not in the call graph", "fix:"],
    );
}

#[test]
fn bad_plan_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let graph = write_graph(dir.path(), &social_network());
    for (args, expect) in [
        (
            vec!["--keep-apart", "compose-post,nope"],
            "unknown function nope in the graph, which has the functions compose-post",
        ),
        (
            vec!["--keep-apart", "compose-post"],
            "fix: name two or more",
        ),
        (
            vec!["--max-memory", "512K"],
            "\"512K\" is not a Kubernetes quantity",
        ),
        (vec!["--hop-ms", "0"], "more than 0"),
        (vec!["--search", "fast"], "invalid value 'fast'"),
        (vec!["--objective", "speed"], "invalid value 'speed'"),
        (vec!["--objective", "memory"], "give --min-gain-ms MS"),
        (
            vec!["--max-total-cpu", "lots"],
            "--max-total-cpu: \"lots\" is not",
        ),
        (vec!["--min-gain-ms=-1"], "give a number of 0 or more"),
        // The graph's conflicts were read without it.
        (
            vec!["--allow-shared-static", "st-helper"],
            "differs from what",
        ),
    ] {
        cli_refuses(dir.path(), &plan_args(&graph, &args), &[expect]);
    }
    let metrics = dir.path().join("metrics.txt");
    std::fs::write(
        &metrics,
        "http_requests_total{function=\"unique-id\"} 1\ngarbage here ok\n",
    )
    .unwrap();
    let extra = ["--metrics", metrics.to_str().unwrap()];
    cli_refuses(
        dir.path(),
        &plan_args(&graph, &extra),
        &["line 2", "garbage here ok"],
    );
    std::fs::write(dir.path().join("bad.json"), "{").unwrap();
    cli_refuses(
        dir.path(),
        &["plan", "--graph", "bad.json"],
        &["not a graph written by `fmerge graph"],
    );
    cli_refuses(dir.path(), &["plan"], &["-f stack.yml"]);
    // No memory limit for a function, and --max-memory asks for them.
    let mut graph = social_network();
    graph.functions[1].memory_bytes = None;
    let path = write_graph(dir.path(), &graph);
    cli_refuses(
        dir.path(),
        &plan_args(&path, &["--max-memory", "1Gi"]),
        &["unique-id sets no `limits: memory:`"],
    );
}

#[test]
fn a_function_with_a_shared_static_is_left_out_with_the_reason() {
    // The fixture's two functions both link a helper with mutable statics,
    // which `fmerge build` refuses; the plan keeps them apart and says why.
    let ws = fixture("shared", &[]);
    stack_of(ws.path(), &["st-front", "st-back"]);
    let Planned { stdout, groups } = plan_stack(ws.path(), &[]);
    assert_says(
        &stdout,
        &[
            "st-back stays remote from st-front: cannot share a binary with st-front: shared state: crate st-helper",
            "`st_helper::CALLS`",
            "in all: 0 gateway hops removed",
        ],
    );
    assert!(groups.is_empty());
}

#[test]
fn a_group_the_planner_writes_is_one_fmerge_build_merges() {
    // The eight functions of this repo, read from their code; 160Mi per pod
    // splits compose-post's tree into three groups.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("version: 1.0\nprovider:\n  name: openfaas\nfunctions:\n");
    for (f, memory) in [
        ("compose-post", "128Mi"),
        ("unique-id", "32Mi"),
        ("text-service", "64Mi"),
        ("url-shorten", "32Mi"),
        ("user-mention", "32Mi"),
        ("store-post", "32Mi"),
        ("write-home-timeline", "32Mi"),
        ("social-graph-get-followers", "32Mi"),
    ] {
        text.push_str(&format!(
            "  {f}:\n    lang: rust-fmerge\n    handler: {}\n    image: x/{f}:latest\n    limits:\n      memory: {memory}\n",
            workspace_root().join("functions").join(f).display()
        ));
    }
    std::fs::write(dir.path().join("stack.yml"), text).unwrap();
    let Ran { ok, stdout, stderr } = fmerge_command(
        dir.path(),
        &[
            "plan",
            "-f",
            "stack.yml",
            "--max-memory",
            "160Mi",
            "--objective",
            "calls",
        ],
    );
    assert!(ok, "{stderr}");
    let groups = PlanFile::load(&dir.path().join("plan/plan.toml"))
        .unwrap()
        .groups;
    let callers: Vec<&str> = groups.iter().filter_map(|g| g.caller.as_deref()).collect();
    assert_eq!(
        callers,
        ["compose-post", "text-service", "write-home-timeline"],
        "{stdout}"
    );
    // One cargo workspace, one lock file: no group is built to check it.
    assert!(!stdout.contains("dry run"), "{stdout}");
    assert!(!stderr.contains("Cargo.lock is not the one"), "{stderr}");
    // text-service's group (two callees, one with a C library) builds as written.
    let Ran { ok, stdout, stderr } = fmerge(
        dir.path(),
        &["-f", "stack.yml", "--config", "plan/text-service.toml"],
        &[],
    );
    assert!(ok, "{stderr}");
    let binary = std::path::PathBuf::from(stdout.lines().last().unwrap());
    assert!(binary.ends_with("text-service-merged/text-service-merged") && binary.is_file());
}

/// `fmerge plan --graph GRAPH --objective OBJECTIVE EXTRA` in a new folder,
/// with each `(name, text)` written there first (`{dir}` in EXTRA is the
/// folder): its stdout and plan.toml.
fn plan_files(
    graph: &Graph,
    files: &[(&str, &str)],
    extra: &[&str],
    objective: &str,
) -> (String, PlanFile) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_graph(dir.path(), graph);
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let extra: Vec<String> = extra
        .iter()
        .map(|a| a.replace("{dir}", dir.path().to_str().unwrap()))
        .collect();
    let mut args = vec!["--objective", objective];
    args.extend(extra.iter().map(String::as_str));
    let stdout = plan_into(dir.path(), &path, "plan", &args);
    let file = PlanFile::load(&dir.path().join("plan/plan.toml"))
        .unwrap()
        .file;
    (stdout, file)
}

/// [`plan_files`] with the calls objective where `callee` stays deployed:
/// the first group's callees are `callee` alone, nothing is dropped, and
/// the report says every one of `says`; the plan file.
fn stays(
    graph: &Graph,
    files: &[(&str, &str)],
    extra: &[&str],
    callee: &str,
    says: &[&str],
) -> PlanFile {
    let (stdout, file) = plan_files(graph, files, extra, "calls");
    assert_eq!(file.group[0].callees, names(&[callee]));
    assert!(file.dropped.is_empty(), "{:?}", file.dropped);
    assert_says(&stdout, says);
    file
}

/// A scrape of front's 100 requests from outside, each calling mid once,
/// and `more` (e.g. another caller's calls of mid).
fn scrape(more: &str) -> String {
    format!(
        "http_requests_total{{function=\"front\",caller=\"\"}} 100\n\
         http_requests_total{{function=\"mid\",caller=\"front\"}} 100\n{more}"
    )
}

/// [`stays`] for mid, the traffic [`scrape`]`(more)`.
fn mid_stays_scraped(graph: &Graph, more: &str, says: &[&str]) -> PlanFile {
    let text = scrape(more);
    stays(
        graph,
        &[("m.txt", &text)],
        &["--metrics", "{dir}/m.txt"],
        "mid",
        says,
    )
}

/// An access log of `front` requests to front and `mid` to mid, naming
/// no caller (as nginx logs them).
fn access_log(front: usize, mid: usize) -> String {
    let line =
        |f: &str| format!("1.2.3.4 - - [x] \"POST /function/{f} HTTP/1.1\" 200 2 \"-\" \"x\"\n");
    line("front").repeat(front) + &line("mid").repeat(mid)
}

#[test]
fn a_callee_only_its_group_calls_goes_with_the_evidence_named() {
    // Entry points declared, every caller named by the scrape: mid goes,
    // and the plan says what shows it may.
    let (stdout, file) = plan_files(
        &front_and_mid(),
        &[("m.txt", &scrape(""))],
        &["--metrics", "{dir}/m.txt"],
        "calls",
    );
    assert_eq!(file.dropped, names(&["mid"]));
    let evidence = &file.evidence["mid"];
    assert!(
        evidence.contains("not one of the 1 declared entry points")
            && evidence.contains("no request from outside, calls from front 100")
            && evidence.contains("held in-process by front"),
        "{evidence}"
    );
    assert_says(
        &stdout,
        &["mid goes: not one of the 1 declared entry points"],
    );
}

#[test]
fn a_callee_a_caller_outside_the_stack_calls_stays() {
    // billing, not in the stack, calls mid 500 times: mid's deployment
    // serves it, though front's group holds a copy.
    let billing = "http_requests_total{function=\"mid\",caller=\"billing\"} 500\n";
    mid_stays_scraped(
        &front_and_mid(),
        billing,
        &["mid stays deployed: it gets requests from outside the application"],
    );
}

#[test]
fn access_log_requests_with_no_known_caller_are_outside_traffic() {
    // 10 requests to front, each calling mid once, and 990 to mid straight
    // from the front end: the log names no caller, so at most 10 are
    // front's. The hops removed are 10 of 1000 requests, and mid stays.
    let log = access_log(10, 1000);
    let (stdout, file) = plan_files(
        &front_and_mid(),
        &[("access.log", &log)],
        &["--access-log", "{dir}/access.log"],
        "calls",
    );
    assert!(file.dropped.is_empty(), "{:?}", file.dropped);
    assert_says(
        &stdout,
        &["mid stays deployed: it gets requests from outside"],
    );
    let model_graph = {
        let mut g = front_and_mid();
        let counts = fmerge::graph::access_log::parse(&log, "log").unwrap();
        let t = fmerge::graph::access_log::traffic(&counts, &g.edges, "log");
        g.weigh(&t);
        g
    };
    let model = plan::model(&model_graph, &by_calls()).unwrap();
    let p = plan::solve(&model, Method::Exact).unwrap().plan;
    assert!((p.removed - 0.01).abs() < 1e-9, "{}", p.removed);
}

#[test]
fn a_callee_that_got_requests_an_access_log_cannot_attribute_stays() {
    // Every request to mid could be front's, yet the log names no caller:
    // nothing shows mid has no other, so it stays, and the report says
    // what would let it go.
    let log = access_log(10, 10);
    stays(
        &front_and_mid(),
        &[("access.log", &log)],
        &["--access-log", "{dir}/access.log"],
        "mid",
        &[
            "does not name the caller of every request it got (an access log names none",
            "give a --metrics scrape of its pods that names them to let it go",
        ],
    );
}

#[test]
fn a_callee_with_requests_from_callers_the_scrape_does_not_name_stays() {
    // Besides front's 100 calls, mid got 50 from callers past the
    // runtime's first 64 (`other`): spread over front for the rates, yet
    // nothing shows they came from front, so mid stays.
    let other = "http_requests_total{function=\"mid\",caller=\"other\"} 50\n";
    mid_stays_scraped(
        &front_and_mid(),
        other,
        &["mid stays deployed: the traffic (prometheus", "as `other`"],
    );
}

#[test]
fn a_callee_a_connector_invokes_stays_though_it_did_not_fire_in_the_window() {
    // mid is a cron-connector's function too (`topic: cron-function`), and
    // the schedule did not fire in the window: front's calls alone show.
    // The connector calls it from outside whenever it fires: mid stays.
    // calls.json as `fmerge graph` writes it for that stack (the field
    // written in the text, so that a graph reader that does not know it
    // drops it as an older one would).
    let mut json = serde_json::to_value(front_and_mid()).unwrap();
    json["functions"][1]["connector"] = "cron-function".into();
    let json = json.to_string();
    stays(
        &front_and_mid(),
        &[("calls.json", &json), ("m.txt", &scrape(""))],
        &["--metrics", "{dir}/m.txt"],
        "mid",
        &[
            "mid stays deployed: a connector invokes it (annotation topic: cron-function), whether or not it fired in the window",
        ],
    );
}

#[test]
fn a_cycle_in_a_scrape_is_planned_as_the_runtime_runs_it() {
    // x → a, a → b, and b calls a back three times: five gateway hops a
    // request, all removed by the group of x, a and b, whose process
    // serves b's calls of a in-process; a and b go.
    let graph = graph(
        vec![
            function("x", "64Mi"),
            function("a", "64Mi"),
            function("b", "64Mi"),
        ],
        vec![edge("x", "a"), edge("a", "b"), edge("b", "a")],
        1,
    );
    let scrape = "http_requests_total{function=\"x\",caller=\"\"} 100\n\
                  http_requests_total{function=\"a\",caller=\"x\"} 100\n\
                  http_requests_total{function=\"b\",caller=\"a\"} 100\n\
                  http_requests_total{function=\"a\",caller=\"b\"} 300\n";
    let (stdout, file) = plan_files(
        &graph,
        &[("m.txt", scrape)],
        &["--metrics", "{dir}/m.txt"],
        "calls",
    );
    assert_eq!(file.group.len(), 1, "{:?}", file.group);
    assert_eq!(file.group[0].caller, "x");
    assert_eq!(file.group[0].callees, names(&["a", "b"]));
    assert_eq!(file.dropped, names(&["a", "b"]));
    assert_says(
        &stdout,
        &[
            "group x: x, a, b (5.00 hops removed per request it gets",
            "5 → 0",
            "the call b → a closes a cycle",
            "gap 0.00",
        ],
    );
    assert!(!stdout.contains("no request reaches"), "{stdout}");
}

#[test]
fn without_declared_entry_points_or_traffic_nothing_is_dropped() {
    // No entry point declared: mid may be called by a client (a cron
    // connector, another application) that no window showed.
    let mut undeclared = front_and_mid();
    undeclared.functions[0].entry = false;
    mid_stays_scraped(
        &undeclared,
        "",
        &[
            "mid stays deployed: the stack declares no entry point",
            "to let it go",
        ],
    );
    // Declared, but no traffic: nothing shows who calls mid.
    stays(
        &front_and_mid(),
        &[],
        &[],
        "mid",
        &[
            "mid stays deployed: no traffic was measured",
            "give --metrics",
        ],
    );
}

#[test]
fn a_plan_of_part_of_the_stack_drops_nothing() {
    // The graph of two of the stack's functions (--filter): the rest of
    // the application may call mid.
    let select = fmerge::options::stack::Select {
        filter: Some("*i*".into()),
        regex: None,
    };
    let partial = fmerge::graph::partial(&select, 2, 26);
    assert_eq!(
        partial.as_deref(),
        Some("--filter \"*i*\" selects 2 of the stack's 26 functions")
    );
    assert_eq!(fmerge::graph::partial(&select, 26, 26), None);
    let mut graph = front_and_mid();
    graph.partial = partial;
    mid_stays_scraped(
        &graph,
        "",
        &[
            "mid stays deployed: the plan covers part of the stack (--filter \"*i*\" selects 2 of the stack's 26 functions)",
        ],
    );
}

#[test]
fn a_filter_on_a_graph_file_plans_that_part_alone() {
    // front → mid → tail, planned with --filter "*i*" (mid and tail): front
    // is the rest of the application, and its calls of mid are requests
    // from outside; nothing is dropped.
    let mut graph = front_and_mid();
    graph.functions.push(function("tail", "64Mi"));
    graph.edges.push(edge("mid", "tail"));
    let tail = "http_requests_total{function=\"tail\",caller=\"mid\"} 100\n";
    let file = stays(
        &graph,
        &[("m.txt", &scrape(tail))],
        &["--metrics", "{dir}/m.txt", "--filter", "*i*"],
        "tail",
        &[
            "tail stays deployed: the plan covers part of the stack (--filter \"*i*\" selects 2 of the stack's 3 functions)",
        ],
    );
    assert_eq!(file.group.len(), 1, "{:?}", file.group);
    assert_eq!(file.group[0].caller, "mid");
}

#[test]
fn a_call_log_naming_parent_requests_prices_each_call_path() {
    // A and B call s; s calls t only on B's requests, which the call log's
    // sixth column (the request that called s) shows and the scrape does
    // not. B's group is the least memory that removes 7 ms a request; A's
    // removes half what the scrape's average would price it at.
    let graph = graph(
        vec![
            function("A", "64Mi"),
            function("B", "64Mi"),
            function("s", "256Mi"),
            function("t", "16Mi"),
        ],
        vec![edge("A", "s"), edge("B", "s"), edge("s", "t")],
        2,
    );
    let sample = |f: &str, caller: &str, n: u32| {
        format!("http_requests_total{{function=\"{f}\",caller=\"{caller}\"}} {n}\n")
    };
    let scrape = [
        sample("A", "", 160),
        sample("B", "", 140),
        sample("s", "A", 160),
        sample("s", "B", 140),
        sample("t", "s", 140),
    ]
    .concat();
    let mut log = String::new();
    for i in 0..160 {
        log += &format!("a{i} A s 0 1 -\n");
    }
    for i in 0..140 {
        log += &format!("b{i} B s 0 9 -\ns{i} s t 1 2 b{i}\n");
    }
    let (stdout, file) = plan_files(
        &graph,
        &[("m.txt", &scrape), ("calls.txt", &log)],
        &[
            "--metrics",
            "{dir}/m.txt",
            "--call-log",
            "{dir}/calls.txt",
            "--min-gain-ms",
            "7",
        ],
        "memory",
    );
    assert_eq!(file.group.len(), 1, "{:?}", file.group);
    assert_eq!(file.group[0].caller, "B");
    assert_eq!(file.group[0].callees, names(&["s", "t"]));
    assert_says(
        &stdout,
        &["calls per invocation are per call path on the 2 paths"],
    );
}

#[test]
fn a_caller_past_the_candidate_cap_takes_the_heuristics_group_and_says_so() {
    // hub calls 17 leaves, room for 8 of them: more possible groups than
    // the exact search enumerates for one caller.
    let leaves: Vec<String> = (0..17).map(|i| format!("leaf{i}")).collect();
    let mut functions = vec![function("hub", "64Mi")];
    functions.extend(leaves.iter().map(|l| function(l, "64Mi")));
    let graph = Graph {
        functions,
        edges: leaves.iter().map(|l| edge("hub", l)).collect(),
        ..Graph::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = write_graph(dir.path(), &graph);
    let room = ["--objective", "calls", "--max-memory", "576Mi"];
    // --search exact: refused with the cause, not the time limit.
    let mut args = plan_args(&path, &room);
    args.extend(["--search", "exact", "--time-limit", "60"]);
    let Ran { ok, stderr, .. } = fmerge_cli(dir.path(), &args);
    assert!(!ok);
    assert_says(
        &stderr,
        &[
            "hub has more than 50000 possible groups",
            "fix: use --search auto (the heuristic's group for it",
        ],
    );
    assert!(!stderr.contains("raise --time-limit"), "{stderr}");
    // auto: the heuristic's group for hub, and the label says so.
    let stdout = plan_into(dir.path(), &path, "plan", &room);
    assert_says(
        &stdout,
        &[
            "search: exact but for the callers past the candidate cap, whose groups are the heuristic's (hub)",
        ],
    );
    let file = PlanFile::load(&dir.path().join("plan/plan.toml"))
        .unwrap()
        .file;
    assert_eq!(file.group[0].callees.len(), 8);
}
