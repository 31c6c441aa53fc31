//! Each `invoke`'s start and end as its caller saw it, kept for `fmerge
//! graph --calls` to read which calls of one handler request ran at once
//! and which one after another (the order the source scan cannot place),
//! with the request whose call started that handler request (its parent:
//! a calling function sends its request's id as `X-Fmerge-Request`, and an
//! in-process call knows it), from which the planner takes rates per call
//! path.
//!
//! Off unless `FMERGE_CALL_LOG=<records>` is set. On, the records go to a
//! ring of that many in memory (the oldest dropped first, so that no
//! traffic can grow it), `GET :<metrics_port>/calls` reads them and a
//! `POST` signed with the application's key takes them out (see
//! `metrics_port`): no file, no syscall per call, and a read-only
//! container needs no volume. Off, a call costs one load of an unset `OnceLock`.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// A callee name longer than this is recorded as [`crate::metrics::OTHER`].
const MAX_NAME: usize = 255;
/// The first line of `GET /calls`: the columns, for whoever reads it.
pub(crate) const HEADER: &str = "# fmerge calls: request caller callee start_us end_us parent";
/// The longest request id taken from a caller's `X-Fmerge-Request` (this
/// log's own are about 30 bytes).
const MAX_ID: usize = 64;

#[derive(Clone)]
struct LoggedCall {
    request: u64,
    /// The request whose call started `request` (`None`: from outside).
    parent: Option<Arc<str>>,
    caller: String,
    callee: String,
    start_us: u64,
    end_us: u64,
}

struct Log {
    capacity: usize,
    records: Mutex<VecDeque<LoggedCall>>,
    dropped: AtomicU64,
    /// Where this process's microseconds count from.
    origin: Instant,
    /// Names this process's requests apart from another process's in one
    /// file: its pid and the time it turned the log on.
    process: String,
    next_request: AtomicU64,
}

static LOG: OnceLock<Log> = OnceLock::new();

/// Turns recording on with room for `capacity` records (`serve` does, from
/// the setting).
pub(crate) fn enable(capacity: usize) {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    LOG.get_or_init(|| Log {
        capacity,
        records: Mutex::new(VecDeque::with_capacity(capacity.min(1024))),
        dropped: AtomicU64::new(0),
        origin: Instant::now(),
        process: format!("{:x}-{since_epoch:x}", std::process::id()),
        next_request: AtomicU64::new(1),
    });
}

pub(crate) fn enabled() -> bool {
    LOG.get().is_some()
}

/// A new handler request's number, 0 when recording is off.
pub(crate) fn next_request() -> u64 {
    LOG.get()
        .map_or(0, |log| log.next_request.fetch_add(1, Ordering::Relaxed))
}

/// Request `request`'s id as records and other processes' logs name it
/// (`<process>.<number>`), if the log is on and it is one.
pub(crate) fn request_id(request: u64) -> Option<String> {
    let log = LOG.get()?;
    (request != 0).then(|| format!("{}.{request}", log.process))
}

/// Whether `id`, a calling request's id from a header, can be logged as
/// one word: short, and only the characters ids are made of.
pub(crate) fn valid_id(id: &[u8]) -> bool {
    (1..=MAX_ID).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// Records one call of `callee` made by request `request` of `caller`
/// (itself started by the call of request `parent`, `None` from outside),
/// from `start` to `end`. A call outside a handler request (a spawned
/// task: `request` 0) cannot be grouped and is not recorded.
pub(crate) fn record(
    request: u64,
    parent: Option<Arc<str>>,
    caller: &str,
    callee: &str,
    start: Instant,
    end: Instant,
) {
    let Some(log) = LOG.get() else { return };
    if request == 0 || log.capacity == 0 {
        return;
    }
    // One word each, so that a record stays one line of five columns.
    let word = |name: String| {
        if name.is_empty() || name.len() > MAX_NAME || name.contains(char::is_whitespace) {
            crate::metrics::OTHER.to_string()
        } else {
            name
        }
    };
    let callee = word(crate::metrics::callee_label(callee).to_string());
    let us = |t: Instant| t.saturating_duration_since(log.origin).as_micros() as u64;
    let record = LoggedCall {
        request,
        parent,
        caller: word(caller.to_string()),
        callee,
        start_us: us(start),
        end_us: us(end),
    };
    let mut records = log.records.lock().unwrap_or_else(|e| e.into_inner());
    if records.len() >= log.capacity {
        records.pop_front();
        log.dropped.fetch_add(1, Ordering::Relaxed);
    }
    records.push_back(record);
}

/// The records kept so far, one line each after [`HEADER`], taken out with
/// `take` (each is then served once); `None` when recording is off.
pub(crate) fn read(take: bool) -> Option<String> {
    let log = LOG.get()?;
    let mut kept = log.records.lock().unwrap_or_else(|e| e.into_inner());
    let (records, dropped) = if take {
        let dropped = log.dropped.swap(0, Ordering::Relaxed);
        (std::mem::take(&mut *kept), dropped)
    } else {
        (kept.clone(), log.dropped.load(Ordering::Relaxed))
    };
    drop(kept);
    let mut text = format!("{HEADER}\n");
    if dropped > 0 {
        let _ = writeln!(
            text,
            "# {dropped} older records dropped: the ring (FMERGE_CALL_LOG={}) filled between two reads",
            log.capacity
        );
    }
    for r in records {
        let _ = writeln!(
            text,
            "{}.{} {} {} {} {} {}",
            log.process,
            r.request,
            r.caller,
            r.callee,
            r.start_us,
            r.end_us,
            r.parent.as_deref().unwrap_or("-")
        );
    }
    Some(text)
}
