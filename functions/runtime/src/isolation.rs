//! The threads of the isolated callees, and the watch over them.
//!
//! Merged, a callee that blocks its thread (a `sleep`, blocking I/O) would
//! hold up the caller's own requests, which unmerged ran in another
//! process. Run on threads of its own, it only delays itself, at the cost of
//! a hop between thread pools per call. Isolated are the callees `fmerge
//! build` found blocking (marked in the table), unless `FMERGE_ISOLATE` is
//! set: then exactly the callees it lists (comma separated; empty or
//! `none`: none). `FMERGE_ISOLATE_THREADS` sets the threads per isolated
//! callee (a row of the settings table).
//!
//! A call abandoned at its `exec_timeout` whose handler blocks keeps its
//! thread until the handler returns. When every thread of a callee is held
//! so, past the deadline of the call it runs, the callee can answer nothing
//! but 504: [`stuck`] says so, `/_/ready` answers 503 (the pod leaves
//! rotation until a thread comes back), and the gauge
//! `fmerge_isolated_threads_stuck` counts them. Each thread marks, while it
//! polls a call, that call's deadline in a slot of its own: two stores per
//! poll, on isolated calls only.

use crate::Response;
use crate::callees::{self, Merged};
use std::cell::Cell;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

/// A slot's value while its thread polls a call that has no deadline.
const NO_DEADLINE: u64 = u64::MAX;

/// One isolated callee's threads.
pub(crate) struct Pool {
    name: &'static str,
    runtime: tokio::runtime::Runtime,
    /// Per thread, while it polls a call: that call's deadline (as
    /// [`crate::connections::nanos`] counts it, plus one), [`NO_DEADLINE`] without one; 0 when idle.
    slots: Box<[AtomicU64]>,
    /// Slots handed out to threads so far.
    taken: AtomicUsize,
}

fn since_origin(t: Instant) -> u64 {
    crate::connections::nanos(t.into()).min(NO_DEADLINE - 1) + 1
}

fn pools() -> &'static [Pool] {
    static POOLS: OnceLock<Vec<Pool>> = OnceLock::new();
    POOLS.get_or_init(|| {
        let merged = callees::merged();
        let (names, why): (Vec<&'static str>, &str) = match &crate::server_settings::process()
            .isolate
        {
            Some(list) => (
                list.iter()
                    .filter_map(|name| {
                        let known = merged.iter().find(|m| **m == name).copied();
                        if known.is_none() {
                            eprintln!("fmerge: FMERGE_ISOLATE names {name}, which is not merged into this binary ({}); it is ignored", merged.join(", "));
                        }
                        known
                    })
                    .collect(),
                "as FMERGE_ISOLATE says",
            ),
            None => (
                callees::callees()
                    .iter()
                    .filter(|c| c.isolate)
                    .map(|c| c.name)
                    .collect(),
                "fmerge build found they block their thread; FMERGE_ISOLATE overrides",
            ),
        };
        if names.is_empty() {
            return Vec::new();
        }
        crate::metrics::read_isolated_with(threads_stuck);
        let threads = crate::server_settings::process().isolate_threads;
        eprintln!(
            "fmerge: {} run on threads of their own ({threads} each): {why}",
            names.join(", ")
        );
        names
            .into_iter()
            .filter_map(|name| {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name(format!("fmerge-{name}"))
                    .enable_all()
                    .build()
                    .map_err(|e| eprintln!("fmerge: cannot start the isolated threads of {name}: {e}; it runs on the caller's"))
                    .ok()?;
                Some(Pool {
                    name,
                    runtime,
                    slots: (0..threads).map(|_| AtomicU64::new(0)).collect(),
                    taken: AtomicUsize::new(0),
                })
            })
            .collect()
    })
}

/// Starts the isolated callees' threads, so that the start says which.
pub(crate) fn start() {
    pools();
}

/// The threads `callee` runs on, if it is isolated.
pub(crate) fn pool(callee: &Merged) -> Option<&'static Pool> {
    pools().iter().find(|pool| pool.name == callee.name)
}

impl Pool {
    /// Runs `run` on this pool's threads, watched against `deadline` (the
    /// end of the call's own `exec_timeout`; `None`: none).
    pub(crate) fn spawn<F: Future<Output = Response> + Send + 'static>(
        &'static self,
        run: Pin<Box<F>>,
        deadline: Option<Instant>,
    ) -> tokio::task::JoinHandle<Response> {
        let deadline = deadline.map_or(NO_DEADLINE, since_origin);
        self.runtime.spawn(Watched {
            pool: self,
            deadline,
            run,
        })
    }

    /// This thread's slot in this pool, taken on its first poll (none past
    /// the pool's size: a thread tokio added, for `block_in_place`, say).
    fn slot(&'static self) -> Option<&'static AtomicU64> {
        thread_local! {
            static SLOT: Cell<Option<Option<&'static AtomicU64>>> = const { Cell::new(None) };
        }
        SLOT.with(|slot| {
            *slot.get().get_or_insert_with(|| {
                let index = self.taken.fetch_add(1, Ordering::Relaxed);
                let taken = self.slots.get(index);
                slot.set(Some(taken));
                taken
            })
        })
    }

    /// Threads polling a call past its deadline now.
    fn stuck(&self, now: u64) -> usize {
        self.slots
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .filter(|&deadline| deadline != 0 && deadline != NO_DEADLINE && deadline <= now)
            .count()
    }
}

/// A call on an isolated callee's thread, its deadline marked in the
/// thread's slot while it is polled.
struct Watched<F> {
    pool: &'static Pool,
    deadline: u64,
    run: Pin<Box<F>>,
}

impl<F: Future<Output = Response>> Future for Watched<F> {
    type Output = Response;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let slot = self.pool.slot();
        if let Some(slot) = slot {
            slot.store(self.deadline, Ordering::Relaxed);
        }
        let polled = self.run.as_mut().poll(cx);
        if let Some(slot) = slot {
            slot.store(0, Ordering::Relaxed);
        }
        polled
    }
}

/// The first isolated callee whose every thread is stuck past the deadline
/// of the call it runs, if any (see the module doc).
pub(crate) fn stuck() -> Option<&'static str> {
    let now = since_origin(Instant::now());
    pools()
        .iter()
        .find(|pool| pool.stuck(now) >= pool.slots.len())
        .map(|pool| pool.name)
}

/// Per isolated callee: its name, its threads stuck past the deadline of
/// the call they run, and its threads (the metrics read it at each scrape).
fn threads_stuck() -> Vec<(&'static str, usize, usize)> {
    let now = since_origin(Instant::now());
    pools()
        .iter()
        .map(|pool| (pool.name, pool.stuck(now), pool.slots.len()))
        .collect()
}
