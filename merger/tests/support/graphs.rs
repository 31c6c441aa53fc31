//! Call graphs for the planner tests, written by hand as `fmerge graph`
//! would write them: the socialNetwork functions of this repo, and seeded
//! random ones.
//!
//! A part of the tests that plan (`#[path = "support/graphs.rs"] mod graphs;`).

#![allow(dead_code)] // each test file plans only some of these

use fmerge::graph::{Conflict, Edge, Function, Graph, Round};

#[path = "../../plan/tests/support/social_network.rs"]
mod social_network;

/// A function with a memory limit (`"64Mi"`).
pub fn function(name: &str, memory: &str) -> Function {
    Function {
        name: name.into(),
        memory: Some(memory.into()),
        memory_bytes: fmerge_ship::quantity::parse(memory).ok(),
        ..Function::default()
    }
}

/// A call from `from` to `to`, from one site.
pub fn edge(from: &str, to: &str) -> Edge {
    Edge {
        from: from.into(),
        to: Some(to.into()),
        sites: 1,
        ..Edge::default()
    }
}

/// Calls made at once, one site each.
pub fn round(calls: &[&str]) -> Round {
    Round {
        calls: calls.iter().map(|c| c.to_string()).collect(),
        looped: Vec::new(),
    }
}

/// The eight socialNetwork functions of this repo and their calls, in the
/// rounds compose-post and text-service make them (two rounds; one).
pub fn social_network() -> Graph {
    let mut functions: Vec<Function> = [
        "compose-post",
        "unique-id",
        "text-service",
        "url-shorten",
        "user-mention",
        "store-post",
        "write-home-timeline",
        "social-graph-get-followers",
    ]
    .iter()
    .map(|n| function(n, "64Mi"))
    .collect();
    functions[0] = function("compose-post", "128Mi");
    functions[0].rounds = vec![
        round(&["unique-id", "text-service"]),
        round(&["store-post", "write-home-timeline"]),
    ];
    functions[2].rounds = vec![round(&["url-shorten", "user-mention"])];
    Graph {
        functions,
        edges: vec![
            edge("compose-post", "unique-id"),
            edge("compose-post", "text-service"),
            edge("compose-post", "store-post"),
            edge("compose-post", "write-home-timeline"),
            edge("text-service", "url-shorten"),
            edge("text-service", "user-mention"),
            edge("write-home-timeline", "social-graph-get-followers"),
        ],
        ..Graph::default()
    }
}

/// A seeded generator, so that every run plans the same graphs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random call DAG of `n` functions (callers before callees), random
/// memory, a random conflict or two.
pub fn random_graph(rng: &mut Rng, n: usize) -> Graph {
    let name = |i: usize| format!("f{i}");
    let functions = (0..n)
        .map(|i| function(&name(i), &format!("{}Mi", 16 * (1 + rng.below(4)))))
        .collect();
    let mut edges = Vec::new();
    for to in 1..n {
        // Each function but the first has one or two callers before it.
        let callers = 1 + rng.below(2) as usize;
        for _ in 0..callers {
            let from = rng.below(to as u64) as usize;
            if !edges
                .iter()
                .any(|e: &Edge| e.from == name(from) && e.to == Some(name(to)))
            {
                let mut e = edge(&name(from), &name(to));
                e.sites = 1 + rng.below(2) as usize;
                edges.push(e);
            }
        }
    }
    let mut conflicts = Vec::new();
    for _ in 0..rng.below(3) {
        let (a, b) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
        if a != b {
            conflicts.push(Conflict {
                a: name(a),
                b: name(b),
                reason: "test".into(),
            });
        }
    }
    Graph {
        functions,
        edges,
        conflicts,
        ..Graph::default()
    }
}

