//! Members in a handler-library template (a library's `handle` that the
//! template's `main` serves with hyper), whose `handle` fmerge exports
//! (`fmerge.handle.<name>`, written by fmerge's `workspace::handle`): a
//! call to one is answered by calling that `handle`, acting for the member
//! (its environment, its rewrites), with no server of its own and no
//! socket between the stand-in and it. Where the client's connection is
//! held for answers on its own thread (the shim's `inline`), [`start`] polls
//! an async `handle` there, in the middle of the client's `send`, and what
//! it does after it first waits goes on on its runtime, the reply written
//! from there: no thread wakes for a `handle` that does not wait. Else a
//! stand-in thread calls it and waits ([`answer`]): where the connection
//! is not held, where the entry does not take it (a `handle` that is not
//! async), where fmerge found its code needs a thread of its runtime
//! (`Handle::now` is `None`), or once it held callers' threads too long.
//!
//! The reply is what its template's server would have sent and its
//! of-watchdog passed on: the status and headers `handle` gave, its body
//! with a `Content-Length` and a `Date` (as hyper's server adds them),
//! of-watchdog's `X-Duration-Seconds`; a `handle`
//! that panics is of-watchdog's empty 500 (its server's connection closed
//! without a reply), one past the member's `exec_timeout` (or a shorter
//! `X-Timeout`) its empty 504, while `handle` goes on, as it would behind
//! its server (a `handle` ready at its first poll but past its limit by
//! then: the same 504, sent when it is ready).
//!
//! Where `handle` has a shape the entry does not take (its `.shape` says
//! 0), the member's server is started as for any member that serves HTTP
//! ([`crate::servers`]).

use std::cell::RefCell;
use std::ffi::c_void;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::http::Request;
use crate::inproc::Scope;
use crate::{Handle, Member, deadlines, servers};

/// `member`'s `handle` entry, if it has one that takes its `handle`'s shape.
pub fn handled(member: &Member) -> Option<&Handle> {
    let handle = member.handle.as_ref()?;
    handle.takes_its_shape().then_some(handle)
}

/// What [`crate::HandleReply`] was given.
type Got = Option<(u16, Vec<u8>, Vec<u8>)>;

/// The `n` bytes an entry gave at `p`.
///
/// # Safety
/// The entry's promise: `p` is valid for `n` bytes of reads during the
/// callback that got them.
unsafe fn given<'a>(p: *const u8, n: usize) -> &'a [u8] {
    match n {
        0 => &[],
        // SAFETY: the caller's promise.
        _ => unsafe { std::slice::from_raw_parts(p, n) },
    }
}

unsafe extern "C" fn take(
    ctx: *mut c_void,
    status: u16,
    head: *const u8,
    head_len: usize,
    body: *const u8,
    body_len: usize,
) {
    // SAFETY: the entry's promise, for the call.
    let (head, body) = unsafe { (given(head, head_len), given(body, body_len)) };
    // SAFETY: `ctx` is the `Got` of `answer`, alive during the call.
    let got = unsafe { &mut *(ctx as *mut Got) };
    *got = Some((status, head.to_vec(), body.to_vec()));
}

/// `req`'s headers as `Name: value\r\n` lines, as the entry takes them.
fn header_lines(req: &Request) -> Vec<u8> {
    let mut headers = Vec::new();
    for (k, v) in &req.headers {
        headers.extend_from_slice(k.as_bytes());
        headers.extend_from_slice(b": ");
        headers.extend_from_slice(v.as_bytes());
        headers.extend_from_slice(b"\r\n");
    }
    headers
}

