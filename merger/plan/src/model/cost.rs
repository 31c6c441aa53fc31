//! What the cluster pays under a plan: which deployments stay
//! ([`Model::deployed`]), what each merged pod reserves ([`Model::pod`]:
//! requests from measured usage, limits that leave every member the room
//! it had alone), what all of it adds up to ([`Model::reserved`]), and the
//! one figure the cost objective minimizes ([`Model::cost`]).
//!
//! This is the one place these rules live: `fmerge plan` reports them and
//! writes each merged pod's figures into the plan file, and `fmerge build
//! --plan` writes the stack from the plan file.

use super::{Model, Resource, Set, bit, members};

/// What a merged pod reserves above its members' measured usage, as a share
/// of it: room for the peaks one scrape does not see.
pub const HEADROOM: f64 = 0.25;

/// Where a pod's figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The stack file's own value (an unmerged deployment), or the members'
    /// values added up: nothing was measured.
    Stack,
    /// Every member's measured usage (with [`HEADROOM`]).
    Measured,
    /// Measured usage for some members, the stack's values for the rest.
    Mixed,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Stack => "stack",
            Origin::Measured => "measured",
            Origin::Mixed => "mixed",
        }
    }

    fn of(measured: usize, members: usize) -> Origin {
        match measured {
            0 => Origin::Stack,
            m if m == members => Origin::Measured,
            _ => Origin::Mixed,
        }
    }
}

/// Why a function's own deployment stays under a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// No group holds it as a copy.
    NoCopy,
    /// It is a group's caller: the merged pod is deployed under its name.
    Caller,
    /// A declared entry point (the stack's `com.openfaas.fmerge.entry`).
    Declared,
    /// It gets requests from outside the application.
    Outside,
    /// `by`, running in the deployment of `from` (which stays), calls it
    /// over the gateway.
    Called { by: usize, from: usize },
    /// `by`, in a deployment that stays, calls a name computed at run time.
    Computed(usize),
    /// Nothing shows that no caller outside its groups needs it.
    Unproven(Unproven),
}

/// What is missing to show that a copied callee's own deployment has no
/// caller but its groups: without it, the deployment stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unproven {
    /// The plan covers part of the stack (`--filter`, `--regex`): the rest
    /// of the application may call it.
    Partial,
    /// The stack declares no entry point (`com.openfaas.fmerge.entry`), so
    /// an undeclared function is no proof of an inside one.
    Undeclared,
    /// No traffic was measured: nothing shows who calls it.
    Untraced,
    /// The traffic does not name the caller of every request it got (not
    /// scraped, an access log, which names no caller, or a scrape's
    /// `other`, a caller past the runtime's first 64).
    Unwatched,
}

/// One figure of a pod: the amount (bytes of memory, cores of cpu; `None`:
/// unset, so unbounded for a limit) and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub amount: Option<f64>,
    pub from: Origin,
}

/// What one deployment's pod reserves, indexed by [`Resource::index`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pod {
    pub requests: [Figure; 2],
    pub limits: [Figure; 2],
}

/// What the deployments of a plan reserve in all, indexed by
/// [`Resource::index`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reserved {
    pub pods: usize,
    /// What the scheduler sets aside: each pod's request, else its limit
    /// (Kubernetes' default for a request), else nothing.
    pub requests: [f64; 2],
    /// The limits added up; `None` when a pod sets none (unbounded).
    pub limits: [Option<f64>; 2],
}

impl Model {
    /// A function's own limit of `resource`, when set.
    pub fn limit(&self, resource: Resource, i: usize) -> Option<f64> {
        match resource {
            Resource::Memory => self.memory[i],
            Resource::Cpu => self.cpu[i],
        }
    }

    /// What every process holds whatever function it serves (the runtime,
    /// its threads and allocator), so that a merged pod holds it once: of
    /// memory, the least any function's pod was measured to hold (an upper
    /// bound of that part); of cpu, nothing (work adds up).
    pub fn shared(&self, resource: Resource) -> f64 {
        match resource {
            Resource::Memory => self
                .usage
                .iter()
                .filter_map(|u| u[Resource::Memory.index()])
                .reduce(f64::min)
                .unwrap_or(0.0),
            Resource::Cpu => 0.0,
        }
    }

