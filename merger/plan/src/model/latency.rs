//! What a plan does to latency: each entry point's critical path (its
//! functions' own time, then their rounds one after another, a round as long
//! as its expected longest call, and no shorter than the cpu its in-process
//! calls queue on one task: `model/service.rs`), the expected cost in all,
//! and the gain the latency objective maximizes, with the bound the exact
//! search prunes by.

use super::{CallEdge, CallsTo, Model, NO_CALLER, Round, Set, bit};
use std::collections::BTreeMap;

/// How a walk prices a run: a gateway call `u → v` at `hop(u, v)`, and,
/// when `timed`, each function's own time ([`Model::own_ms`]) and the cpu
/// its in-process calls share one task's core for ([`Model::busy_ms`]);
/// with `pods` too, the cpu calls made at once to one deployment share
/// its pods' cores for ([`Model::cores`]).
pub(super) struct Price<'a> {
    pub hop: &'a dyn Fn(usize, usize) -> f64,
    pub timed: bool,
    pub pods: bool,
}

/// A walk below one call: its critical path and expected cost, and the
/// cpu time it spends on its deployment's task when the call is in-process
/// (none for a gateway call: that runs on another pod's task).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Span {
    pub critical: f64,
    pub total: f64,
    pub busy: f64,
}

impl Model {
    /// The expected latency `groups` remove, ms per request of the
    /// application: each entry point's critical path before less after,
    /// weighted by its requests; a gateway call at its measured cost, else
    /// `--hop-ms` ([`Constraints::hop_ms`](super::Constraints::hop_ms)).
    pub fn gain_ms(&self, groups: &[Set]) -> f64 {
        self.gain_bound(groups, Set::EMPTY, &self.critical_alone())
    }

    /// Each function's critical path with no group, ms (the latency before).
    pub fn critical_alone(&self) -> Vec<f64> {
        self.critical_with(&Price {
            hop: &|u, v| self.hop_cost(u, v),
            timed: true,
            pods: true,
        })
    }

    /// Each function's critical path with no group, ms, priced by `price`.
    pub(super) fn critical_with(&self, price: &Price) -> Vec<f64> {
        let alone: Vec<Set> = (0..self.n()).map(bit).collect();
        let mut memo = BTreeMap::new();
        (0..self.n())
            .map(|e| {
                self.walk((e, NO_CALLER), e, &alone, price, Set::EMPTY, &mut memo)
                    .critical
            })
            .collect()
    }

    /// [`gain_ms`](Self::gain_ms) when the groups of the callers in `open` are
    /// still to be chosen: below such a deployment every call is taken as
    /// in-process, so no choice of theirs gains more.
    pub fn gain_bound(&self, groups: &[Set], open: Set, before: &[f64]) -> f64 {
        let mut memo = BTreeMap::new();
        let (mut gain, mut requests) = (0.0, 0.0);
        let price = Price {
            hop: &|u, v| self.hop_cost(u, v),
            timed: true,
            pods: true,
        };
        for e in self.entries() {
            let after = self
                .walk((e, NO_CALLER), e, groups, &price, open, &mut memo)
                .critical;
            gain += self.external[e] * (before[e] - after);
            requests += self.external[e];
        }
        if requests == 0.0 {
            0.0
        } else {
            gain / requests
        }
    }

    /// One gateway call `u → v`, ms: measured, else the bench's figure for
    /// it, else the default.
    pub fn hop_cost(&self, u: usize, v: usize) -> f64 {
        self.measured_hop_ms
            .get(&CallEdge { from: u, to: v })
            .copied()
            .unwrap_or(self.constraints.hop_ms)
    }

    /// Gateway hops per request at `entry` under `groups`: on the critical
    /// path (each function's [`rounds`](Self::rounds) one after another, a
    /// round as long as its expected longest call) and in all, before (no groups)
    /// and after.
    pub fn hops(&self, entry: usize, groups: &[Set]) -> Hops {
        let price = Price {
            hop: &|_, _| 1.0,
            timed: false,
            pods: false,
        };
        self.costs(entry, groups, &price)
    }

    /// [`hops`](Self::hops) in ms: each gateway call at
    /// [`hop_cost`](Self::hop_cost), and the functions' own time where
    /// measured ([`own_ms`](Self::own_ms)).
    pub fn latency(&self, entry: usize, groups: &[Set]) -> Hops {
        let price = Price {
            hop: &|u, v| self.hop_cost(u, v),
            timed: true,
            pods: true,
        };
        self.costs(entry, groups, &price)
    }