/// Answers `req`, a call to `member` through the gateway, with `call`, its
/// `handle` entry; whether the client connection can stay open.
pub fn answer(
    member: &Member,
    handle: &Handle,
    req: &Request,
    client: &mut dyn Write,
) -> io::Result<bool> {
    let started = Instant::now();
    let limit = servers::limit(member, req);
    let target = servers::target_received(req);
    let headers = header_lines(req);
    let limit_ms = match limit {
        // A limit under a millisecond is one millisecond, not none.
        Some(l) => u64::try_from(l.as_millis()).unwrap_or(u64::MAX).max(1),
        None => 0,
    };
    let mut got: Got = None;
    let code = {
        let _acting = Scope::enter(crate::member::resident(member.name).serving(member.name));
        // SAFETY: the entry fmerge generated, with pointers valid for the
        // call and `take`, which reads them as `HandleReply` promises.
        unsafe {
            (handle.call)(
                req.method.as_ptr(),
                req.method.len(),
                target.as_ptr(),
                target.len(),
                headers.as_ptr(),
                headers.len(),
                req.body.as_ptr(),
                req.body.len(),
                limit_ms,
                (&mut got as *mut Got).cast(),
                take,
            )
        }
    };
    let (status, head, body) = match (code, got) {
        (0, Some(reply)) => reply,
        (2, _) => {
            killed(member, limit);
            return servers::empty(client, 504, started);
        }
        _ => return servers::empty(client, 500, started),
    };
    client.write_all(&replied(status, &head, &body, &req.method, started))?;
    client.flush()?;
    Ok(true)
}

/// Says that `member`'s `handle` went past its limit, as of-watchdog does.
fn killed(member: &Member, limit: Option<Duration>) {
    eprintln!(
        "fmerge: {} killed due to exec_timeout: {:?}",
        member.name,
        limit.unwrap_or_default()
    );
}

/// The reply `handle` gave (its status, header lines and body), as its
/// template's server would have sent it and its of-watchdog passed it on.
fn replied(status: u16, head: &[u8], body: &[u8], method: &str, started: Instant) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", crate::http::reason(status)).into_bytes();
    let has = |name: &[u8]| {
        head.split(|&b| b == b'\n')
            .any(|l| l.len() > name.len() && l[..name.len()].eq_ignore_ascii_case(name))
    };
    let (has_length, has_date) = (has(b"content-length:"), has(b"date:"));
    out.extend_from_slice(head);
    // What the template's hyper server adds to a whole reply.
    if !has_length {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    if !has_date {
        let now = crate::http::date(std::time::SystemTime::now());
        out.extend_from_slice(format!("Date: {now}\r\n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "X-Duration-Seconds: {:.6}\r\n\r\n",
            started.elapsed().as_secs_f64()
        )
        .as_bytes(),
    );
    if !method.eq_ignore_ascii_case("HEAD") {
        out.extend_from_slice(body);
    }
    out
}

/// of-watchdog's empty reply with `status`, as bytes.
fn empty(status: u16, started: Instant) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = servers::empty(&mut out, status, started);
    out
}

/// What [`start`] made of a call.
pub enum Started {
    /// The whole reply: `handle` was ready at its first poll, or failed.
    Reply(Vec<u8>),
    /// `handle` goes on, on its runtime: its reply, or the 504 of its limit,
    /// goes where [`Later::then`] says.
    Later(Later),
    /// Not started: [`answer`] it on a thread that may wait.
    NotHere,
}

/// A call [`start`] left running.
pub struct Later(Arc<Pending>);

/// Where the reply to a call that went on goes, from the thread it comes on.
pub type Then = Box<dyn FnOnce(Vec<u8>) + Send>;

/// A call started by [`start`], shared by the caller, the entry's `done`
/// and the deadline of its limit; the first reply given is the one.
struct Pending {
    member: &'static Member,
    method: String,
    started: Instant,
    limit: Option<Duration>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The reply, given before anyone asked for it.
    reply: Option<Vec<u8>>,
    /// Where the reply goes once given.
    then: Option<Then>,
    /// A reply was given: any other is dropped.
    answered: bool,
    /// The limit's deadline, cancelled by the reply.
    deadline: Option<deadlines::Ticket>,
}