    /// What a function's own deployment has the scheduler set aside: its
    /// request, else its limit (Kubernetes' default), else nothing.
    pub fn request(&self, resource: Resource, i: usize) -> f64 {
        self.requests[i][resource.index()]
            .or(self.limit(resource, i))
            .unwrap_or(0.0)
    }

    /// Which functions keep their own deployment under `groups`
    /// ([`kept`](Self::kept) says why).
    pub fn deployed(&self, groups: &[Set]) -> Vec<bool> {
        self.kept(groups).iter().map(Option::is_some).collect()
    }

    /// The functions whose own deployment `groups` no longer need.
    pub fn dropped(&self, groups: &[Set]) -> Set {
        let kept = self.kept(groups);
        (0..self.n())
            .filter(|&i| kept[i].is_none())
            .fold(Set::EMPTY, |set, i| set | bit(i))
    }

    /// Whether the inputs can show that function `i` has no caller outside
    /// the plan's groups (what a drop requires besides not being declared,
    /// no outside requests and no gateway call from a deployment that
    /// stays): the whole stack planned, entry points declared, and traffic
    /// that names the caller of every request `i` got over the window.
    pub fn proof(&self, i: usize) -> Result<(), Unproven> {
        if self.partial.is_some() {
            Err(Unproven::Partial)
        } else if self.labelled().next().is_none() {
            Err(Unproven::Undeclared)
        } else if !self.measured {
            Err(Unproven::Untraced)
        } else if !self.watched.get(i).copied().unwrap_or(false) {
            Err(Unproven::Unwatched)
        } else {
            Ok(())
        }
    }

    /// Whether function `i`'s own deployment stays whatever is merged:
    /// declared, called from outside, called by no function (a call back
    /// counts: no group holds it as a copy), or with no
    /// [`proof`](Self::proof) that nothing outside needs it.
    pub fn stays(&self, i: usize) -> bool {
        let called = (0..self.n()).any(|u| self.callees(u).any(|v| v == i));
        self.declared[i] || self.external[i] > 0.0 || !called || self.proof(i).is_err()
    }

    /// The least any plan's [`cost`](Self::cost) can be: a pod for each
    /// deployment that [`stays`](Self::stays) whatever is merged, each
    /// requesting at least the least of its own figure alone and its own
    /// part as a merged pod's caller (its measured memory with
    /// [`HEADROOM`]; of measured cpu, none: its work is the plan's); no
    /// request at all where a merged pod may set none (a function with
    /// neither usage nor a figure of its own).
    pub fn cost_floor(&self) -> f64 {
        let n = self.n();
        let stays: Vec<usize> = (0..n).filter(|&i| self.stays(i)).collect();
        let requests = [Resource::Memory, Resource::Cpu].map(|resource| {
            let k = resource.index();
            let own = |i: usize| self.requests[i][k].or(self.limit(resource, i));
            if (0..n).any(|i| self.usage[i][k].is_none() && own(i).is_none()) {
                return 0.0;
            }
            stays
                .iter()
                .map(|&i| {
                    let alone = own(i).unwrap_or(0.0);
                    let merged = match (resource, self.usage[i][k]) {
                        (_, None) => alone,
                        (Resource::Memory, Some(used)) => used * (1.0 + HEADROOM),
                        (Resource::Cpu, Some(_)) => 0.0,
                    };
                    alone.min(merged)
                })
                .sum()
        });
        let alone: Vec<Set> = (0..n).map(bit).collect();
        let floor = Reserved {
            pods: stays.len(),
            requests,
            limits: [None; 2],
        };
        self.cost_of(&floor, &self.reserved(&alone))
    }

