//! An oracle for the planner's exact search, written apart from it: it
//! reads the model only as input (names, calls per invocation after the
//! cycle cut, outside requests, memory, what is left out or kept apart, the
//! caps) and uses none of the planner's code: every subset of functions is
//! tried as each root's group, checked by its own rules, every combination
//! under the total-memory cap enumerated, and each valued by following one
//! request through the deployments. Small models only (2^(n−1) subsets a
//! root).

use fmerge::plan::model::Model;

/// The most gateway hops any valid plan removes per unit of outside
/// traffic, and one such plan (each function's group, itself alone when it
/// roots none).
pub fn best(model: &Model) -> (f64, Vec<u128>) {
    best_by(model, &|groups| Some(value(model, groups)))
}

/// The most any valid plan scores by `score` (`None`: not a candidate), and
/// one such plan; the plan of no groups scores 0.
pub fn best_by(model: &Model, score: &dyn Fn(&[u128]) -> Option<f64>) -> (f64, Vec<u128>) {
    let n = model.n();
    assert!(n <= 8, "the oracle enumerates; keep models small");
    let options: Vec<Vec<u128>> = (0..n).map(|r| groups_of(model, r)).collect();
    let mut best = (
        f64::NEG_INFINITY,
        (0..n).map(|i| 1u128 << i).collect::<Vec<_>>(),
    );
    let mut choice = best.1.clone();
    enumerate(model, &options, 0, &mut choice, &mut best, score);
    best
}

fn enumerate(
    model: &Model,
    options: &[Vec<u128>],
    k: usize,
    choice: &mut Vec<u128>,
    best: &mut (f64, Vec<u128>),
    score: &dyn Fn(&[u128]) -> Option<f64>,
) {
    if k == options.len() {
        if within_total_memory(model, choice)
            && let Some(v) = score(choice)
            && v > best.0 + 1e-9
        {
            *best = (v, choice.clone());
        }
        return;
    }
    for &g in &options[k] {
        choice[k] = g;
        enumerate(model, options, k + 1, choice, best, score);
    }
    choice[k] = 1 << k;
}

/// Every group `r` may root by the rules, itself alone included.
fn groups_of(model: &Model, r: usize) -> Vec<u128> {
    let n = model.n();
    (0u128..1 << n)
        .filter(|&s| s & (1 << r) != 0)
        .filter(|&s| s == 1 << r || valid(model, r, s))
        .collect()
}

/// A group of more than its root: nobody left out, no two kept apart, the
/// per-group memory cap, and every member reached from the root through
/// members.
pub fn valid(model: &Model, r: usize, s: u128) -> bool {
    let members: Vec<usize> = (0..model.n()).filter(|&i| s & (1 << i) != 0).collect();
    if members.iter().any(|&i| model.left_out[i].is_some()) {
        return false;
    }
    for &(a, b) in model.apart.keys() {
        if s & (1 << a) != 0 && s & (1 << b) != 0 {
            return false;
        }
    }
    if let Some(max) = model.constraints.max_memory {
        let sum: f64 = members
            .iter()
            .map(|&i| model.memory[i].unwrap_or(0.0))
            .sum();
        if sum > max * (1.0 + 1e-12) {
            return false;
        }
    }
    let mut reached = 1u128 << r;
    let mut todo = vec![r];
    while let Some(u) = todo.pop() {
        for &(v, _) in &model.calls[u] {
            if s & (1 << v) != 0 && reached & (1 << v) == 0 {
                reached |= 1 << v;
                todo.push(v);
            }
        }
    }
    reached == s
}

/// Every deployment's own memory plus, per group, its members beyond the
/// root, within the total cap.
pub fn within_total_memory(model: &Model, groups: &[u128]) -> bool {
    let Some(max) = model.constraints.max_total_memory else {
        return true;
    };
    let memory = |i: usize| model.memory[i].unwrap_or(0.0);
    let own: f64 = (0..model.n()).map(memory).sum();
    let copies: f64 = (0..model.n())
        .flat_map(|r| (0..model.n()).filter(move |&i| i != r && groups[r] & (1 << i) != 0))
        .map(memory)
        .sum();
    own + copies <= max * (1.0 + 1e-12)
}