/// `graph` with measured traffic: outside requests at its first function
/// and, at random, a few others; calls on every edge. No cycle: the oracle
/// that reads these reads acyclic graphs only.
pub fn random_traffic(rng: &mut Rng, mut graph: Graph) -> Graph {
    graph.traffic = Some("test".into());
    for f in &mut graph.functions {
        f.external = Some(if rng.below(3) == 0 {
            rng.below(50) as f64
        } else {
            0.0
        });
    }
    graph.functions[0].external = Some(10.0 + rng.below(90) as f64);
    for e in &mut graph.edges {
        e.calls = Some((1 + rng.below(20)) as f64);
    }
    graph
}

/// `graph` with the order of its calls, at random: each call site in a
/// first or a second round, one in four in a loop; and one edge in three
/// with a measured cost of 0.5 to 2 ms.
pub fn random_rounds(rng: &mut Rng, mut graph: Graph) -> Graph {
    for f in &mut graph.functions {
        let mut rounds = vec![Round::default(), Round::default()];
        for e in graph.edges.iter().filter(|e| e.from == f.name) {
            for _ in 0..e.sites {
                let round = &mut rounds[rng.below(2) as usize];
                let callee = e.to.clone().unwrap();
                if rng.below(4) == 0 {
                    round.looped.push(callee);
                } else {
                    round.calls.push(callee);
                }
            }
        }
        rounds.retain(|r| !(r.calls.is_empty() && r.looped.is_empty()));
        f.rounds = rounds;
    }
    for e in &mut graph.edges {
        if rng.below(3) == 0 {
            e.hop_ms = Some(0.5 * (1 + rng.below(4)) as f64);
        }
    }
    graph
}

/// The 26 functions of `functions/stack.yml` (64Mi each) and their calls,
/// as `docs/callgraph-socialnetwork.svg` draws them: five call trees, the
/// largest compose-post's, two pairs of callers sharing a callee, and
/// functions that call nobody.
pub fn social_network_app() -> Graph {
    let names = social_network::names();
    let mut edges = Vec::new();
    for (from, to) in &social_network::CALLS {
        for to in to.iter() {
            let mut e = edge(from, to);
            // The -with-username forms look up both users.
            if *to == "get-user-id" {
                e.sites = 2;
            }
            edges.push(e);
        }
    }
    Graph {
        functions: names.iter().map(|n| function(n, "64Mi")).collect(),
        edges,
        ..Graph::default()
    }
}

/// A random application shaped like socialNetwork: call trees of at most
/// 11 functions (compose-post's size), each function called by an earlier
/// one of its tree or by nobody (a new entry point), now and then also by
/// a function of another tree (as get-user-id is); random memory.
pub fn random_app(rng: &mut Rng, n: usize) -> Graph {
    let name = |i: usize| format!("f{i}");
    let functions = (0..n)
        .map(|i| function(&name(i), &format!("{}Mi", 16 * (1 + rng.below(4)))))
        .collect();
    let mut edges: Vec<Edge> = Vec::new();
    let mut tree = 0; // the first function of the current tree
    for to in 1..n {
        if to - tree == 11 || rng.below(4) == 0 {
            tree = to;
            continue;
        }
        let from = tree + rng.below((to - tree) as u64) as usize;
        edges.push(edge(&name(from), &name(to)));
        let other = rng.below(to as u64) as usize;
        if rng.below(5) == 0 && other != from {
            edges.push(edge(&name(other), &name(to)));
        }
    }
    Graph {
        functions,
        edges,
        ..Graph::default()
    }
}

/// `functions` and their `edges`, the first `entries` functions declared
/// entry points.
pub fn graph(mut functions: Vec<Function>, edges: Vec<Edge>, entries: usize) -> Graph {
    for f in &mut functions[..entries] {
        f.entry = true;
    }
    Graph {
        functions,
        edges,
        ..Graph::default()
    }
}

/// front calls mid, front the declared entry point, 64Mi limits each: the
/// graph of the drop and sizing tests.
pub fn front_and_mid() -> Graph {
    graph(
        vec![function("front", "64Mi"), function("mid", "64Mi")],
        vec![edge("front", "mid")],
        1,
    )
}