    /// The entry points the stack declares with its label (a connector's
    /// topic aside): none, and no drop is proven.
    pub fn labelled(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.n())
            .filter(|&i| self.declared[i] && self.connector.get(i).is_none_or(Option::is_none))
    }

    /// Why each function keeps its own deployment under `groups`, `None`
    /// for the deployments dropped: every function no group holds as a
    /// copy, every group's caller, and a copy that gets requests from
    /// outside, is a declared entry point, has no [`proof`](Self::proof)
    /// that nothing outside needs it, or is still called from outside
    /// its group's process (a deployment that stays makes a gateway call to
    /// it, a call back included). A deployment that stays and calls a
    /// name computed at run time keeps every function (any may be the one
    /// it names).
    pub fn kept(&self, groups: &[Set]) -> Vec<Option<Kept>> {
        let n = self.n();
        let mut copy = vec![false; n];
        for (r, &set) in groups.iter().enumerate() {
            for m in members(set).filter(|&m| m != r) {
                copy[m] = true;
            }
        }
        let mut kept: Vec<Option<Kept>> = (0..n)
            .map(|i| {
                if groups[i] != bit(i) {
                    Some(Kept::Caller)
                } else if !copy[i] {
                    Some(Kept::NoCopy)
                } else if self.declared[i] {
                    Some(Kept::Declared)
                } else if self.external[i] > 0.0 {
                    Some(Kept::Outside)
                } else {
                    self.proof(i).err().map(Kept::Unproven)
                }
            })
            .collect();
        let mut todo: Vec<usize> = (0..n).filter(|&i| kept[i].is_some()).collect();
        while let Some(d) = todo.pop() {
            let set = groups[d];
            for u in members(set) {
                if self.computed[u] {
                    for k in kept.iter_mut().filter(|k| k.is_none()) {
                        *k = Some(Kept::Computed(u));
                    }
                    return kept;
                }
                for v in self.callees(u) {
                    let remote = !self.in_process(d, set, v);
                    if remote && kept[v].is_none() {
                        kept[v] = Some(Kept::Called { by: u, from: d });
                        todo.push(v);
                    }
                }
            }
        }
        kept
    }

    /// What the deployment of `caller` reserves with the group `set`: alone,
    /// the stack's own figures; merged, per resource,
    /// - requests: the measured members' usage, as one process
    ///   ([`shared`](Self::shared) counted once), plus [`HEADROOM`]; of
    ///   cpu, each member's work per request at the rate the pod will serve
    ///   it ([`work`](Self::work)); the own request (else limit) of each
    ///   member with none measured, of cpu for every pod of its work the
    ///   merged pod carries; unset when a member has neither;
    /// - limits: what holds when every member peaks at once
    ///   ([`together`](Self::together)): their own limits added up, of
    ///   memory with the shared part counted once, of cpu each member's for
    ///   every pod of its work the merged pod carries; with
    ///   `--limits-assume-apart`, the most any member needs to keep the
    ///   room it had alone, its own limit plus what the others add (their
    ///   usage beyond the shared part, with headroom; their limits where
    ///   unmeasured, which makes the sum when nothing is measured). Unset
    ///   when a member sets none; never below the request.
    pub fn pod(&self, caller: usize, set: Set) -> Pod {
        let figures = |resource: Resource| -> [Figure; 2] {
            let k = resource.index();
            if set == bit(caller) {
                return [
                    Figure {
                        amount: self.requests[caller][k].or(self.limit(resource, caller)),
                        from: Origin::Stack,
                    },
                    Figure {
                        amount: self.limit(resource, caller),
                        from: Origin::Stack,
                    },
                ];
            }
            let all: Vec<usize> = members(set).collect();
            // What a measured member adds to a process that holds the
            // shared part already, with headroom.
            let shared = self.shared(resource);
            // Of cpu, the pods of each member's work the merged pod
            // carries (walked once, when it can differ from one pod).
            let carried = match resource {
                Resource::Cpu => self.carried_if_needed(caller, set),
                Resource::Memory => None,
            };
            let work = match resource {
                Resource::Cpu => Some(self.work_of(set, carried.as_deref())),
                Resource::Memory => None,
            };
            let added = |i: usize| {
                let used = match &work {
                    Some(work) => work[i],
                    None => self.usage[i][k].map(|u| u - shared),
                };
                used.map(|u| u * (1.0 + HEADROOM))
            };
            let measured = all.iter().filter(|&&i| added(i).is_some()).count();
            let once = if measured > 0 {
                shared * (1.0 + HEADROOM)
            } else {
                0.0
            };
            // Of cpu, a member's own figures count once for every pod of
            // its work the merged pod carries.
            let pods = at_least_one(carried.as_deref(), self.n());
            let own = |i: usize| {
                self.requests[i][k]
                    .or(self.limit(resource, i))
                    .map(|x| x * pods[i])
            };
            let request: Option<f64> = all
                .iter()
                .map(|&i| added(i).or_else(|| own(i)))
                .sum::<Option<f64>>()
                .map(|sum| once + sum);
            let limits: Option<Vec<f64>> = all.iter().map(|&i| self.limit(resource, i)).collect();
            let limit = limits.map(|own| {
                if !self.constraints.limits_assume_apart {
                    let together = self.together_of(resource, set, &pods).unwrap_or(0.0);
                    return together.max(request.unwrap_or(0.0));
                }
                let room = |j: usize| added(all[j]).unwrap_or(own[j]);
                let others: f64 = (0..all.len()).map(room).sum();
                (0..all.len())
                    .map(|j| own[j] + others - room(j))
                    .fold(request.unwrap_or(0.0), f64::max)
            });
            let from = Origin::of(measured, all.len());
            [
                Figure {
                    amount: request,
                    from,
                },
                Figure {
                    amount: limit,
                    from,
                },
            ]
        };
        let [memory, cpu] = [Resource::Memory, Resource::Cpu].map(figures);
        Pod {
            requests: [memory[0], cpu[0]],
            limits: [memory[1], cpu[1]],
        }
    }

    /// What the members of `caller`'s group `set` may hold of `resource`
    /// in one of the merged deployment's pods when every one peaks at once:
    /// of memory, their own limits added up, the part every process holds
    /// ([`shared`](Self::shared)) counted once; of cpu, each member's own
    /// limit for every pod of its work one merged pod carries
    /// ([`carried`](Self::carried)), never less than one (a member's own
    /// request runs no slower merged). `None` when a member sets no limit.
    pub fn together(&self, resource: Resource, caller: usize, set: Set) -> Option<f64> {
        let pods = match resource {
            Resource::Cpu => at_least_one(self.carried_if_needed(caller, set).as_deref(), self.n()),
            Resource::Memory => vec![1.0; self.n()],
        };
        self.together_of(resource, set, &pods)
    }

    /// [`together`](Self::together) with each member's cpu limit counted
    /// `pods[i]` times.
    fn together_of(&self, resource: Resource, set: Set, pods: &[f64]) -> Option<f64> {
        let own: Vec<(usize, f64)> = members(set)
            .map(|i| self.limit(resource, i).map(|l| (i, l)))
            .collect::<Option<_>>()?;
        match resource {
            Resource::Memory => {
                let extra = set.count_ones().saturating_sub(1) as f64;
                Some(own.iter().map(|&(_, l)| l).sum::<f64>() - self.shared(resource) * extra)
            }
            Resource::Cpu => Some(own.iter().map(|&(i, l)| l * pods[i]).sum()),
        }
    }

    /// [`carried`](Self::carried) where it may matter: some member's cpu
    /// measured (its work is its cores times it), or on more pods than the
    /// caller (the only way to carry more than one pod's work); else `None`,
    /// one pod each.
    fn carried_if_needed(&self, caller: usize, set: Set) -> Option<Vec<f64>> {
        let k = Resource::Cpu.index();
        let needed = members(set)
            .any(|i| self.usage[i][k].is_some() || self.replicas(i) > self.replicas(caller));
        needed.then(|| self.carried(caller, set))
    }

    /// A function's pods where the scrape counts them, else one.
    pub fn replicas(&self, i: usize) -> f64 {
        self.pods.get(i).copied().flatten().unwrap_or(1.0)
    }

    /// How many pods' worth of each member's work one of the merged
    /// deployment's pods carries, for `caller`'s group `set`: its pods
    /// (its replicas) times the share of its runs the group serves (per
    /// request at `caller`, its runs in-process times `caller`'s own runs,
    /// over all of its runs: an upper bound, since a caller's merge only
    /// takes requests from `caller`), spread over `caller`'s replicas.
    /// `caller` carries its own, 1; a function outside the group, 0.
    pub fn carried(&self, caller: usize, set: Set) -> Vec<f64> {
        let runs = self.invocations();
        let mut share = vec![0.0; self.n()];
        share[caller] = 1.0;
        for r in self.flow(caller, set).inside {
            if runs[r.member] > 0.0 {
                share[r.member] = (r.runs * runs[caller] / runs[r.member]).min(1.0);
            }
        }
        (0..self.n())
            .map(|i| self.replicas(i) * share[i] / self.replicas(caller))
            .collect()
    }

    /// The cores each measured member of `caller`'s group `set` will use in
    /// one of the merged deployment's pods: its cores per pod times the
    /// pods of its work that pod carries ([`carried`](Self::carried)).
    /// `None` for a member whose cpu is not measured.
    pub fn work(&self, caller: usize, set: Set) -> Vec<Option<f64>> {
        self.work_of(set, self.carried_if_needed(caller, set).as_deref())
    }

    /// [`work`](Self::work) with the pods each member's work is carried
    /// for (`None`: none measured, no work).
    fn work_of(&self, set: Set, carried: Option<&[f64]>) -> Vec<Option<f64>> {
        let k = Resource::Cpu.index();
        match carried {
            Some(carried) if members(set).any(|i| self.usage[i][k].is_some()) => (0..self.n())
                .map(|i| Some(self.usage[i][k]? * carried[i]))
                .collect(),
            _ => vec![None; self.n()],
        }
    }

    /// What the deployments that stay under `groups` reserve
    /// ([`deployed`](Self::deployed), [`pod`](Self::pod)); with every
    /// function alone, the application before any merge.
    pub fn reserved(&self, groups: &[Set]) -> Reserved {
        let stays = self.deployed(groups);
        let mut out = Reserved {
            pods: 0,
            requests: [0.0; 2],
            limits: [Some(0.0); 2],
        };
        for d in (0..self.n()).filter(|&d| stays[d]) {
            let pod = self.pod(d, groups[d]);
            out.pods += 1;
            for k in 0..2 {
                out.requests[k] += pod.requests[k].amount.unwrap_or(0.0);
                out.limits[k] = out.limits[k].zip(pod.limits[k].amount).map(|(a, b)| a + b);
            }
        }
        out
    }

    /// What the cost objective minimizes: the pods, the memory requests and
    /// the cpu requests the cluster reserves under `groups`, each as a
    /// share of the unmerged application's, weighed equally (their mean; 1
    /// is the unmerged application). A figure the application has none of
    /// is left out.
    pub fn cost(&self, groups: &[Set]) -> f64 {
        let alone: Vec<Set> = (0..self.n()).map(bit).collect();
        self.cost_of(&self.reserved(groups), &self.reserved(&alone))
    }

    /// [`cost`](Self::cost) of `after` against `before`.
    pub fn cost_of(&self, after: &Reserved, before: &Reserved) -> f64 {
        let pairs = [
            (after.pods as f64, before.pods as f64),
            (after.requests[0], before.requests[0]),
            (after.requests[1], before.requests[1]),
        ];
        let shares: Vec<f64> = pairs
            .iter()
            .filter(|(_, b)| *b > 0.0)
            .map(|(a, b)| a / b)
            .collect();
        if shares.is_empty() {
            0.0
        } else {
            shares.iter().sum::<f64>() / shares.len() as f64
        }
    }

    /// Whether what `groups` leave deployed is within `--max-total-memory`
    /// and `--max-total-cpu` (limits of the deployments that stay).
    pub fn within_caps(&self, groups: &[Set]) -> bool {
        let c = &self.constraints;
        if c.max_total_memory.is_none() && c.max_total_cpu.is_none() {
            return true; // no cap: nothing to count
        }
        let reserved = self.reserved(groups);
        self.caps_hold(&reserved.limits.map(|l| l.unwrap_or(0.0)))
    }

    /// Whether these limits, memory and cpu, are within the total caps.
    pub fn caps_hold(&self, limits: &[f64; 2]) -> bool {
        let caps = [
            self.constraints.max_total_memory,
            self.constraints.max_total_cpu,
        ];
        (0..2).all(|k| caps[k].is_none_or(|max| limits[k] <= max * (1.0 + 1e-12)))
    }
}

/// `carried`, each at least one pod (a member's own figures count whole in
/// a merged pod: its own request runs no slower merged); all one without.
fn at_least_one(carried: Option<&[f64]>, n: usize) -> Vec<f64> {
    match carried {
        Some(carried) => carried.iter().map(|c| c.max(1.0)).collect(),
        None => vec![1.0; n],
    }
}
