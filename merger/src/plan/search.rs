//! The two searches over [`Model`]: exact (branch and bound over each root's
//! possible groups, callers first) for applications of socialNetwork's size,
//! and a greedy heuristic for large ones. Both maximize the hops removed per
//! request; at equal hops, fewer merged members (smaller binaries) win.

use super::model::{Model, Plan, Set, bit, members};

/// How hard the exact search may try before it gives up (and says so).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Candidate groups per root.
    pub candidates: usize,
    /// Search nodes in all.
    pub nodes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            candidates: 50_000,
            nodes: 20_000_000,
        }
    }
}

const EPS: f64 = 1e-9;

/// Every group `root` may root: connected from it (each member reached
/// from the root through members), feasible; `None` past the limit.
pub fn candidates(model: &Model, root: usize, limit: usize) -> Option<Vec<Set>> {
    let mut out = vec![bit(root)];
    if model.left_out[root].is_some() || !model.feasible(bit(root)) {
        return Some(out);
    }
    // Each connected set once: a member, once passed over, is never added
    // later in the same branch.
    fn grow(
        model: &Model,
        set: Set,
        frontier: Vec<usize>,
        excluded: Set,
        out: &mut Vec<Set>,
        limit: usize,
    ) -> bool {
        for (i, &v) in frontier.iter().enumerate() {
            let next = set | bit(v);
            if !model.feasible(next) {
                continue;
            }
            out.push(next);
            if out.len() > limit {
                return false;
            }
            let mut skip = excluded;
            for &w in &frontier[..i] {
                skip |= bit(w);
            }
            let mut more: Vec<usize> = frontier[i + 1..].to_vec();
            for &(w, _) in &model.calls[v] {
                if next & bit(w) == 0 && skip & bit(w) == 0 && !more.contains(&w) {
                    more.push(w);
                }
            }
            if !grow(model, next, more, skip, out, limit) {
                return false;
            }
        }
        true
    }
    let frontier: Vec<usize> = model.calls[root].iter().map(|&(v, _)| v).collect();
    let mut unique = Vec::new();
    for v in frontier {
        if !unique.contains(&v) && v != root {
            unique.push(v);
        }
    }
    grow(model, bit(root), unique, bit(root), &mut out, limit).then_some(out)
}

/// One candidate group of a root with what one request there does.
struct Candidate {
    set: Set,
    /// Its members' memory beyond the root's ([`Model::copies_memory`]).
    copies: f64,
    hops: f64,
    out: Vec<(usize, f64)>,
    inside: Vec<(usize, f64)>,
}

