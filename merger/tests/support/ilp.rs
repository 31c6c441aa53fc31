//! The calls objective as a mixed-integer program, solved by `good_lp` with
//! its pure-Rust `microlp` backend: the second method the oracle checks the
//! exact search with past the size it enumerates. It solves on the oracle's
//! own reading of the graph (`oracle.rs`: calls per invocation, entry
//! shares, limits, what is left out or kept apart, the
//! caps) with its rule for a valid group (`oracle_value.rs`), and uses none
//! of the planner's code.
//!
//! Each function `r` may be the caller of any group `g` of its own
//! enumeration (connected from `r` through members, valid by
//! `value::valid`); one request at `r`
//! then removes `hops(r, g)` gateway hops and sends `out(r, g)[v]` calls to
//! each deployment `v`. The program: binaries `x[r][g]`, one per caller;
//! `z[r][g] ≥ 0`, the requests at `r` that `g` serves, with `z ≤ M_r·x`
//! and `Σ_g z[r][g] = a[r]`, where `M_r` is `r`'s runs per unit of outside
//! traffic (no plan sends `r` more), so `z[r][g] = x[r][g]·a[r]`;
//! arrivals `a[v] = external[v] + Σ z[r][g]·out(r, g)[v]` (linear, and
//! determined, as the oracle's graphs are acyclic); the total memory
//! linear in `x`; maximize `Σ z[r][g]·hops(r, g)`.

use crate::oracle::Reading as Model;
use crate::value;
use good_lp::{Expression, ProblemVariables, Solution, SolverModel, microlp, variable};

/// The optimum of the program: the most hops any valid plan removes per
/// unit of outside traffic, and the plan it found (each function's group,
/// itself alone when it is none's caller).
pub fn best(model: &Model) -> (f64, Vec<u128>) {
    let n = model.n();
    let runs = runs(model);
    let groups: Vec<Vec<u128>> = (0..n)
        .map(|r| {
            if runs[r] > 0.0 {
                value::groups_of(model, r)
            } else {
                vec![1 << r] // no request ever arrives: nothing to gain
            }
        })
        .collect();
    let mut vars = ProblemVariables::new();
    let x: Vec<Vec<_>> = groups
        .iter()
        .map(|list| list.iter().map(|_| vars.add(variable().binary())).collect())
        .collect();
    let z: Vec<Vec<_>> = groups
        .iter()
        .map(|list| list.iter().map(|_| vars.add(variable().min(0.0))).collect())
        .collect();
    let a: Vec<_> = (0..n).map(|_| vars.add(variable().min(0.0))).collect();
    let mut objective = Expression::from(0.0);
    let mut arriving: Vec<Expression> = model.share.iter().map(|&e| e.into()).collect();
    let mut constraints = Vec::new();
    let mut copies = Expression::from(0.0);
    let mut cores = Expression::from(0.0);
    for r in 0..n {
        let mut one = Expression::from(0.0);
        let mut served = Expression::from(0.0);
        for (k, &g) in groups[r].iter().enumerate() {
            let (hops, out) = request(model, r, g);
            objective += hops * z[r][k];
            for (v, calls) in out.into_iter().enumerate() {
                if calls > 0.0 {
                    arriving[v] += calls * z[r][k];
                }
            }
            constraints.push((z[r][k] - runs[r] * x[r][k]).leq(0.0));
            one += x[r][k];
            served += z[r][k];
            copies += memory_beyond_root(model, r, g) * x[r][k];
            cores += beyond_root(&model.cpu, r, g) * x[r][k];
        }
        constraints.push(one.eq(1.0));
        constraints.push(served.eq(a[r]));
    }
    for (v, arriving) in arriving.into_iter().enumerate() {
        constraints.push(arriving.eq(a[v]));
    }
    if let Some(max) = model.flags.max_total_memory {
        let own: f64 = (0..n).map(|i| memory(model, i)).sum();
        constraints.push(copies.leq(max * (1.0 + 1e-12) - own));
    }
    if let Some(max) = model.flags.max_total_cpu {
        let own: f64 = (0..n).map(|i| model.cpu[i].unwrap()).sum();
        constraints.push(cores.leq(max * (1.0 + 1e-9) - own));
    }
    let solution = vars
        .maximise(objective.clone())
        .using(microlp)
        .with_all(constraints)
        .solve()
        .expect("the plan of no groups is always feasible");
    let plan = (0..n)
        .map(|r| {
            let k = (0..groups[r].len())
                .max_by(|&i, &j| solution.value(x[r][i]).total_cmp(&solution.value(x[r][j])))
                .expect("a caller alone is a group");
            groups[r][k]
        })
        .collect();
    (solution.eval(&objective), plan)
}

fn memory(model: &Model, i: usize) -> f64 {
    model.memory[i].unwrap_or(0.0)
}

fn memory_beyond_root(model: &Model, r: usize, g: u128) -> f64 {
    beyond_root(&model.memory, r, g)
}

fn beyond_root(amounts: &[Option<f64>], r: usize, g: u128) -> f64 {
    (0..amounts.len())
        .filter(|&i| i != r && g & (1 << i) != 0)
        .map(|i| amounts[i].unwrap_or(0.0))
        .sum()
}

/// How often each function runs per unit of outside traffic: its outside
/// requests plus every call of it, each caller's runs times its calls.
fn runs(model: &Model) -> Vec<f64> {
    fn of(model: &Model, v: usize, memo: &mut Vec<Option<f64>>) -> f64 {
        if let Some(known) = memo[v] {
            return known;
        }
        let mut total = model.share[v];
        for u in 0..model.n() {
            for &(w, m) in &model.calls[u] {
                if w == v {
                    total += m * of(model, u, memo);
                }
            }
        }
        memo[v] = Some(total);
        total
    }
    let mut memo = vec![None; model.n()];
    (0..model.n()).map(|v| of(model, v, &mut memo)).collect()
}

/// What one request at `r`, served by `g`, does: the calls that stay in
/// the process (hops removed) and the calls that leave it, per callee. A
/// call stays when its callee is a member other than `r` itself.
fn request(model: &Model, r: usize, g: u128) -> (f64, Vec<f64>) {
    let n = model.n();
    // Below one run of `u` in the process: (hops removed, calls out).
    fn below(
        model: &Model,
        r: usize,
        g: u128,
        u: usize,
        memo: &mut Vec<Option<(f64, Vec<f64>)>>,
    ) -> (f64, Vec<f64>) {
        if let Some(known) = &memo[u] {
            return known.clone();
        }
        let mut hops = 0.0;
        let mut out = vec![0.0; model.n()];
        for &(v, m) in &model.calls[u] {
            if v != r && g & (1 << v) != 0 {
                let (h, o) = below(model, r, g, v, memo);
                hops += m * (1.0 + h);
                for (w, calls) in o.into_iter().enumerate() {
                    out[w] += m * calls;
                }
            } else {
                out[v] += m;
            }
        }
        memo[u] = Some((hops, out.clone()));
        (hops, out)
    }
    below(model, r, g, r, &mut vec![None; n])
}