    fn costs(&self, entry: usize, groups: &[Set], price: &Price) -> Hops {
        let alone: Vec<Set> = (0..self.n()).map(bit).collect();
        let before = self.request_at(entry, &alone, price);
        let after = self.request_at(entry, groups, price);
        Hops {
            critical_before: before.critical,
            critical_after: after.critical,
            total_before: before.total,
            total_after: after.total,
        }
    }

    /// The [`Span`] of a request from outside at `entry`'s deployment
    /// under `groups`.
    pub(super) fn request_at(&self, entry: usize, groups: &[Set], price: &Price) -> Span {
        let start = (entry, NO_CALLER);
        self.walk(
            start,
            entry,
            groups,
            price,
            Set::EMPTY,
            &mut BTreeMap::new(),
        )
    }

    /// The [`Span`] below `u` called by `from` (its calls at that call
    /// path's rates, [`rate`](Self::rate)), running in the deployment of
    /// `caller`'s group, priced by `price`: a gateway call at its hop, an
    /// in-process one at nothing; nothing below a deployment whose group's
    /// caller is in `open` (its group not chosen yet) but its own time,
    /// which no group removes ([`floor_ms`](Self::floor_ms)). The critical
    /// path is `u`'s own time, then its rounds, each its expected longest call
    /// ([`expected_longest`]: a site made on a share of the invocations, a
    /// looped site once per iteration, from the calls per invocation,
    /// [`share`](Self::share)) and no shorter than the cpu its in-process
    /// calls queue for on the one task they share ([`queued`]).
    pub(super) fn walk(
        &self,
        (u, from): (usize, usize),
        caller: usize,
        groups: &[Set],
        price: &Price,
        open: Set,
        memo: &mut Memo,
    ) -> Span {
        if open.contains(caller) {
            let floor = match price.timed && self.via.is_empty() {
                true => self.floor_ms.get(u).copied().unwrap_or(0.0),
                false => 0.0,
            };
            return Span {
                critical: floor,
                ..Span::default()
            };
        }
        let from = self.context(from, u);
        if let Some(&known) = memo.get(&(u, from, caller)) {
            return known;
        }
        let cost = price.hop;
        // A call's span, and the deployment whose pods run its cpu when it
        // crosses the gateway (`None`: in-process, on `u`'s task). A call
        // back's run makes no call: the hop alone, if any.
        let below = |v: usize, memo: &mut Memo| {
            if self.back_of(u).iter().any(|c| c.callee == v) {
                let hop = if self.in_process(caller, groups[caller], v) {
                    0.0
                } else {
                    cost(u, v)
                };
                let span = Span {
                    critical: hop,
                    total: hop,
                    busy: 0.0,
                };
                return (span, None);
            }
            let inside = v != caller && groups[caller].contains(v);
            let (next, hop) = if inside {
                (caller, 0.0)
            } else {
                (v, cost(u, v))
            };
            let s = self.walk((v, u), next, groups, price, open, memo);
            let span = Span {
                critical: hop + s.critical,
                total: hop + s.total,
                busy: s.busy,
            };
            (span, (!inside).then_some(next))
        };
        let (own, own_busy) = match price.timed {
            true => (self.own(u), self.busy(u)),
            false => (0.0, 0.0),
        };
        let (mut total, mut busy) = (own, own_busy);
        for c in &self.calls[u] {
            let m = self.rate(from, u, c);
            let (s, remote) = below(c.callee, memo);
            total += m * s.total;
            if remote.is_none() {
                busy += m * s.busy;
            }
        }
        for &CallsTo {
            callee: v,
            calls: m,
        } in self.back_of(u)
        {
            total += m * below(v, memo).0.total;
        }
        let mut critical = own;
        for round in &self.rounds[u] {
            let mut sites: Vec<(f64, f64)> = Vec::new();
            // The cpu each task or deployment queues: `None`, `u`'s task.
            let mut queues: BTreeMap<Option<usize>, Vec<Queued>> = BTreeMap::new();
            for (v, looped) in round.sites() {
                let share = self.share((u, from), v, looped);
                if share.chance > 0.0 {
                    let (s, remote) = below(v, memo);
                    sites.push((share.chance, share.times * s.critical));
                    if s.busy > 0.0 && (remote.is_none() || price.pods) {
                        queues.entry(remote).or_default().push(Queued {
                            chance: share.chance,
                            busy: share.calls * s.busy,
                            rest: s.critical - s.busy,
                        });
                    }
                }
            }
            let mut longest = expected_longest(sites);
            for (at, queue) in &queues {
                // A deployment's pods give each call a core of its own up
                // to their cores; unbounded without a cpu limit.
                let cores = match at {
                    None => Some(1.0),
                    Some(d) => self.cores(*d, groups[*d]).map(|c| c.max(1.0)),
                };
                if let Some(cores) = cores {
                    longest = longest.max(queued(queue, cores));
                }
            }
            critical += longest;
        }
        let span = Span {
            critical,
            total,
            busy,
        };
        memo.insert((u, from, caller), span);
        span
    }
}

