//! An oracle that shares none of the model's rules: the application's
//! requests as the runtime runs them, each a tree of calls in rounds (what
//! the call log records), valued under a plan by walking each tree: a call
//! from a process to a function its binary holds (a merged member, or its
//! own function once merged: `dispatch::lookup`) runs there for nothing;
//! any other crosses the gateway, one hop's cost, to the callee's own
//! deployment, which the plan must keep. A round lasts as long as its
//! longest call. The planner sees only what a scrape shows of the trees
//! (requests from outside, calls per caller and callee) and the code's
//! rounds; on applications whose trees its simplifications fit, its plan
//! must score what the best plan the oracle finds by enumeration does.
//!
//! A request's time is run on the oracle's own clock (`simulated/clock.rs`):
//! each function's cpu and waits, the cpu of in-process calls on their
//! caller's task, a pod's cores shared. The planner sees what a scrape
//! shows of it: each function's mean serving time unmerged and its cpu per
//! request. A plan with a group that makes some request slower than with
//! every function alone is no plan (the planner's rule: no merge that
//! slows its caller), whatever the objective.

use super::traffic::measured;
use super::*;

/// One call: its callee, and the callee's own calls, in rounds.
pub(super) struct Call {
    to: &'static str,
    rounds: Vec<Vec<Call>>,
}

fn call(to: &'static str, rounds: Vec<Vec<Call>>) -> Call {
    Call { to, rounds }
}

/// A kind of request: `count` of them arrive at `entry` and run `rounds`.
pub(super) struct Kind {
    entry: &'static str,
    count: f64,
    rounds: Vec<Vec<Call>>,
}

fn kind(entry: &'static str, count: f64, rounds: Vec<Vec<Call>>) -> Kind {
    Kind {
        entry,
        count,
        rounds,
    }
}