/// Hops removed per unit of outside traffic: each outside request followed
/// through the deployments it reaches.
pub fn value(model: &Model, groups: &[u128]) -> f64 {
    (0..model.n())
        .map(|e| model.external[e] * removed(model, groups, e, e))
        .sum()
}

/// Hops removed by one run of `u` in the process of deployment `d`: a call
/// of a member of `d`'s group (not `d` itself) stays in the process, any
/// other goes to the callee's own deployment.
fn removed(model: &Model, groups: &[u128], u: usize, d: usize) -> f64 {
    model.calls[u]
        .iter()
        .map(|&(v, m)| {
            if v != d && groups[d] & (1 << v) != 0 {
                m * (1.0 + removed(model, groups, v, d))
            } else {
                m * removed(model, groups, v, v)
            }
        })
        .sum()
}

/// Expected latency removed per request of the application, ms: each
/// entry point's critical path (its functions' rounds one after another, a
/// round as long as its longest call made, at most, a site made on a share
/// of the runs, a looped site once per iteration)
/// with no group, less with `groups`, weighted by its outside requests.
pub fn latency_gain(model: &Model, groups: &[u128]) -> f64 {
    let alone: Vec<u128> = (0..model.n()).map(|i| 1 << i).collect();
    let (mut gain, mut requests) = (0.0, 0.0);
    for e in 0..model.n() {
        let x = model.external[e];
        if x > 0.0 {
            gain += x * (critical(model, &alone, e, e) - critical(model, groups, e, e));
            requests += x;
        }
    }
    if requests > 0.0 { gain / requests } else { 0.0 }
}

/// The critical path of one run of `u` in deployment `d`'s process, ms.
fn critical(model: &Model, groups: &[u128], u: usize, d: usize) -> f64 {
    let calls = |v: usize| {
        model.calls[u]
            .iter()
            .filter(|c| c.0 == v)
            .map(|c| c.1)
            .sum::<f64>()
    };
    let sites = |v: usize| -> usize {
        model.rounds[u]
            .iter()
            .map(|r| r.calls.iter().chain(&r.looped).filter(|&&w| w == v).count())
            .sum()
    };
    let one = |v: usize| {
        if v != d && groups[d] & (1 << v) != 0 {
            critical(model, groups, v, d)
        } else {
            let hop = model
                .measured_hop_ms
                .get(&(u, v))
                .copied()
                .unwrap_or(model.constraints.hop_ms);
            hop + critical(model, groups, v, v)
        }
    };
    // A callee's calls per run over its sites: a chance each while they
    // are fewer than the sites; past that, each site once and the looped
    // ones the rest, one after another.
    let site = |v: usize, looped: bool| -> (f64, f64) {
        let (m, n) = (calls(v), sites(v) as f64);
        let loops = model.rounds[u]
            .iter()
            .map(|r| r.looped.iter().filter(|&&w| w == v).count())
            .sum::<usize>() as f64;
        if m <= n {
            (m / n, 1.0)
        } else if looped {
            (1.0, (m - (n - loops)) / loops)
        } else {
            (1.0, 1.0)
        }
    };
    let mut path = 0.0;
    for round in &model.rounds[u] {
        // The longest first; each adds its length for the chance, left of
        // one, that it is made and no longer one is.
        let mut made: Vec<(f64, f64)> = round
            .calls
            .iter()
            .map(|&v| (v, false))
            .chain(round.looped.iter().map(|&v| (v, true)))
            .filter(|&(v, _)| calls(v) > 0.0)
            .map(|(v, looped)| {
                let (chance, times) = site(v, looped);
                (chance, times * one(v))
            })
            .collect();
        made.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
        let mut left = 1.0f64;
        for (chance, length) in made {
            let take = chance.min(left);
            path += take * length;
            left -= take;
        }
    }
    path
}