impl Pending {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives the reply `make` makes, unless one was given already (then
    /// `make` is not called: a reply past the limit's 504 says nothing).
    fn give(&self, make: impl FnOnce() -> Vec<u8>) {
        let mut state = self.state();
        if std::mem::replace(&mut state.answered, true) {
            return;
        }
        let bytes = make();
        if let Some(ticket) = state.deadline.take() {
            deadlines::cancel(ticket);
        }
        match state.then.take() {
            Some(then) => {
                drop(state);
                then(bytes);
            }
            None => state.reply = Some(bytes),
        }
    }
}

impl Later {
    /// Sends the reply to `then`: at once, on this thread, if it is there
    /// already, else on the thread that gives it.
    pub fn then(self, then: Then) {
        let mut state = self.0.state();
        match state.reply.take() {
            Some(bytes) => {
                drop(state);
                then(bytes);
            }
            None => state.then = Some(then),
        }
    }
}

/// A member whose latest [`start`]s kept the calling thread longer than
/// [`FIRST_POLL_AT_MOST`] ([`kept_for`]): from [`SLOW_IN_A_ROW`] in a row
/// on, its calls go to a stand-in thread, so that a `handle` that blocks
/// its thread before it first waits does not hold callers' threads; a
/// one-off (its runtime made at the first call) does not count. One call a
/// [`TRY_AGAIN_AFTER`] is started on its caller's thread again, and a quick
/// one brings the member back: a burst of load that preempted three starts
/// in a row must not cost every later call the stand-in's hand-offs.
struct Slow {
    member: &'static str,
    in_a_row: u32,
    /// When the latest slow start, or the latest try, began.
    last: Instant,
}

static SLOW: Mutex<Vec<Slow>> = Mutex::new(Vec::new());
/// About what the hop to a stand-in thread costs.
const FIRST_POLL_AT_MOST: Duration = Duration::from_millis(1);
const SLOW_IN_A_ROW: u32 = 3;
const TRY_AGAIN_AFTER: Duration = Duration::from_secs(1);

fn slow() -> MutexGuard<'static, Vec<Slow>> {
    SLOW.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `member`'s call at `now` is left to a stand-in thread (the
/// call that comes once [`TRY_AGAIN_AFTER`] has passed is not: it is the
/// try, and the calls after it wait for the next).
fn too_slow(member: &str, now: Instant) -> bool {
    let mut slow = slow();
    let Some(s) = slow.iter_mut().find(|s| s.member == member) else {
        return false;
    };
    if s.in_a_row < SLOW_IN_A_ROW {
        return false;
    }
    if now.saturating_duration_since(s.last) < TRY_AGAIN_AFTER {
        return true;
    }
    s.last = now;
    false
}

/// How long a start that took `took` kept its thread, on a CPU or asleep:
/// less the time the thread waited for a CPU meanwhile (the kernel's count,
/// `waited_before` read as the start began), where the kernel tells. On a
/// machine short of CPU every start is preempted now and then; a stand-in
/// thread would not spare the caller that, and its hand-offs cost CPU the
/// machine lacks.
fn kept_for(took: Duration, waited_before: Option<u64>) -> Duration {
    if took <= FIRST_POLL_AT_MOST {
        return took;
    }
    match (waited_before, waited_for_cpu_ns()) {
        (Some(before), Some(after)) if schedstat_is_this_threads() => {
            took.saturating_sub(Duration::from_nanos(after.saturating_sub(before)))
        }
        _ => took,
    }
}

thread_local! {
    /// This thread's `/proc/thread-self/schedstat`, kept open (one read a
    /// start), and the process that opened it: a process forked from this
    /// thread inherits the file, which still counts the parent's thread.
    static SCHEDSTAT: RefCell<Option<Option<(File, u32)>>> = const { RefCell::new(None) };
}

/// The nanoseconds this thread has spent ready to run but waiting for a
/// CPU (the schedstat file's second field), if the kernel keeps the count.
fn waited_for_cpu_ns() -> Option<u64> {
    SCHEDSTAT
        .try_with(|file| {
            let mut file = file.borrow_mut();
            let (file, _) = file
                .get_or_insert_with(|| {
                    let file = File::open("/proc/thread-self/schedstat").ok()?;
                    Some((file, std::process::id()))
                })
                .as_ref()?;
            let mut buf = [0u8; 80];
            let n = file.read_at(&mut buf, 0).ok()?;
            let text = std::str::from_utf8(&buf[..n]).ok()?;
            text.split_ascii_whitespace().nth(1)?.parse().ok()
        })
        .ok()
        .flatten()
}

/// Whether the schedstat file this thread reads is its own (checked only
/// for a start that took long: it costs a call into the kernel). Not in a
/// process forked from the thread that opened it: the file is let go, to
/// be opened again by the next start.
fn schedstat_is_this_threads() -> bool {
    SCHEDSTAT
        .try_with(|file| {
            let mut file = file.borrow_mut();
            let ours = matches!(&*file, Some(Some((_, pid))) if *pid == std::process::id());
            if !ours {
                *file = None;
            }
            ours
        })
        .unwrap_or(false)
}

/// Counts a start of `member` that began at `at` and kept its thread `took`.
fn count_start(member: &'static str, at: Instant, took: Duration) {
    let mut slow = slow();
    let i = slow.iter().position(|s| s.member == member);
    match (i, took > FIRST_POLL_AT_MOST) {
        (Some(i), true) => {
            slow[i].in_a_row += 1;
            slow[i].last = at;
        }
        (None, true) => slow.push(Slow {
            member,
            in_a_row: 1,
            last: at,
        }),
        (Some(i), false) => drop(slow.swap_remove(i)),
        (None, false) => {}
    }
}

/// Starts `req`, a call to `member` through the gateway, with `handle`'s
/// entry ([`crate::HandleNow`]) on the calling thread, acting for the
/// member: what `handle` does before it first waits runs here, the rest on
/// its runtime. It never waits for `handle`.
pub fn start(member: &'static Member, handle: &Handle, req: &Request) -> Started {
    let started = Instant::now();
    let Some(now) = handle.now.filter(|_| !too_slow(member.name, started)) else {
        return Started::NotHere;
    };
    let waited_before = waited_for_cpu_ns();
    let pending = Arc::new(Pending {
        member,
        method: req.method.clone(),
        started,
        limit: servers::limit(member, req),
        state: Mutex::default(),
    });
    let target = servers::target_received(req);
    let headers = header_lines(req);
    let ctx = Arc::into_raw(Arc::clone(&pending)) as *mut c_void;
    let code = {
        let _acting = Scope::enter(crate::member::resident(member.name).serving(member.name));
        // SAFETY: the entry fmerge generated, with pointers valid for the
        // call; `done` takes back the count `ctx` holds.
        unsafe {
            now(
                req.method.as_ptr(),
                req.method.len(),
                target.as_ptr(),
                target.len(),
                headers.as_ptr(),
                headers.len(),
                req.body.as_ptr(),
                req.body.len(),
                ctx,
                done,
            )
        }
    };
    count_start(
        member.name,
        started,
        kept_for(started.elapsed(), waited_before),
    );
    match code {
        0 => match pending.state().reply.take() {
            Some(bytes) => Started::Reply(bytes),
            None => Started::Reply(empty(500, started)),
        },
        1 => {
            if let Some(limit) = pending.limit {
                let timed = Arc::clone(&pending);
                let past = move || {
                    timed.give(|| {
                        killed(timed.member, timed.limit);
                        empty(504, timed.started)
                    })
                };
                let ticket = deadlines::at(started + limit, Box::new(past));
                let mut state = pending.state();
                match ticket {
                    Some(t) if state.answered => drop(deadlines::cancel(t)),
                    t => state.deadline = t,
                }
            }
            Started::Later(Later(pending))
        }
        _ => {
            // SAFETY: `done` was not called and never will be: the count
            // given to the entry comes back here.
            drop(unsafe { Arc::from_raw(ctx as *const Pending) });
            Started::NotHere
        }
    }
}

/// The entry's [`crate::HandleDone`] for [`start`].
unsafe extern "C" fn done(
    ctx: *mut c_void,
    code: i32,
    status: u16,
    head: *const u8,
    head_len: usize,
    body: *const u8,
    body_len: usize,
) {
    // SAFETY: the count [`start`] gave the entry, given back once.
    let pending = unsafe { Arc::from_raw(ctx as *const Pending) };
    // SAFETY: the entry's promise, for the call.
    let (head, body) = unsafe { (given(head, head_len), given(body, body_len)) };
    let p = &*pending;
    p.give(|| match code {
        0 if p.limit.is_some_and(|l| p.started.elapsed() > l) => {
            killed(p.member, p.limit);
            empty(504, p.started)
        }
        0 => replied(status, head, body, &p.method, p.started),
        _ => empty(500, p.started),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW_START: Duration = Duration::from_millis(5);
    const QUICK_START: Duration = Duration::from_micros(10);

    #[test]
    fn a_member_slow_to_start_three_times_in_a_row_is_tried_again_a_second_later() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let m = "slow-then-quick";
        for i in 0..3 {
            assert!(!too_slow(m, at(i)), "start {i}");
            count_start(m, at(i), SLOW_START);
        }
        assert!(too_slow(m, at(10)));
        assert!(too_slow(m, at(900)));
        // The try, then the calls beside it still on a stand-in.
        assert!(!too_slow(m, at(1100)));
        assert!(too_slow(m, at(1101)));
        // A quick try brings it back.
        count_start(m, at(1100), QUICK_START);
        assert!(!too_slow(m, at(1102)));
    }

    #[test]
    fn a_start_keeps_its_thread_while_asleep_not_while_waiting_for_a_cpu() {
        use std::sync::atomic::{AtomicBool, Ordering};
        unsafe extern "C" {
            fn sched_getaffinity(pid: i32, size: usize, mask: *mut u64) -> i32;
            fn sched_setaffinity(pid: i32, size: usize, mask: *const u64) -> i32;
        }
        // This thread and a spinner on one CPU (the first this test may
        // use): each waits for the other about half the time.
        let mut mask = 0u64;
        // SAFETY: a mask of 8 bytes, as said.
        assert_eq!(unsafe { sched_getaffinity(0, 8, &mut mask) }, 0);
        let one_cpu = 1u64 << mask.trailing_zeros();
        // SAFETY: a mask of 8 bytes, as said.
        let pin = move || unsafe { sched_setaffinity(0, 8, &one_cpu) } == 0;
        assert!(pin(), "cannot pin this thread to one CPU");
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                assert!(pin());
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let before = waited_for_cpu_ns().expect("the kernel counts a thread's wait for a CPU");
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(60) {
            std::hint::spin_loop();
        }
        let took = t0.elapsed();
        let kept = kept_for(took, Some(before));
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        assert!(
            kept + Duration::from_millis(10) <= took,
            "preempted: kept {kept:?} of {took:?}"
        );
        // Asleep, nothing else to run here: all of it kept.
        let before = waited_for_cpu_ns();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let took = t0.elapsed();
        let kept = kept_for(took, before);
        assert!(
            kept >= Duration::from_millis(15),
            "asleep: kept {kept:?} of {took:?}"
        );
    }

    #[test]
    fn a_process_forked_from_a_thread_does_not_count_that_threads_wait() {
        use crate::sys::{_exit, fork, waitpid};
        assert!(
            waited_for_cpu_ns().is_some(),
            "the kernel counts a thread's wait for a CPU"
        );
        assert!(schedstat_is_this_threads());
        // SAFETY: the child only opens and reads a file, then `_exit`s.
        let child = unsafe { fork() };
        assert!(child >= 0, "cannot fork");
        if child == 0 {
            let inherited = schedstat_is_this_threads();
            let its_own = waited_for_cpu_ns().is_some() && schedstat_is_this_threads();
            // SAFETY: ends the child here.
            unsafe { _exit(i32::from(inherited) * 2 + i32::from(!its_own)) }
        }
        let mut status = 0;
        // SAFETY: this test's child.
        assert_eq!(unsafe { waitpid(child, &mut status, 0) }, child);
        assert_eq!(
            status,
            0,
            "the child's exit {} (2: it took its parent thread's file as its own; 1: it did not open its own)",
            status >> 8
        );
    }

    #[test]
    fn a_slow_try_waits_another_second_and_a_one_off_never_counts() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let m = "slow-for-good";
        for i in 0..3 {
            count_start(m, at(i), SLOW_START);
        }
        assert!(!too_slow(m, at(1002)));
        count_start(m, at(1002), SLOW_START);
        assert!(too_slow(m, at(1500)));
        assert!(too_slow(m, at(2001)));
        assert!(!too_slow(m, at(2003)));
        let once = "slow-once";
        count_start(once, at(0), SLOW_START);
        count_start(once, at(1), QUICK_START);
        count_start(once, at(2), SLOW_START);
        count_start(once, at(3), SLOW_START);
        assert!(!too_slow(once, at(4)));
    }
}
