//! The branch and bound's second bound, for total caps: what the room a cap
//! leaves can still buy. A call made in-process needs a copy of its callee
//! in the caller's group, so what copies still to be made can remove is at
//! most a fractional knapsack: each function's worth at the weight of one
//! copy (its memory, its cores), within what the caps leave.
//!
//! A function's worth in latency: the expected latency of every gateway
//! call made to it, each at its cost, per request of the application. A
//! critical path is a sum of rounds, each at most its calls' sum, weighted
//! by chances at most the calls per invocation, so no plan removes more
//! latency than the calls to the functions it copies cost in all.

use crate::model::{CallsTo, Model, Set};

pub(super) struct Room {
    /// Which total caps the model has (memory, cpu).
    capped: [bool; 2],
    /// Each function's memory and cores.
    weight: Vec<[f64; 2]>,
    /// What every sum of weights is a multiple of (their greatest common
    /// divisor, in bytes and millicores): the room left is rounded down to
    /// it, so that a cap a byte short of a copy does not count the copy
    /// almost whole.
    quantum: [f64; 2],
    /// Each function's worth in latency, ms per request.
    latency: Vec<f64>,
    /// Its parts one copy can take: its callers split where no group can
    /// hold two of them (no function reaches both), each part's calls as
    /// `(caller, worth)`.
    parts: Vec<Vec<Vec<(usize, f64)>>>,
}

impl Room {
    pub(super) fn new(model: &Model, runs: &[f64]) -> Room {
        let n = model.n();
        let requests: f64 = model.external.iter().sum();
        let per = if requests > 0.0 { 1.0 / requests } else { 0.0 };
        let mut callers = vec![Vec::new(); n];
        for (u, &run) in runs.iter().enumerate() {
            for &CallsTo {
                callee: v,
                calls: m,
            } in model.calls[u].iter().chain(model.back_of(u))
            {
                callers[v].push((u, run * m * model.hop_cost(u, v) * per));
            }
        }
        let latency = callers
            .iter()
            .map(|c: &Vec<(usize, f64)>| c.iter().map(|&(_, w)| w).sum())
            .collect();
        // What reaches each function (itself included), callers first.
        let mut above = vec![Set::EMPTY; n];
        for &u in &model.order {
            above[u] |= Set::of(u);
            for &CallsTo { callee: v, .. } in &model.calls[u] {
                let from = above[u];
                above[v] |= from;
            }
        }
        let parts = callers
            .into_iter()
            .map(|calls| {
                let mut parts: Vec<(Set, Vec<(usize, f64)>)> = Vec::new();
                for (u, w) in calls {
                    let mut reach = above[u];
                    let mut part = vec![(u, w)];
                    // Merge every part that shares a function reaching it.
                    parts.retain(|(r, p)| {
                        let joined = !(*r & reach).is_empty();
                        if joined {
                            reach |= *r;
                            part.extend(p.iter().copied());
                        }
                        !joined
                    });
                    parts.push((reach, part));
                }
                parts.into_iter().map(|(_, p)| p).collect()
            })
            .collect();
        let weight: Vec<[f64; 2]> = (0..n)
            .map(|i| [model.memory[i].unwrap_or(0.0), model.cpu[i].unwrap_or(0.0)])
            .collect();
        let quantum = [0, 1].map(|k| {
            let unit = if k == 0 { 1.0 } else { 1e-3 };
            let whole = |w: f64| {
                let units = (w / unit).round();
                ((w / unit - units).abs() < 1e-6).then_some(units as u64)
            };
            let gcd = weight
                .iter()
                .try_fold(0u64, |g, w| whole(w[k]).map(|u| gcd(g, u)));
            match gcd {
                Some(g) if g > 0 => g as f64 * unit,
                _ => 0.0,
            }
        });
        Room {
            quantum,
            weight,
            capped: [
                model.constraints.max_total_memory.is_some(),
                model.constraints.max_total_cpu.is_some(),
            ],
            latency,
            parts,
        }
    }

    /// Whether a total cap bounds copies at all.
    pub(super) fn capped(&self) -> bool {
        self.capped.contains(&true)
    }

    /// Function `j`'s worth in latency.
    pub(super) fn latency(&self, j: usize) -> f64 {
        self.latency[j]
    }

    /// The worth of each part of `j`'s calls its callers in `open` make
    /// (the rest, from callers already in their groups, stay as they
    /// are): each part a copy of its own.
    pub(super) fn latency_parts(&self, j: usize, open: Set) -> impl Iterator<Item = f64> + '_ {
        self.parts[j].iter().map(move |part| {
            part.iter()
                .filter(|&&(u, _)| open.contains(u))
                .map(|&(_, w)| w)
                .sum()
        })
    }

    /// The most the `items` (function, worth) are worth together when each
    /// taken costs a copy of the function and the copies fit in `left`
    /// (memory, cores), parts of items allowed.
    pub(super) fn most(&self, items: impl Iterator<Item = (usize, f64)>, left: [f64; 2]) -> f64 {
        if !self.capped() {
            return items.map(|(_, w)| w.max(0.0)).sum();
        }
        let items: Vec<(usize, f64)> = items.filter(|&(_, w)| w > 0.0).collect();
        let all: f64 = items.iter().map(|&(_, w)| w).sum();
        let mut most = all;
        for (k, &room) in left.iter().enumerate() {
            if !self.capped[k] {
                continue;
            }
            let mut sorted = items.clone();
            let ratio = |&(j, w): &(usize, f64)| {
                let cost = self.weight[j][k];
                if cost > 0.0 { w / cost } else { f64::INFINITY }
            };
            sorted.sort_by(|a, b| ratio(b).total_cmp(&ratio(a)));
            let q = self.quantum[k];
            let room = if q > 0.0 {
                (room / q + 1e-9).floor() * q
            } else {
                room
            };
            let (mut room, mut worth) = (room.max(0.0), 0.0);
            for (j, w) in sorted {
                let cost = self.weight[j][k];
                if cost <= room {
                    room -= cost;
                    worth += w;
                } else {
                    worth += w * room / cost;
                    break;
                }
            }
            most = most.min(worth);
        }
        most
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}