/// An application: its code (each caller's rounds of callees, as the
/// source scan reads them), its requests, the cost of a gateway hop.
#[derive(Default)]
pub(super) struct App {
    code: Vec<(&'static str, Vec<Vec<&'static str>>)>,
    requests: Vec<Kind>,
    hop_ms: f64,
    /// Functions whose `limits.memory` is not the 64Mi the rest set, in Mi.
    memory: Vec<(&'static str, f64)>,
    /// What each run of a function does besides its calls (none: nothing,
    /// and the planner is given no serving times).
    work: Vec<(&'static str, Work)>,
    /// Functions whose `limits.cpu` is not the 0.5 core the rest set.
    cores: Vec<(&'static str, f64)>,
}

/// Calls per caller and callee in all the requests, as a scrape counts them.
fn count(rounds: &[Vec<Call>], from: &str, seen: &mut BTreeMap<(String, String), f64>, n: f64) {
    for c in rounds.iter().flatten() {
        *seen
            .entry((from.to_string(), c.to.to_string()))
            .or_default() += n;
        count(&c.rounds, c.to, seen, n);
    }
}

impl App {
    /// What a run of `function` does besides its calls.
    fn work(&self, function: &str) -> Work {
        let w = self.work.iter().find(|(f, _)| *f == function);
        w.map_or(Work::default(), |w| w.1)
    }

    /// What `fmerge plan` reads of it: the code's calls and rounds, the
    /// scrape's figures; every entry point declared and every caller named;
    /// with `log`, the call log of its requests, each record naming its
    /// parent request ([`call_log`](Self::call_log)).
    fn model(&self, c: &Constraints, log: bool) -> Model {
        let edges: Vec<(&str, &str)> = self
            .code
            .iter()
            .flat_map(|(f, rounds)| rounds.iter().flatten().map(move |t| (*f, *t)))
            .collect();
        let mut g = graph(&edges);
        for (f, rounds) in &self.code {
            let rounds: Vec<&[&str]> = rounds.iter().map(Vec::as_slice).collect();
            in_rounds(&mut g, f, &rounds);
        }
        let mut seen = BTreeMap::new();
        let mut external: BTreeMap<&str, f64> = BTreeMap::new();
        for k in &self.requests {
            *external.entry(k.entry).or_default() += k.count;
            count(&k.rounds, k.entry, &mut seen, k.count);
        }
        let names: Vec<String> = g.functions.iter().map(|f| f.name.clone()).collect();
        let outside: Vec<(&str, f64)> = names
            .iter()
            .map(|n| (n.as_str(), external.get(n.as_str()).copied().unwrap_or(0.0)))
            .collect();
        let calls: Vec<(&str, &str, f64)> = edges
            .iter()
            .map(|&(f, t)| {
                (
                    f,
                    t,
                    seen.get(&(f.into(), t.into())).copied().unwrap_or(0.0),
                )
            })
            .collect();
        let mut g = measured(g, &outside, &calls);
        for f in &mut g.functions {
            f.entry = external.contains_key(f.name.as_str());
            f.watched = true;
            let mi = self.memory.iter().find(|(n, _)| *n == f.name);
            f.memory_bytes = Some(mi.map_or(64.0, |m| m.1) * MIB);
            let cores = self.cores.iter().find(|(n, _)| *n == f.name);
            f.cpu = Some(cores.map_or(0.5, |c| c.1));
        }
        if !self.work.is_empty() {
            // The scrape's serving times: each function's runs, unmerged,
            // on the oracle's clock; its cpu per request.
            let m = model(&g, c).unwrap();
            let alone: Vec<Set> = (0..m.n()).map(bit).collect();
            let mut served: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
            for k in &self.requests {
                for (f, ms) in clock::time(self, &m, &alone, k).1 {
                    let s = served.entry(f).or_default();
                    (s.0, s.1) = (s.0 + k.count * ms, s.1 + k.count);
                }
            }
            for (i, f) in g.functions.iter_mut().enumerate() {
                f.serve_ms = served.get(&i).map(|s| s.0 / s.1);
                f.cpu_ms = Some(self.work(&f.name).cpu);
            }
        }
        if log {
            let log = crate::graph::call_log::parse(&self.call_log(), "calls.txt").unwrap();
            g.paths_from(&log);
        }
        model(&g, c).unwrap()
    }

    /// The call log of the requests, as a runtime that names each record's
    /// parent request would write it: each run of a function a request of
    /// its own, one record per call it makes.
    fn call_log(&self) -> String {
        struct Log {
            lines: Vec<String>,
            requests: usize,
        }
        fn runs(f: &str, rounds: &[Vec<Call>], parent: &str, log: &mut Log) {
            log.requests += 1;
            let me = format!("p.{}", log.requests);
            for c in rounds.iter().flatten() {
                let at = log.lines.len();
                let line = format!("{me} {f} {} {at} {} {parent}", c.to, at + 1);
                log.lines.push(line);
                runs(c.to, &c.rounds, &me, log);
            }
        }
        let mut log = Log {
            lines: Vec::new(),
            requests: 0,
        };
        for k in &self.requests {
            for _ in 0..k.count as usize {
                runs(k.entry, &k.rounds, "-", &mut log);
            }
        }
        log.lines.join("\n")
    }

    /// Per request of the application under `groups`: the gateway calls
    /// removed, the latency removed (ms, on the oracle's clock), and the
    /// deployments a request reaches (from outside or over the gateway);
    /// `None` when a gateway call lands on a deployment the plan drops.
    fn value(&self, m: &Model, groups: &[Set]) -> Option<(f64, f64, Vec<bool>)> {
        let kept = m.deployed(groups);
        let alone: Vec<Set> = (0..m.n()).map(bit).collect();
        let (mut removed, mut gain, mut all) = (0.0, 0.0, 0.0);
        let mut reached = vec![false; m.n()];
        for k in &self.requests {
            let d = m.index(k.entry).unwrap();
            reached[d] = true;
            let (_, inside) = self.run(m, groups, d, &k.rounds, &kept, &mut reached)?;
            let before = clock::time(self, m, &alone, k).0;
            let after = clock::time(self, m, groups, k).0;
            removed += k.count * inside;
            gain += k.count * (before - after);
            all += k.count;
        }
        Some((removed / all, gain / all, reached))
    }

    /// `rounds` run in the process of deployment `d`: how long their hops
    /// take and how many calls stay in-process.
    fn run(
        &self,
        m: &Model,
        groups: &[Set],
        d: usize,
        rounds: &[Vec<Call>],
        kept: &[bool],
        reached: &mut [bool],
    ) -> Option<(f64, f64)> {
        let (mut ms, mut inside) = (0.0, 0.0);
        for round in rounds {
            let mut longest = 0.0f64;
            for c in round {
                let v = m.index(c.to).unwrap();
                let here = groups[d].contains(v) && groups[d] != bit(d);
                let (hop, next) = if here { (0.0, d) } else { (self.hop_ms, v) };
                if !here && !kept[v] {
                    return None;
                }
                reached[v] |= !here;
                let (below, k) = self.run(m, groups, next, &c.rounds, kept, reached)?;
                longest = longest.max(hop + below);
                inside += k + f64::from(u8::from(here));
            }
            ms += longest;
        }
        Some((ms, inside))
    }

    /// The best score any plan reaches by `objective` (each function's group
    /// any set of the functions it reaches, itself in it), as the oracle
    /// values plans, under `--min-gain-ms` when given; copies' memory for
    /// the memory objective.
    fn best(&self, m: &Model, c: &Constraints) -> f64 {
        let n = m.n();
        let options: Vec<Vec<Set>> = (0..n)
            .map(|r| {
                let others: Vec<usize> = m.reach(r).iter().filter(|&i| i != r).collect();
                (0..1u32 << others.len())
                    .map(|mask| {
                        (0..others.len())
                            .filter(|b| mask >> b & 1 == 1)
                            .fold(bit(r), |s, b| s | bit(others[b]))
                    })
                    .collect()
            })
            .collect();
        let mut best = f64::NEG_INFINITY;
        let mut groups: Vec<Set> = (0..n).map(bit).collect();
        let mut pick = vec![0usize; n];
        loop {
            for r in 0..n {
                groups[r] = options[r][pick[r]];
            }
            if let Some(s) = self.score(m, c, &groups) {
                best = best.max(s);
            }
            // The next plan, as an odometer over each caller's options.
            let Some(r) = (0..n).find(|&r| pick[r] + 1 < options[r].len()) else {
                return best;
            };
            pick[r] += 1;
            pick[..r].fill(0);
        }
    }

    fn score(&self, m: &Model, c: &Constraints, groups: &[Set]) -> Option<f64> {
        if self.slows(m, groups) {
            return None;
        }
        let (removed, gain, reached) = self.value(m, groups)?;
        if c.min_gain_ms.is_some_and(|min| gain < min - 1e-9) {
            return None;
        }
        Some(match c.objective {
            Objective::Calls => removed,
            Objective::Latency => gain,
            Objective::Memory => {
                let copy = |(r, g): (usize, &Set)| -> f64 {
                    let copies = g.iter().filter(|&i| i != r);
                    copies.map(|i| m.memory[i].unwrap()).sum()
                };
                -groups.iter().enumerate().map(copy).sum::<f64>()
            }
            Objective::Cost => -cost(m, groups, &reached),
        })
    }

    /// Whether a group of `groups`, merged alone, makes some request slower
    /// than with every function alone.
    fn slows(&self, m: &Model, groups: &[Set]) -> bool {
        let alone: Vec<Set> = (0..m.n()).map(bit).collect();
        (0..m.n()).filter(|&r| groups[r] != bit(r)).any(|r| {
            let mut only = alone.clone();
            only[r] = groups[r];
            self.requests.iter().any(|k| {
                clock::time(self, m, &only, k).0 > clock::time(self, m, &alone, k).0 + 1e-9
            })
        })
    }

    /// Asserts that the planner's plan under `c` scores the oracle's best,
    /// and the heuristic's a valid plan no better.
    fn agrees(&self, c: &Constraints, what: &str) {
        self.agrees_reading(c, false, what);
    }

    /// [`agrees`](Self::agrees), the planner given the call log too when
    /// `log`; the planner's plan.
    fn agrees_reading(&self, c: &Constraints, log: bool, what: &str) -> Plan {
        let m = self.model(c, log);
        let best = self.best(&m, c);
        let mut exact = None;
        for method in [Method::Exact, Method::Heuristic] {
            let plan = solve(&m, method).unwrap().plan;
            let got = self.score(&m, c, &plan.groups);
            let ok = match method {
                Method::Exact => got.is_some_and(|s| (s - best).abs() < 1e-6),
                _ => got.is_some_and(|s| s <= best + 1e-6),
            };
            assert!(
                ok,
                "{what}, {method:?}: the planner's {:?} scores {got:?}, the oracle's best {best}",
                named_groups(&m, &plan)
            );
            exact.get_or_insert(plan);
        }
        exact.expect("the exact search ran")
    }
}

/// What the cluster reserves under `groups`, as the cost objective weighs
/// it (pods, memory and cpu requests, each over the unmerged
/// application's, their mean; nothing measured, so a pod reserves its
/// members' own figures): a deployment stays when a request reaches it,
/// it is a merged group's caller, or no group holds its function (it runs
/// nowhere else).
fn cost(m: &Model, groups: &[Set], reached: &[bool]) -> f64 {
    let n = m.n();
    let copied = |i: usize| (0..n).any(|r| r != i && groups[r].contains(i));
    let stays = |d: usize| reached[d] || groups[d] != bit(d) || !copied(d);
    let sum = |figure: &dyn Fn(usize) -> f64| -> f64 {
        (0..n)
            .filter(|&d| stays(d))
            .map(|d| groups[d].iter().map(figure).sum::<f64>())
            .sum()
    };
    let memory = |i: usize| m.memory[i].unwrap();
    let cpu = |i: usize| m.cpu[i].unwrap();
    let all = |figure: &dyn Fn(usize) -> f64| (0..n).map(figure).sum::<f64>();
    let pods = (0..n).filter(|&d| stays(d)).count() as f64 / n as f64;
    (pods + sum(&memory) / all(&memory) + sum(&cpu) / all(&cpu)) / 3.0
}

mod apps;
mod clock;
mod service;

use clock::Work;
