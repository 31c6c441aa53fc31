//! Work to do at a deadline unless cancelled first, on one thread of the
//! shim's that sleeps until the earliest: the limit of a call whose reply
//! comes from another thread, which no thread waits on. The thread wakes
//! only when a deadline passes or an earlier one is set; a cancelled
//! deadline is removed, never waited for.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

type Work = Box<dyn FnOnce() + Send>;

/// A deadline set by [`at`], to [`cancel`] it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ticket(Instant, u64);

struct Set {
    work: BTreeMap<Ticket, Work>,
    /// Until when the thread sleeps: `None` for as long as nothing is set;
    /// a time past while it is awake (it looks at the set before it
    /// sleeps again).
    asleep_until: Option<Instant>,
}

static SET: Mutex<Set> = Mutex::new(Set {
    work: BTreeMap::new(),
    asleep_until: None,
});
static CHANGED: Condvar = Condvar::new();
static NEXT: AtomicU64 = AtomicU64::new(0);

fn set() -> MutexGuard<'static, Set> {
    SET.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `work` at `when` (on the deadlines' thread), unless [`cancel`]led
/// first; `None` if the thread cannot be started.
pub fn at(when: Instant, work: Work) -> Option<Ticket> {
    if !started() {
        return None;
    }
    let ticket = Ticket(when, NEXT.fetch_add(1, Ordering::Relaxed));
    let mut set = set();
    set.work.insert(ticket, work);
    // Woken only if it would sleep past this one: with one limit for all,
    // about once a limit, not once a call.
    let wake = set.asleep_until.is_none_or(|until| when < until);
    drop(set);
    if wake {
        CHANGED.notify_one();
    }
    Some(ticket)
}

/// Removes `ticket`'s work; whether it was still to run.
pub fn cancel(ticket: Ticket) -> bool {
    set().work.remove(&ticket).is_some()
}

/// Starts the thread once; whether it runs.
fn started() -> bool {
    static RUNS: OnceLock<bool> = OnceLock::new();
    *RUNS.get_or_init(|| {
        std::thread::Builder::new()
            .name("fmerge-deadlines".into())
            .spawn(run)
            .is_ok()
    })
}

fn run() {
    crate::inproc::act_for_no_one();
    let mut set = set();
    loop {
        let now = Instant::now();
        set.asleep_until = Some(now);
        match set.work.first_key_value().map(|(t, _)| *t) {
            Some(first) if first.0 <= now => {
                let work = set.work.remove(&first);
                drop(set);
                if let Some(work) = work {
                    work();
                }
                set = self::set();
            }
            Some(first) => {
                set.asleep_until = Some(first.0);
                set = CHANGED
                    .wait_timeout(set, first.0 - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            None => {
                set.asleep_until = None;
                set = CHANGED.wait(set).unwrap_or_else(|p| p.into_inner());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn work_runs_at_its_deadline_in_order_unless_cancelled() {
        let (tx, rx) = mpsc::channel();
        let now = Instant::now();
        let mut tickets = Vec::new();
        // Set out of order; one cancelled.
        for (n, ms) in [(2, 60), (1, 30), (3, 90)] {
            let tx = tx.clone();
            let when = now + Duration::from_millis(ms);
            tickets.push(
                at(
                    when,
                    Box::new(move || tx.send((n, Instant::now() >= when)).unwrap()),
                )
                .unwrap(),
            );
        }
        assert!(cancel(tickets[2]));
        assert!(!cancel(tickets[2]), "a ticket is cancelled once");
        drop(tx);
        let ran: Vec<_> = rx.iter().collect();
        assert_eq!(ran, [(1, true), (2, true)]);
    }
}
