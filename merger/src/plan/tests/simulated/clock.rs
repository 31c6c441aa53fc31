//! The oracle's clock: one request run through the deployments as the
//! runtime runs it, event by event. A run of a function spends its cpu,
//! then waits (I/O), then makes its rounds of calls; a call to a function
//! its process holds runs on the caller's own task (the runtime polls the
//! member's future where its caller awaits it), any other crosses the
//! gateway (one hop) to a new task on the callee's own pod. A task runs
//! one cpu burst at a time, first come first served (a future runs until
//! it waits); a pod's running tasks share its cpu limit, each at most one
//! core. None of the planner's formulas: the time a request takes is when
//! its last event happens.

use super::*;
use std::collections::VecDeque;

/// What one run of a function does besides its calls, ms: `cpu` first,
/// then `io` waiting (a database's round trip).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Work {
    pub cpu: f64,
    pub io: f64,
}

struct Run<'a> {
    function: usize,
    rounds: &'a [Vec<Call>],
    /// The deployment whose process runs it, and the task.
    deployment: usize,
    task: usize,
    parent: Option<usize>,
    round: usize,
    waiting: usize,
    start: f64,
}

struct Task {
    pod: usize,
    /// Cpu bursts waiting for the task's thread: (run, ms of cpu left).
    queue: VecDeque<(usize, f64)>,
}

enum Then<'a> {
    /// A run's wait ended: its rounds start.
    Rounds(usize),
    /// A gateway call reached its callee's pod.
    Arrive { parent: usize, call: &'a Call },
}

struct Clock<'a> {
    app: &'a App,
    m: &'a Model,
    groups: &'a [Set],
    now: f64,
    runs: Vec<Run<'a>>,
    tasks: Vec<Task>,
    timers: Vec<(f64, Then<'a>)>,
    /// Each run that ended: its function and how long it took.
    ended: Vec<(usize, f64)>,
    /// When the request's own run (the first) ended.
    done: f64,
}

/// How long one request of `kind` takes under `groups`, ms, and each run's
/// (function, duration) on the way: what a scrape's serving times count.
pub(super) fn time(app: &App, m: &Model, groups: &[Set], kind: &Kind) -> (f64, Vec<(usize, f64)>) {
    let mut clock = Clock {
        app,
        m,
        groups,
        now: 0.0,
        runs: Vec::new(),
        tasks: Vec::new(),
        timers: Vec::new(),
        ended: Vec::new(),
        done: f64::NAN,
    };
    let entry = m.index(kind.entry).unwrap();
    let task = clock.task(entry);
    clock.start(entry, &kind.rounds, entry, task, None);
    clock.run();
    assert!(
        clock.done.is_finite(),
        "the request to {} never ended",
        kind.entry
    );
    (clock.done, clock.ended)
}

impl<'a> Clock<'a> {
    fn task(&mut self, pod: usize) -> usize {
        self.tasks.push(Task {
            pod,
            queue: VecDeque::new(),
        });
        self.tasks.len() - 1
    }

    /// The cores deployment `d`'s pod may use: its function's cpu limit
    /// alone, its members' added up when merged (what the plan writes).
    fn cores(&self, d: usize) -> f64 {
        self.groups[d]
            .iter()
            .map(|i| self.m.cpu[i].unwrap_or(1.0))
            .sum()
    }

    fn start(
        &mut self,
        function: usize,
        rounds: &'a [Vec<Call>],
        deployment: usize,
        task: usize,
        parent: Option<usize>,
    ) {
        let work = self.app.work(&self.m.names[function]);
        self.runs.push(Run {
            function,
            rounds,
            deployment,
            task,
            parent,
            round: 0,
            waiting: 0,
            start: self.now,
        });
        let run = self.runs.len() - 1;
        if work.cpu > 0.0 {
            self.tasks[task].queue.push_back((run, work.cpu));
        } else {
            self.wait(run);
        }
    }

    /// The run's cpu is spent: its wait, then its rounds.
    fn wait(&mut self, run: usize) {
        let io = self.app.work(&self.m.names[self.runs[run].function]).io;
        self.timers.push((self.now + io, Then::Rounds(run)));
    }

    /// Starts the run's next round, or ends it.
    fn next_round(&mut self, run: usize) {
        let r = &self.runs[run];
        let Some(round) = r.rounds.get(r.round) else {
            let (function, start, parent) = (r.function, r.start, r.parent);
            self.ended.push((function, self.now - start));
            if run == 0 {
                self.done = self.now;
            }
            if let Some(p) = parent {
                self.runs[p].waiting -= 1;
                if self.runs[p].waiting == 0 {
                    self.runs[p].round += 1;
                    self.next_round(p);
                }
            }
            return;
        };
        let (d, task) = (r.deployment, r.task);
        self.runs[run].waiting = round.len();
        if round.is_empty() {
            self.runs[run].round += 1;
            return self.next_round(run);
        }
        for call in round {
            let v = self.m.index(call.to).unwrap();
            let here = self.groups[d].contains(v) && self.groups[d] != bit(d);
            if here {
                self.start(v, &call.rounds, d, task, Some(run));
            } else {
                let at = self.now + self.app.hop_ms;
                self.timers.push((at, Then::Arrive { parent: run, call }));
            }
        }
    }

    fn run(&mut self) {
        loop {
            // What is due now, in the order it was set.
            while let Some(k) = self.timers.iter().position(|t| t.0 <= self.now + 1e-12) {
                match self.timers.remove(k).1 {
                    Then::Rounds(run) => self.next_round(run),
                    Then::Arrive { parent, call } => {
                        let v = self.m.index(call.to).unwrap();
                        let task = self.task(v);
                        self.start(v, &call.rounds, v, task, Some(parent));
                    }
                }
            }
            // Each task's first burst runs, its pod's cores shared.
            let heads: Vec<usize> = (0..self.tasks.len())
                .filter(|&t| !self.tasks[t].queue.is_empty())
                .collect();
            if heads.is_empty() && self.timers.is_empty() {
                return;
            }
            let rate = |t: usize| {
                let pod = self.tasks[t].pod;
                let sharing = heads.iter().filter(|&&h| self.tasks[h].pod == pod).count();
                (self.cores(pod) / sharing as f64).min(1.0)
            };
            let rates: Vec<f64> = heads.iter().map(|&t| rate(t)).collect();
            let mut step = self
                .timers
                .iter()
                .map(|t| t.0 - self.now)
                .fold(f64::INFINITY, f64::min);
            for (&t, &r) in heads.iter().zip(&rates) {
                step = step.min(self.tasks[t].queue[0].1 / r);
            }
            self.now += step;
            for (&t, &r) in heads.iter().zip(&rates) {
                let head = &mut self.tasks[t].queue[0];
                head.1 -= step * r;
                if head.1 <= 1e-9 {
                    let (run, _) = self.tasks[t].queue.pop_front().unwrap();
                    self.wait(run);
                }
            }
        }
    }
}
