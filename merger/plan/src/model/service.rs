//! Service time in the model: what each function spends on a request
//! besides its calls ([`Model::own_ms`]), of which how much is cpu
//! ([`Model::busy_ms`]), and the rule that keeps a merge that would slow
//! its group's caller out of every plan ([`Model::slower`]).
//!
//! A gateway call runs its callee on another pod's task; an in-process one
//! on its caller's own (the runtime polls a member's future where its
//! caller awaits it), so calls made at once to cpu-bound members run one
//! burst at a time: a fan-out that ran on several pods queues on one core
//! once merged (`queued` in `model/latency.rs`). Gateway calls made at once
//! to one deployment share its pods' cores ([`Model::cores`]): on a pod of
//! one core they queue too, merged or not. The merged pod's cpu limit is
//! at least each member's own ([`Model::pod`]), so one request's member
//! runs no slower than it did alone; the limit bounds the pod's requests
//! together, which its sizing covers.

use super::latency::Price;
use super::{Model, Set, bit, members};

impl Model {
    /// `u`'s own time per run, ms: what its run takes besides its calls
    /// (cpu, and waits that are not `invoke`s: a database's round trips);
    /// 0 where nothing is measured.
    pub fn own(&self, u: usize) -> f64 {
        self.own_ms.get(u).copied().unwrap_or(0.0)
    }

    /// The part of [`own`](Self::own) that is cpu, as long as it took on
    /// `u`'s own pod, ms; 0 where no cpu is measured.
    pub fn busy(&self, u: usize) -> f64 {
        self.busy_ms.get(u).copied().unwrap_or(0.0)
    }

    /// Sets [`own_ms`](Self::own_ms) and [`busy_ms`](Self::busy_ms) from
    /// the measured [`serve_ms`](Self::serve_ms) and
    /// [`cpu_ms`](Self::cpu_ms), callees first: a function's own time is
    /// its serving time less its rounds of calls as they ran (each call at
    /// its hop plus its callee's serving time), and never less than its cpu
    /// unless the serving time is its handler's alone
    /// ([`handler_timed`](Self::handler_timed): its pods' cpu per request
    /// counts serving and calling over HTTP too, which an in-process call
    /// does not do, and a handler uses no more cpu than the time it runs);
    /// its cpu takes `cpu_ms` over the cores its pod gave it (its cpu limit,
    /// at most the one core a task runs on), and no more than its own time.
    /// Then each function's
    /// [`floor_ms`](Self::floor_ms). Nothing where neither is measured:
    /// then the model is the hops' alone.
    pub(super) fn service(&mut self) {
        let n = self.n();
        let known = |v: &[Option<f64>]| v.iter().any(Option::is_some);
        if !known(&self.serve_ms) && !known(&self.cpu_ms) {
            self.own_ms.clear();
            self.busy_ms.clear();
            self.floor_ms.clear();
            return;
        }
        let at = |v: &[Option<f64>], i: usize| v.get(i).copied().flatten();
        self.busy_ms = (0..n)
            .map(|i| {
                let cores = self.cpu.get(i).copied().flatten().unwrap_or(1.0).min(1.0);
                match at(&self.cpu_ms, i) {
                    Some(cpu) if cores > 0.0 => cpu / cores,
                    _ => 0.0,
                }
            })
            .collect();
        self.own_ms = vec![0.0; n];
        let alone: Vec<Set> = (0..n).map(bit).collect();
        let mut own = vec![0.0; n];
        for u in self.order.clone().into_iter().rev() {
            // Callees first: theirs are known, `u`'s is still 0 in the walk.
            let price = Price {
                hop: &|u, v| self.hop_cost(u, v),
                timed: true,
                pods: true,
            };
            let calls = self.request_at(u, &alone, &price).critical;
            let busy = self.busy_ms[u];
            // A serving time within rounding of its calls' is all calls.
            // A handler's own time is no less than its cpu: no floor then.
            let floor = match self.handler_timed.get(u).copied().unwrap_or(false) {
                true => 0.0,
                false => busy,
            };
            own[u] = match at(&self.serve_ms, u) {
                Some(serve) if serve - calls > 1e-9 => (serve - calls).max(floor),
                Some(_) => floor,
                None => busy,
            };
            self.own_ms[u] = own[u];
        }
        for (u, busy) in self.busy_ms.iter_mut().enumerate() {
            *busy = busy.min(own[u]);
        }
        // No queue at a deployment's pods either: a merged pod may have
        // more cores than its caller alone.
        self.floor_ms = self.critical_with(&Price {
            hop: &|_, _| 0.0,
            timed: true,
            pods: false,
        });
    }

    /// Whether `caller`'s group `set` makes a request at `caller` slower than
    /// with every function alone: its in-process calls queue on one task
    /// for longer than the gateway hops it removes. Such a group is in no
    /// plan, whatever the objective. Never without measured cpu.
    pub fn slower(&self, caller: usize, set: Set) -> bool {
        if set == bit(caller) || self.busy_ms.iter().all(|&b| b <= 0.0) || !self.queues(caller, set)
        {
            return false;
        }
        let price = Price {
            hop: &|u, v| self.hop_cost(u, v),
            timed: true,
            pods: true,
        };
        let mut groups: Vec<Set> = (0..self.n()).map(bit).collect();
        let before = self.request_at(caller, &groups, &price);
        groups[caller] = set;
        let after = self.request_at(caller, &groups, &price);
        after.critical > before.critical + 1e-9
    }

    /// Whether some round of a member of `caller`'s group `set` makes two or
    /// more calls in-process at once (two sites, or one made more than
    /// once): a round with one is never longer merged (its cpu queues
    /// behind none, and its hop is gone), so neither is the request.
    fn queues(&self, caller: usize, set: Set) -> bool {
        let inside = |v: usize| v != caller && set.contains(v);
        let repeated = |u: usize, v: usize| {
            let calls = self.calls[u].iter().filter(|c| c.callee == v);
            let paths = self.via.iter().filter(|(e, _)| e.to == u);
            let mut rates = calls.map(|c| c.calls).chain(
                paths.flat_map(|(_, list)| list.iter().filter(|c| c.callee == v).map(|c| c.calls)),
            );
            rates.any(|m| m > 1.0)
        };
        members(set).any(|u| {
            self.rounds[u].iter().any(|round| {
                let sites: Vec<(usize, bool)> = round.sites().filter(|&(v, _)| inside(v)).collect();
                sites.len() >= 2 || sites.iter().any(|&(v, looped)| !looped && repeated(u, v))
            })
        })
    }

    /// The cores the pods of `caller`'s deployment with the group `set` may
    /// use in all: its cpu limit (alone, the function's own; merged, what
    /// holds when every member peaks at once, [`together`](Self::together))
    /// times its replicas where measured, else one pod; `None` without a
    /// limit (unbounded).
    pub fn cores(&self, caller: usize, set: Set) -> Option<f64> {
        let limit = match set == bit(caller) {
            true => self.cpu.get(caller).copied().flatten(),
            false => self.together(super::Resource::Cpu, caller, set),
        };
        limit.map(|l| l * self.replicas(caller).max(1.0))
    }

    /// Whether `caller` may be the caller of the group `set`: a group the model
    /// allows ([`feasible`](Self::feasible)) that does not slow it
    /// ([`slower`](Self::slower)).
    pub fn admits(&self, caller: usize, set: Set) -> bool {
        self.feasible(set) && !self.slower(caller, set)
    }
}
