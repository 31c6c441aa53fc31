//! What a plan's groups do to the requests: [`Model::flow`] for one
//! request at a group's caller (calls in-process, calls that leave, runs
//! inside), and [`Model::value`] for the whole plan, deployment by
//! deployment, callers first.

use super::{CallsTo, Flow, Model, NO_CALLER, PlanFlow, RunsOf, Set};
use std::collections::BTreeMap;

impl Model {
    /// For one request at `caller`'s deployment whose group is `set`: the
    /// in-process calls (hops removed), the calls that leave, per callee, and
    /// the in-process runs, per member.
    pub fn flow(&self, caller: usize, set: Set) -> Flow {
        // Runs per member and caller (its path's rates, [`via`](Self::via));
        // the group caller's request from no caller known.
        let mut by: Vec<BTreeMap<usize, f64>> = vec![BTreeMap::new(); self.n()];
        by[caller].insert(NO_CALLER, 1.0);
        let mut runs = vec![0.0; self.n()];
        let mut removed = 0.0;
        let mut out: BTreeMap<usize, f64> = BTreeMap::new();
        let mut back: BTreeMap<usize, f64> = BTreeMap::new();
        for &u in &self.order {
            runs[u] = by[u].values().sum();
            if runs[u] == 0.0 {
                continue;
            }
            for (&from, &ran) in &by[u].clone() {
                for c in &self.calls[u] {
                    let (v, calls) = (c.callee, ran * self.rate(from, u, c));
                    if v != caller && set.contains(v) {
                        *by[v].entry(self.context(u, v)).or_default() += calls;
                        removed += calls;
                    } else {
                        *out.entry(v).or_default() += calls;
                    }
                }
            }
            // A call back runs its callee once more, making no call (so
            // not among the runs `inside` counts, which make theirs).
            for &CallsTo {
                callee: v,
                calls: m,
            } in self.back_of(u)
            {
                let calls = runs[u] * m;
                if self.in_process(caller, set, v) {
                    removed += calls;
                } else {
                    *back.entry(v).or_default() += calls;
                }
            }
        }
        runs[caller] = 0.0;
        let inside = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| **r > 0.0)
            .map(|(member, &runs)| RunsOf { member, runs })
            .collect();
        let list = |m: BTreeMap<usize, f64>| {
            m.into_iter()
                .map(|(callee, calls)| CallsTo { callee, calls })
                .collect()
        };
        Flow {
            removed,
            out: list(out),
            back: list(back),
            inside,
        }
    }

    /// The hops `groups` remove, and the requests that arrive at each
    /// deployment.
    pub fn value(&self, groups: &[Set]) -> PlanFlow {
        let mut arrivals = self.external.clone();
        let mut back = vec![0.0; self.n()];
        let mut removed = 0.0;
        for &r in &self.order {
            if arrivals[r] == 0.0 {
                continue;
            }
            let flow = self.flow(r, groups[r]);
            removed += arrivals[r] * flow.removed;
            for CallsTo { callee: v, calls } in flow.out {
                arrivals[v] += arrivals[r] * calls;
            }
            for CallsTo { callee: v, calls } in flow.back {
                back[v] += arrivals[r] * calls;
            }
        }
        PlanFlow {
            removed,
            arrivals,
            back,
        }
    }
}