/// Walks already made: by function, its caller and its deployment's group
/// caller.
pub(super) type Memo = BTreeMap<(usize, usize, usize), Span>;

/// A site of a round, for [`queued`]: the chance it is made, the cpu it
/// then puts on the task or the pods that run it (all its calls'), and the
/// rest of one call's length (what it waits for besides that cpu: its
/// hop, I/O, gateway calls below it).
struct Queued {
    chance: f64,
    busy: f64,
    rest: f64,
}

/// How long a round's calls that share `cores` take: in-process ones the
/// one task that runs them (one core: the runtime polls a member's future
/// on its caller's task, so their cpu runs one burst at a time), gateway
/// ones their deployment's pods. All their cpu over the cores, then the
/// longest rest of any of them, each site for the share of the invocations
/// it is made. An upper bound of that queue (a rest may overlap another's
/// cpu), so that merging is never credited with more than it gives; a
/// site alone is never longer for it.
fn queued(queue: &[Queued], cores: f64) -> f64 {
    let cpu: f64 = queue.iter().map(|q| q.chance * q.busy).sum();
    let rest = queue.iter().map(|q| (q.chance, q.rest.max(0.0))).collect();
    cpu / cores + expected_longest(rest)
}

/// The expected length of a round whose sites are made with these chances,
/// each as long as given when made: the most any way of making them
/// together (consistent with each one's chance) can take, so exact for
/// calls always made at once and for branches of which one is taken. Sorted
/// longest first, each site adds its length times the chance that it is
/// made and no longer one is (at most what is left of 1).
fn expected_longest(mut sites: Vec<(f64, f64)>) -> f64 {
    sites.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (mut taken, mut expected) = (0.0f64, 0.0);
    for (chance, length) in sites {
        let next = (taken + chance).min(1.0);
        expected += (next - taken) * length;
        taken = next;
    }
    expected
}

/// How one site is made ([`Model::share`]).
struct Share {
    /// The chance it is made on an invocation.
    chance: f64,
    /// How many of its calls run one after another when it is.
    times: f64,
    /// How many calls it makes when it is (at once or one after another).
    calls: f64,
}

impl Model {
    /// One site of `v` in `u`'s rounds (`u` called by `from`), from `u`'s
    /// calls of `v` per invocation on that path: the chance it is made, and how many times one after
    /// another when it is. The calls are shared among `v`'s sites: up to
    /// one each, evenly; past one each, sites made once take one and
    /// looped sites the rest (iterations); without a looped site, the
    /// surplus is repeats made at once (`join_all` over a list), one long
    /// on the critical path, but each with its cpu.
    fn share(&self, (u, from): (usize, usize), v: usize, looped: bool) -> Share {
        let m: f64 = self.calls[u]
            .iter()
            .filter(|c| c.callee == v)
            .map(|c| self.rate(from, u, c))
            .chain(
                self.back_of(u)
                    .iter()
                    .filter(|c| c.callee == v)
                    .map(|c| c.calls),
            )
            .sum();
        let (mut once, mut loops) = (0usize, 0usize);
        for (w, l) in self.rounds[u].iter().flat_map(Round::sites) {
            if w == v {
                if l {
                    loops += 1;
                } else {
                    once += 1;
                }
            }
        }
        let sites = (once + loops) as f64;
        let made = |chance: f64, times: f64, calls: f64| Share {
            chance,
            times,
            calls,
        };
        if m <= 0.0 || sites == 0.0 {
            return made(0.0, 0.0, 0.0);
        }
        if m <= sites {
            return made(m / sites, 1.0, 1.0);
        }
        if looped {
            let times = (m - once as f64) / loops as f64;
            made(1.0, times, times)
        } else if loops == 0 {
            made(1.0, 1.0, m / sites)
        } else {
            made(1.0, 1.0, 1.0)
        }
    }
}

/// Gateway hops per request at one entry point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hops {
    pub critical_before: f64,
    pub critical_after: f64,
    pub total_before: f64,
    pub total_after: f64,
}
