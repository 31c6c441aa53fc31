//! Seeded random applications for the planner's searches, shaped like
//! socialNetwork at any size: call trees of at most 11 functions, each
//! function called by an earlier one of its tree or by nobody (a new entry
//! point), now and then also by a function of another tree; calls in
//! rounds (some at once, some one after another, some looped), measured
//! traffic and hop costs, and limits of 16–64Mi and 0.1–0.4 cores. And
//! socialNetwork's own 26 functions.

#![allow(dead_code)]

use fmerge_plan::model::{CallEdge, CallsTo, Constraints, MIB, Model, Objective, Round};

#[path = "social_network.rs"]
mod social_network;

/// A small deterministic generator (an LCG, Knuth's constants).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A model of `names` and `edges` (caller, callee, calls per invocation,
/// round: a callee joins the round before when `at_once`), the requests
/// from outside spread over the functions no one calls, finished.
fn build(
    names: Vec<String>,
    memory: Vec<f64>,
    cpu: Vec<f64>,
    edges: &[(usize, usize, f64, bool)],
    hop_ms: &[(usize, usize, f64)],
) -> Model {
    let n = names.len();
    let mut calls = vec![Vec::new(); n];
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); n];
    let mut called = vec![false; n];
    for &(u, v, m, at_once) in edges {
        calls[u].push(CallsTo {
            callee: v,
            calls: m,
        });
        called[v] = true;
        let looped = m > 1.0;
        match rounds[u].last_mut() {
            Some(r) if at_once && !looped => r.calls.push(v),
            _ => rounds[u].push(Round {
                calls: if looped { vec![] } else { vec![v] },
                looped: if looped { vec![v] } else { vec![] },
            }),
        }
    }
    let entries = called.iter().filter(|c| !**c).count().max(1) as f64;
    let mut model = Model {
        names,
        memory: memory.into_iter().map(Some).collect(),
        cpu: cpu.into_iter().map(Some).collect(),
        requests: vec![[None, None]; n],
        calls,
        external: called
            .iter()
            .map(|c| if *c { 0.0 } else { 1.0 / entries })
            .collect(),
        measured: true,
        left_out: vec![None; n],
        // The entry points declared, and traffic that names every caller:
        // what lets a deployment go.
        declared: called.iter().map(|c| !c).collect(),
        watched: vec![true; n],
        computed: vec![false; n],
        usage: vec![[None, None]; n],
        rounds,
        constraints: Constraints {
            objective: Objective::Latency,
            hop_ms: 0.22,
            ..Constraints::default()
        },
        ..Model::default()
    };
    for &(u, v, ms) in hop_ms {
        model
            .measured_hop_ms
            .insert(CallEdge { from: u, to: v }, ms);
    }
    model.finish().expect("an application the planner takes");
    model
}

/// A random application of `n` functions.
pub fn app(seed: u64, n: usize) -> Model {
    let mut rng = Rng::new(seed);
    let names = (0..n).map(|i| format!("f{i}")).collect();
    let memory = (0..n)
        .map(|_| (16 * (1 + rng.below(4))) as f64 * MIB)
        .collect();
    let cpu = (0..n).map(|_| 0.1 * (1 + rng.below(4)) as f64).collect();
    let mut edges = Vec::new();
    let mut hops = Vec::new();
    let mut tree = 0;
    for to in 1..n {
        if to - tree == 11 || rng.below(4) == 0 {
            tree = to;
            continue;
        }
        let from = tree + rng.below((to - tree) as u64) as usize;
        let calls = match rng.below(6) {
            0 => 0.3,
            1 => 3.0,
            _ => 1.0,
        };
        edges.push((from, to, calls, rng.below(2) == 0));
        if rng.below(3) == 0 {
            hops.push((from, to, 0.1 + 0.1 * rng.below(4) as f64));
        }
        let other = rng.below(to as u64) as usize;
        if rng.below(5) == 0 && other != from {
            edges.push((other, to, 1.0, rng.below(2) == 0));
        }
    }
    build(names, memory, cpu, &edges, &hops)
}

/// socialNetwork's 26 functions of `functions/stack.yml` (64Mi, 0.2 cores
/// each) and their calls as `docs/callgraph-socialnetwork.svg` draws them,
/// each caller's calls one after another, without traffic.
pub fn social_network() -> Model {
    let names: Vec<String> = social_network::names()
        .into_iter()
        .map(String::from)
        .collect();
    let index = |name: &str| names.iter().position(|n| n == name).unwrap();
    let mut edges = Vec::new();
    for (from, to) in &social_network::CALLS {
        for to in to.iter() {
            // The -with-username forms look up both users.
            let m = if *to == "get-user-id" { 2.0 } else { 1.0 };
            edges.push((index(from), index(to), m, false));
        }
    }
    let n = names.len();
    build(names, vec![64.0 * MIB; n], vec![0.2; n], &edges, &[])
}
