//! The order the model values functions in, callers first, and the cut
//! that makes it possible: the call of each cycle that calls back to a
//! function the request already runs in, walking from the entry points.

use super::{CallEdge, CallsTo, Model, NO_CALLER, Round, Set, bit};
use anyhow::{Result, bail};

impl Model {
    /// Orders the functions callers first; the call back of each cycle is
    /// moved to [`back`](Self::back) (and listed in
    /// [`cycles`](Self::cycles)), priced as a call whose run makes none;
    /// then each function's own time ([`own_ms`](Self::own_ms)).
    pub fn finish(&mut self) -> Result<()> {
        let n = self.n();
        if n > Set::CAPACITY {
            bail!(
                "the planner holds at most {} functions in a plan, and this application has {n}\nfix: plan a part of the application at a time (--filter or --regex on the stack file)",
                Set::CAPACITY
            );
        }
        // Depth-first from the entry points first (the most requests from
        // outside first, then the functions no other calls, then the rest
        // in listing order); a call to a function on the current path is a
        // call back, as a request that came in at the walk's start runs it:
        // it is cut. Again until none is left.
        let starts = self.starts();
        let mut cut = Vec::new();
        self.back = vec![Vec::new(); n];
        let post = loop {
            match self.depth_first(&starts) {
                Ok(post) => break post,
                Err((u, v)) => {
                    let (back, kept): (Vec<CallsTo>, Vec<CallsTo>) =
                        std::mem::take(&mut self.calls[u])
                            .into_iter()
                            .partition(|c| c.callee == v);
                    self.calls[u] = kept;
                    self.back[u].extend(back);
                    cut.push(CallEdge { from: u, to: v });
                }
            }
        };
        self.per_first_runs(&cut);
        self.cycles = cut;
        // Rounds name the calls and calls back; a callee none places is
        // called one call after another (a looped round of its own: an
        // upper bound).
        self.rounds.resize(n, Vec::new());
        self.unplaced.clear();
        for u in 0..n {
            let calls: Vec<usize> = self.callees(u).collect();
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
        self.service();
        Ok(())
    }

    /// The order the walks start in: the functions with requests from
    /// outside, the most first; those no other calls; the rest, each in
    /// listing order.
    fn starts(&self) -> Vec<usize> {
        let n = self.n();
        let external = |i: usize| self.external.get(i).copied().unwrap_or(0.0);
        let mut called = vec![false; n];
        for c in self.calls.iter().flatten() {
            called[c.callee] = true;
        }
        let mut starts: Vec<usize> = (0..n).collect();
        starts.sort_by(|&a, &b| {
            external(b)
                .total_cmp(&external(a))
                .then(called[a].cmp(&called[b]))
                .then(a.cmp(&b))
        });
        starts
    }

    /// The functions in post-order of a depth-first walk from each of
    /// `starts`, or the first call back it meets.
    fn depth_first(&self, starts: &[usize]) -> Result<Vec<usize>, (usize, usize)> {
        let n = self.n();
        let mut state = vec![0u8; n]; // 0 new, 1 on path, 2 done
        let mut post = Vec::with_capacity(n);
        for &start in starts {
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
                        1 => return Err((u, v)),
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

impl Model {
    /// `u`'s calls of `c.callee` per invocation when `from` called it: the
    /// call path's rate where the call log shows it ([`via`](Self::via);
    /// none when that path makes none), else `c`'s, the average.
    pub fn rate(&self, from: usize, u: usize, c: &CallsTo) -> f64 {
        if from == NO_CALLER || self.via.is_empty() {
            return c.calls;
        }
        match self.via.get(&CallEdge { from, to: u }) {
            Some(list) => list
                .iter()
                .filter(|x| x.callee == c.callee)
                .map(|x| x.calls)
                .sum(),
            None => c.calls,
        }
    }

    /// `u`'s caller as far as its rates go: `from` where the call path
    /// has rates of its own, else [`NO_CALLER`] (the average, whoever
    /// called), so that walks below `u` are shared by its callers.
    pub fn context(&self, from: usize, u: usize) -> usize {
        if from != NO_CALLER && self.via.contains_key(&CallEdge { from, to: u }) {
            from
        } else {
            NO_CALLER
        }
    }

    /// Every callee of `u`, calls back included.
    pub fn callees(&self, u: usize) -> impl Iterator<Item = usize> + '_ {
        let back = self.back.get(u).into_iter().flatten();
        self.calls[u].iter().chain(back).map(|c| c.callee)
    }

    /// `u`'s calls back, none when the model has no cycle.
    pub fn back_of(&self, u: usize) -> &[CallsTo] {
        self.back.get(u).map_or(&[], Vec::as_slice)
    }

    /// Whether a call of `v` from the process of `caller`'s group `set` stays
    /// in it: `v` is a member, the group's caller itself included once the
    /// group is merged (a binary with callees serves its own function
    /// in-process).
    pub fn in_process(&self, caller: usize, set: Set, v: usize) -> bool {
        set.contains(v) && (v != caller || set != bit(caller))
    }

    /// Puts the calls of each function called back per invocation of its
    /// runs that make them: with measured traffic ([`seen`](Self::seen),
    /// and [`external`](Self::external) still in requests, as `fmerge
    /// plan` sets it before this), a function's calls per invocation
    /// count all its runs, calls back included; the model makes them on
    /// the other runs alone, so each is scaled by all runs over those.
    fn per_first_runs(&mut self, cut: &[CallEdge]) {
        let seen = |e: CallEdge| self.seen.get(&e).copied();
        let mut scale = Vec::new();
        for v in cut.iter().map(|e| e.to) {
            if scale.iter().any(|&(w, _)| w == v) {
                continue;
            }
            let into: Option<Vec<(bool, f64)>> = (0..self.n())
                .flat_map(|u| self.callees(u).map(move |w| (u, w)))
                .filter(|&(_, w)| w == v)
                .map(|(u, _)| {
                    let e = CallEdge { from: u, to: v };
                    seen(e).map(|c| (cut.contains(&e), c))
                })
                .collect();
            let Some(into) = into else { continue };
            let external = self.external.get(v).copied().unwrap_or(0.0);
            let all: f64 = external + into.iter().map(|&(_, c)| c).sum::<f64>();
            let first: f64 = external + into.iter().filter(|x| !x.0).map(|&(_, c)| c).sum::<f64>();
            if first > 0.0 && all > first {
                scale.push((v, all / first));
            }
        }
        for (v, factor) in scale {
            for c in self.calls[v].iter_mut().chain(self.back[v].iter_mut()) {
                c.calls *= factor;
            }
        }
    }
}