/// The exact plan, or `None` when the search passed its limits.
///
/// Roots are decided callers first, so the requests arriving at a root are
/// final when it is decided. The bound: each run of a function not yet
/// decided is either in-process somewhere or arrives over the gateway, so
/// the hops still to be removed are at most its runs not yet accounted for
/// (neither already in-process in a decided group, nor already sent to it).
pub fn exact(model: &Model, limits: Limits) -> Option<Plan> {
    let n = model.n();
    let runs = model.invocations();
    let mut options: Vec<Vec<Candidate>> = Vec::with_capacity(n);
    for (r, &run) in runs.iter().enumerate() {
        let sets = if run > 0.0 {
            candidates(model, r, limits.candidates)?
        } else {
            vec![bit(r)]
        };
        let mut list: Vec<Candidate> = sets
            .into_iter()
            .map(|set| {
                let (hops, out, inside) = model.flow(r, set);
                Candidate {
                    set,
                    copies: model.copies_memory(r, set),
                    hops,
                    out,
                    inside,
                }
            })
            .collect();
        list.sort_by(|a, b| {
            b.hops
                .total_cmp(&a.hops)
                .then(a.set.count_ones().cmp(&b.set.count_ones()))
                .then(a.set.cmp(&b.set))
        });
        options.push(list);
    }
    struct Search<'a> {
        model: &'a Model,
        options: &'a [Vec<Candidate>],
        runs: &'a [f64],
        choice: Vec<Set>,
        best: Option<(f64, u32, Vec<Set>)>,
        nodes: u64,
        limit: u64,
    }
    impl Search<'_> {
        /// `arrivals` and `inside`: runs of each function already sent over
        /// the gateway / already in-process, by the roots decided so far.
        fn go(
            &mut self,
            k: usize,
            arrivals: &[f64],
            inside: &[f64],
            removed: f64,
            extra: u32,
            memory_left: f64,
        ) -> bool {
            self.nodes += 1;
            if self.nodes > self.limit {
                return false;
            }
            if let Some((best, members, _)) = &self.best {
                let open: f64 = self.model.order[k..]
                    .iter()
                    .map(|&j| (self.runs[j] - arrivals[j] - inside[j]).max(0.0))
                    .sum();
                let bound = removed + open;
                if bound < best - EPS || (bound <= best + EPS && extra >= *members) {
                    return true;
                }
            }
            if k == self.model.n() {
                self.best = Some((removed, extra, self.choice.clone()));
                return true;
            }
            let r = self.model.order[k];
            let a = arrivals[r];
            let options = &self.options[r];
            let alone = options
                .iter()
                .position(|o| o.set == bit(r))
                .expect("the root alone is a candidate");
            // Nobody arrives: no group pays off here.
            let tried: Vec<usize> = if a == 0.0 {
                vec![alone]
            } else {
                (0..options.len()).collect()
            };
            for i in tried {
                let o = &options[i];
                if o.copies > memory_left {
                    continue; // past --max-total-memory
                }
                let mut next = arrivals.to_vec();
                for &(v, calls) in &o.out {
                    next[v] += a * calls;
                }
                let mut within = inside.to_vec();
                for &(v, calls) in &o.inside {
                    within[v] += a * calls;
                }
                self.choice[r] = o.set;
                let grown = extra + o.set.count_ones() - 1;
                let left = memory_left - o.copies;
                if !self.go(k + 1, &next, &within, removed + a * o.hops, grown, left) {
                    return false;
                }
            }
            self.choice[r] = bit(r);
            true
        }
    }
    let mut search = Search {
        model,
        options: &options,
        runs: &runs,
        choice: (0..n).map(bit).collect(),
        best: None,
        nodes: 0,
        limit: limits.nodes,
    };
    let budget = model.memory_left(&(0..n).map(bit).collect::<Vec<_>>());
    if !search.go(0, &model.external, &vec![0.0; n], 0.0, 0, budget) {
        return None;
    }
    let (_, _, groups) = search.best.expect("one plan at least");
    Some(finish(model, groups))
}

/// Greedy: callers first, each root grows its group by the member that
/// removes the most hops for the requests it gets, while any does.
pub fn heuristic(model: &Model) -> Plan {
    let n = model.n();
    let mut groups: Vec<Set> = (0..n).map(bit).collect();
    let mut arrivals = model.external.clone();
    let mut memory_left = model.memory_left(&groups);
    for &r in &model.order {
        let a = arrivals[r];
        if a > 0.0 && model.left_out[r].is_none() {
            let mut set = bit(r);
            let (mut value, _, _) = model.flow(r, set);
            loop {
                let mut best: Option<(f64, Set)> = None;
                for u in members(set) {
                    for &(v, _) in &model.calls[u] {
                        let next = set | bit(v);
                        if next == set
                            || v == r
                            || !model.feasible(next)
                            || model.copies_memory(r, next) > memory_left
                        {
                            continue;
                        }
                        let (hops, _, _) = model.flow(r, next);
                        if hops > value + EPS && best.is_none_or(|(h, _)| hops > h + EPS) {
                            best = Some((hops, next));
                        }
                    }
                }
                match best {
                    Some((hops, next)) => {
                        value = hops;
                        set = next;
                    }
                    None => break,
                }
            }
            groups[r] = set;
            memory_left -= model.copies_memory(r, set);
        }
        let (_, out, _) = model.flow(r, groups[r]);
        for (v, calls) in out {
            arrivals[v] += a * calls;
        }
    }
    finish(model, groups)
}

/// Drops groups that remove nothing (no request arrives at their root) and
/// members that remove nothing, then values the plan.
fn finish(model: &Model, mut groups: Vec<Set>) -> Plan {
    let (_, arrivals) = model.value(&groups);
    for r in 0..model.n() {
        if arrivals[r] == 0.0 {
            groups[r] = bit(r);
        }
    }
    let (removed, _) = model.value(&groups);
    Plan { groups, removed }
}
