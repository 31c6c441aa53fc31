//! The order the model values functions in, callers first, and the cut
//! that makes it possible: a call of each cycle, the lightest in traffic.

use super::{CallEdge, Model, Round, Set};
use anyhow::{Result, bail};

impl Model {
    /// Orders the functions callers first; a call in each cycle is dropped
    /// from the model (and listed), since a merged cycle has no root: the
    /// cycle's lightest in traffic.
    pub fn finish(&mut self) -> Result<()> {
        let n = self.n();
        if n > Set::CAPACITY {
            bail!(
                "the planner holds at most {} functions in a plan, and this application has {n}\nfix: plan a part of the application at a time (--filter or --regex on the stack file)",
                Set::CAPACITY
            );
        }
        // Depth-first from each function in listing order; an edge to a
        // function on the current path closes a cycle, and the cycle's
        // lightest call (the fewest calls seen, [`seen`](Self::seen)) is cut,
        // that closing call when none is lighter. Again until none is left.
        let mut cut = Vec::new();
        let post = loop {
            match self.depth_first() {
                Ok(post) => break post,
                Err(cycle) => {
                    let weight = |&(from, to): &(usize, usize)| {
                        let e = CallEdge { from, to };
                        self.seen.get(&e).copied().unwrap_or(f64::INFINITY)
                    };
                    let (u, v) = cycle
                        .iter()
                        .copied()
                        .fold(None, |best: Option<(usize, usize)>, e| match best {
                            Some(b) if weight(&b) <= weight(&e) => Some(b),
                            _ => Some(e),
                        })
                        .expect("a cycle has a call");
                    self.calls[u].retain(|c| c.callee != v);
                    cut.push(CallEdge { from: u, to: v });
                }
            }
        };
        self.cycles = cut;
        // Rounds name only the calls left; a callee none places is called
        // one call after another (a looped round of its own: an upper bound).
        self.rounds.resize(n, Vec::new());
        self.unplaced.clear();
        for u in 0..n {
            let calls: Vec<usize> = self.calls[u].iter().map(|c| c.callee).collect();
            let rounds = &mut self.rounds[u];
            for r in rounds.iter_mut() {
                r.calls.retain(|v| calls.contains(v));
                r.looped.retain(|v| calls.contains(v));
            }
            rounds.retain(|r| r.sites().next().is_some());
            for v in calls {
                if !rounds.iter().any(|r| r.sites().any(|(w, _)| w == v)) {
                    rounds.push(Round {
                        calls: Vec::new(),
                        looped: vec![v],
                    });
                    self.unplaced.push(CallEdge { from: u, to: v });
                }
            }
        }
        self.order = post.into_iter().rev().collect();
        Ok(())
    }

    /// The functions in post-order of a depth-first walk from each in
    /// listing order, or the first cycle it meets: its calls, the one that
    /// closes it first.
    fn depth_first(&self) -> Result<Vec<usize>, Vec<(usize, usize)>> {
        let n = self.n();
        let mut state = vec![0u8; n]; // 0 new, 1 on path, 2 done
        let mut post = Vec::with_capacity(n);
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack = vec![(start, 0usize)];
            state[start] = 1;
            while let Some((u, k)) = stack.pop() {
                if k < self.calls[u].len() {
                    stack.push((u, k + 1));
                    let v = self.calls[u][k].callee;
                    match state[v] {
                        0 => {
                            state[v] = 1;
                            stack.push((v, 0));
                        }
                        1 => {
                            let from = stack
                                .iter()
                                .position(|&(w, _)| w == v)
                                .expect("on the path");
                            let path: Vec<usize> = stack[from..].iter().map(|&(w, _)| w).collect();
                            let mut cycle = vec![(u, v)];
                            cycle.extend(path.windows(2).map(|p| (p[0], p[1])));
                            return Err(cycle);
                        }
                        _ => {}
                    }
                } else {
                    state[u] = 2;
                    post.push(u);
                }
            }
        }
        Ok(post)
    }
}
