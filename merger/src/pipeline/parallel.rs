//! The groups merged side by side: each on one of at most `-j` threads,
//! the largest (most bitcode) first, so that the longest never starts last.

use super::shared::{Shared, own_units, subset};
use super::{MergedGroup, Options};
use anyhow::{Result, bail};
use fmerge_cargo::emit;
use fmerge_ir as ir;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Merges the groups on `at_once` threads, the largest (most bitcode) first
/// ([`largest_first`]); the results in the groups' order. Which group runs
/// beside which changes no output.
pub(super) fn groups_largest_first<'a>(
    work: Vec<(&'a Options, Vec<ir::Rewrite>)>,
    at_once: usize,
    emitted: &emit::Emitted,
    shared: &Shared,
    merge: impl Fn((&'a Options, Vec<ir::Rewrite>)) -> Result<MergedGroup> + Sync,
) -> Vec<Result<MergedGroup>> {
    let bytes = |opts: &Options| -> u64 {
        subset(&shared.members, opts).map_or(0, |members| {
            own_units(&members, emitted)
                .units
                .iter()
                .map(|u| std::fs::metadata(&u.bitcode).map_or(0, |m| m.len()))
                .sum()
        })
    };
    let sized = work.into_iter().map(|w| (bytes(w.0), w)).collect();
    largest_first(sized, at_once, merge)
        .into_iter()
        .map(|r| r.unwrap_or_else(|| bail!("a merge thread crashed")))
        .collect()
}

/// Runs `run` on every item on up to `threads` threads, the largest (by the
/// size beside it) first so that the longest never starts last. The results
/// come in the items' order; `None` for an item whose run panicked. Every
/// item runs, whatever the others return.
pub(crate) fn largest_first<T: Send, R: Send>(
    items: Vec<(u64, T)>,
    threads: usize,
    run: impl Fn(T) -> R + Sync,
) -> Vec<Option<R>> {
    let mut order: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, (size, _))| (*size, i))
        .collect();
    order.sort_by_key(|&(size, i)| (std::cmp::Reverse(size), i));
    let slots: Vec<Mutex<Option<T>>> = items
        .into_iter()
        .map(|(_, item)| Mutex::new(Some(item)))
        .collect();
    let results: Vec<Mutex<Option<R>>> = slots.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.clamp(1, order.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    while let Some(&(_, i)) = order.get(next.fetch_add(1, Ordering::SeqCst)) {
                        // No lock is held while `run` runs, so a panic poisons none.
                        let item = slots[i].lock().expect("not poisoned").take();
                        let result = run(item.expect("each item taken once"));
                        *results[i].lock().expect("not poisoned") = Some(result);
                    }
                })
            })
            .collect();
        // Joined here, a panicked worker leaves `None` for its item instead
        // of panicking the scope.
        for worker in workers {
            let _ = worker.join();
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().ok().flatten())
        .collect()
}
