//! A member run in this process, on a thread, where fmerge found nothing in
//! its code that needs a process of its own (the build's verdict, given as
//! [`Member::run`](crate::Member::run)): no process start, no fork, only
//! the member's own work.
//!
//! A member is a whole program, so the thread gives it what its own process
//! gave it, per thread, through the C symbols the `interpose` module defines
//! in place of libc's:
//! - **stdin and stdout**: `read`/`readv` of descriptor 0 read the call's
//!   body, `write`/`writev` of descriptor 1 append to the reply. std's
//!   buffers of both are global, so the thread first hands back to its owner
//!   what another reader left in std's stdin buffer and flushes what another
//!   writer left in std's stdout buffer, and at the end flushes the member's
//!   own output and drops what it left unread;
//! - **its environment**: `getenv` (and `secure_getenv`) answer from the
//!   member's environment, as its process would have had it;
//! - **its rewrites** (data stores, secrets: [`crate::rewrite`]);
//! - threads it starts (`pthread_create`) inherit all of it, so a client's
//!   own threads (libcurl's resolver, reqwest's runtime) act for it too.
//!
//! Its exit code is its `main`'s, as std's runtime maps it; a panic unwinds
//! out of the entry and counts as exit code 101, as std's runtime has it,
//! with the message from a thread named `main`. What fmerge checks in the
//! IR before it gives a member an entry (no `process::exit`, no environment
//! writes or `environ` reads, no threads of its own code left running, no
//! mutable statics in the team's crates, no stdio lock held across a call)
//! is what this module relies on; the `exec_timeout` rule is checked here
//! ([`fits`]).

use std::cell::Cell;
use std::ffi::{CStr, CString, OsStr, c_char};
use std::io::{BufRead, Write};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use crate::rewrite::{self, Active};

/// The stack a member's `main` gets: the usual main-thread limit (8 MiB),
/// not std's 2 MiB for spawned threads.
const STACK: usize = 8 << 20;

/// What a member run in this process has of its own.
pub struct Context {
    /// Its OpenFaaS name.
    pub name: String,
    stdin: Mutex<Input>,
    stdout: Mutex<Vec<u8>>,
    /// `KEY=VALUE`, later entries winning, in two parts: what every call
    /// to the member has (the member module makes it once) and the call's
    /// own variables. Leaked, because C code may keep the pointers `getenv`
    /// returns (the process ends with its request).
    env: [&'static [&'static CStr]; 2],
    /// Its rewrites, if it has any.
    pub rewrites: Option<Active>,
    /// Whether a panic of it printed std's backtrace note ([`install_panic_note`]).
    noted: AtomicBool,
    /// Whether it serves HTTP itself ([`serve`]): its stdin and stdout are
    /// the process's, as of-watchdog's `http` mode gives its process the
    /// watchdog's own, not a call's.
    serves: bool,
}

/// A member's stdin: the call's body, opened once std's buffer holds
/// nothing of another reader's.
struct Input {
    body: Vec<u8>,
    at: usize,
    open: bool,
}

thread_local! {
    /// The member this thread acts for; null for the caller's threads.
    static CURRENT: Cell<*const Context> = const { Cell::new(std::ptr::null()) };
    /// How many members' `main`s this thread is running ([`run`]).
    static RUNNING: Cell<u32> = const { Cell::new(0) };
    /// Whether this is the process's main thread, once asked.
    static MAIN: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Whether a member may be run on the current thread, in the middle of a
/// call it makes: the process's main thread, or one running a member's
/// `main`. Both are threads whose `main` is a whole program's, with the
/// main thread's stack, its name and nothing else on them, as a member's
/// own process had; a thread the program started (a client's runtime, a
/// worker) may be in the middle of anything.
pub fn may_run_here() -> bool {
    let main = || {
        MAIN.try_with(|m| {
            // SAFETY: neither takes arguments or fails.
            let main = m
                .get()
                .unwrap_or_else(|| unsafe { crate::sys::gettid() == crate::sys::getpid() });
            m.set(Some(main));
            main
        })
        .unwrap_or(false)
    };
    RUNNING.try_with(Cell::get).unwrap_or(0) > 0 || main()
}

/// The member the current thread acts for, if any.
pub fn current() -> Option<Arc<Context>> {
    let ptr = CURRENT.try_with(Cell::get).ok()?;
    if ptr.is_null() {
        return None;
    }
    // SAFETY: a thread's pointer comes from an `Arc` that thread holds a
    // count of while the pointer is set ([`Scope`]).
    unsafe {
        Arc::increment_strong_count(ptr);
        Some(Arc::from_raw(ptr))
    }
}

/// Calls `f` with the current thread's member, without touching counts:
/// for the C symbols, which run often.
pub fn with_current<T>(f: impl FnOnce(Option<&Context>) -> T) -> T {
    let ptr = CURRENT.try_with(Cell::get).unwrap_or(std::ptr::null());
    // SAFETY: as in `current`, the thread holds a count while it is set.
    f(unsafe { ptr.as_ref() })
}

/// Sets the current thread's member until dropped (holding a count of it).
pub struct Scope {
    /// The count of the member this scope holds while it is current.
    _held: Arc<Context>,
    before: *const Context,
    rewrites_before: rewrite::OnThread,
}

impl Scope {
    pub fn enter(ctx: Arc<Context>) -> Scope {
        let before = CURRENT.with(|c| c.replace(Arc::as_ptr(&ctx)));
        let rewrites = ctx
            .rewrites
            .as_ref()
            .map_or(std::ptr::null(), |r| r as *const Active);
        let rewrites_before = rewrite::set_on_thread(rewrite::OnThread::Member(rewrites));
        Scope {
            _held: ctx,
            before,
            rewrites_before,
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        rewrite::set_on_thread(self.rewrites_before);
        let _ = CURRENT.try_with(|c| c.set(self.before));
    }
}

/// Makes the current thread act for no member, for the rest of its life:
/// for threads of the shim's own that a member's thread started.
pub fn act_for_no_one() {
    let _ = CURRENT.try_with(|c| c.set(std::ptr::null()));
    rewrite::set_on_thread(rewrite::OnThread::Process);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Who filled std's stdin buffer last: the process's own stdin (`None`) or
/// a member's body. Whatever that buffer still holds came from that read.
static LAST_FILL: Mutex<Option<Weak<Context>>> = Mutex::new(None);
/// Bytes of the process's own stdin taken back from std's buffer before a
/// member ran: the caller's next reads get them first.
static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static ANY_PENDING: AtomicBool = AtomicBool::new(false);

impl Context {
    /// Reads the member's stdin into `buf`: nothing until it is open
    /// (std's buffer is being emptied for it), then its body.
    fn read(&self, buf: &mut [u8]) -> usize {
        let mut input = lock(&self.stdin);
        if !input.open {
            return 0;
        }
        let n = buf.len().min(input.body.len() - input.at);
        buf[..n].copy_from_slice(&input.body[input.at..input.at + n]);
        input.at += n;
        n
    }

    /// Puts `bytes`, the end of what the member last read, back in front.
    fn unread(&self, bytes: usize) {
        let mut input = lock(&self.stdin);
        input.at = input.at.saturating_sub(bytes);
    }
}

/// `read` of descriptor 0 on the current thread, if this module answers it:
/// the member's body, or the caller's bytes taken back from std's buffer.
pub fn read_stdin(buf: &mut [u8]) -> Option<usize> {
    with_current(|ctx| match ctx {
        Some(ctx) if ctx.serves => None,
        Some(ctx) => {
            let n = ctx.read(buf);
            if n > 0 {
                note_fill(current().as_ref().map(Arc::downgrade));
            }
            Some(n)
        }
        None => {
            if !ANY_PENDING.load(Ordering::Acquire) {
                note_fill(None);
                return None;
            }
            let mut pending = lock(&PENDING);
            let n = buf.len().min(pending.len());
            buf[..n].copy_from_slice(&pending[..n]);
            pending.drain(..n);
            ANY_PENDING.store(!pending.is_empty(), Ordering::Release);
            (n > 0).then_some(n)
        }
    })
}

fn note_fill(owner: Option<Weak<Context>>) {
    *lock(&LAST_FILL) = owner;
}

/// `write` of descriptor 1 on the current thread, if it acts for a member:
/// appended to its reply.
pub fn write_stdout(buf: &[u8]) -> Option<usize> {
    with_current(|ctx| {
        let ctx = ctx.filter(|c| !c.serves)?;
        lock(&ctx.stdout).extend_from_slice(buf);
        Some(buf.len())
    })
}

/// `getenv` on the current thread, if it acts for a member: its own
/// environment's value (`Some(null)` when it has none).
pub fn getenv(name: &CStr) -> Option<*const c_char> {
    with_current(|ctx| {
        let ctx = ctx?;
        let name = name.to_bytes();
        let found = ctx
            .env
            .iter()
            .rev()
            .flat_map(|part| part.iter().rev())
            .find_map(|kv| {
                let kv = kv.to_bytes_with_nul();
                (kv.len() > name.len() && kv.starts_with(name) && kv[name.len()] == b'=')
                    .then(|| kv[name.len() + 1..].as_ptr() as *const c_char)
            });
        Some(found.unwrap_or(std::ptr::null()))
    })
}

/// Flushes std's stdout on the current thread if it acts for a member:
/// before one of its calls, so that a line it has not ended yet is its own
/// and not the next member's.
pub fn flush_own_stdout() {
    if with_current(|ctx| ctx.is_some()) {
        let _ = std::io::stdout().flush();
    }
}

/// What std's panic hook prints after the first panic of a process when
/// backtraces are off (std 1.95's wording).
const BACKTRACE_NOTE: &str =
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
/// Whether std printed [`BACKTRACE_NOTE`] in this process yet.
static STD_NOTED: AtomicBool = AtomicBool::new(false);
/// Whether a panic of the caller's own threads printed it.
static CALLER_NOTED: AtomicBool = AtomicBool::new(false);

/// Puts a hook around std's panic hook so that the backtrace note std
/// prints once per process is printed once per member run here too, as
/// each had a process of its own: the caller's first panic may come after
/// a member's. Called before `main`, so that it sees every panic.
pub fn install_panic_note() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        // std's rule, read as std reads it (`RUST_BACKTRACE` unset or 0).
        let off = std::env::var_os("RUST_BACKTRACE").is_none_or(|v| v == "0");
        if !off {
            return;
        }
        let std_printed = !STD_NOTED.swap(true, Ordering::Relaxed);
        let first = with_current(|ctx| match ctx {
            Some(ctx) => !ctx.noted.swap(true, Ordering::Relaxed),
            None => !CALLER_NOTED.swap(true, Ordering::Relaxed),
        });
        if first && !std_printed {
            let _ = std::io::stderr().write_all(BACKTRACE_NOTE.as_bytes());
        }
    }));
}

/// The `exec_timeout` rule: a member may run in this process only if this
/// process ends before the member's own watchdog would have killed it,
/// since a thread cannot be killed. `member` is the member's limit, `own`
/// this process's (`None`: no limit).
pub fn fits(member: Option<Duration>, own: Option<Duration>) -> bool {
    match (member, own) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(m), Some(o)) => m >= o,
    }
}

/// A thread that may run members ([`run`]): named `main`, the name std's
/// panic message gives, as the member's own process's thread was, with the
/// usual main-thread stack (8 MiB) rather than std's 2 MiB for threads.
pub fn thread() -> std::thread::Builder {
    std::thread::Builder::new()
        .name("main".into())
        .stack_size(STACK)
}

/// `env` as C strings `KEY=VALUE`, leaked (see [`Context`]).
pub fn c_env<K: AsRef<OsStr>, V: AsRef<OsStr>>(
    env: impl IntoIterator<Item = (K, V)>,
) -> &'static [&'static CStr] {
    let env: Vec<&'static CStr> = env
        .into_iter()
        .filter_map(|(k, v)| {
            let mut kv = k.as_ref().as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_ref().as_bytes());
            CString::new(kv)
                .ok()
                .map(|c| &*Box::leak(c.into_boxed_c_str()))
        })
        .collect();
    Box::leak(env.into_boxed_slice())
}

/// Runs `entry`, member `name`'s `main`, on this thread with `body` as its
/// stdin and `own` ([`c_env`]) then `call_vars` as its environment; what it
/// wrote to stdout, and its exit code.
pub fn run(
    name: &str,
    entry: unsafe extern "C-unwind" fn() -> i32,
    body: &[u8],
    own: &'static [&'static CStr],
    call_vars: Vec<(String, String)>,
) -> (Vec<u8>, i32) {
    let ctx = Arc::new(Context {
        name: name.to_string(),
        stdin: Mutex::new(Input {
            body: body.to_vec(),
            at: 0,
            open: false,
        }),
        stdout: Mutex::new(Vec::new()),
        env: [own, c_env(call_vars)],
        rewrites: rewrite::active_for(name, crate::rewrites()),
        noted: AtomicBool::new(false),
        serves: false,
    });
    // What another writer left in std's stdout buffer is its own: written
    // out before this thread acts for the member.
    let _ = std::io::stdout().flush();
    let scope = Scope::enter(Arc::clone(&ctx));
    give_back_stdin(&ctx);
    lock(&ctx.stdin).open = true;
    RUNNING.with(|r| r.set(r.get() + 1));
    // SAFETY: the member's entry, made by fmerge for this call.
    let code = std::panic::catch_unwind(|| unsafe { entry() }).unwrap_or(101);
    RUNNING.with(|r| r.set(r.get() - 1));
    let _ = std::io::stdout().flush();
    drop_unread_stdin();
    drop(scope);
    let out = std::mem::take(&mut *lock(&ctx.stdout));
    (out, code)
}

/// Runs `entry`, the `main` of member `name`, which serves HTTP itself, on
/// this thread for as long as it runs, with `own` ([`c_env`]) as its
/// environment and the process's stdin and stdout; its exit code (101 for
/// a panic, as std's runtime has it).
pub fn serve(
    name: &str,
    entry: unsafe extern "C-unwind" fn() -> i32,
    own: &'static [&'static CStr],
) -> i32 {
    // Not counted in RUNNING: a server's thread is a runtime's, busy with
    // many requests, not a place to run a callee in the middle of a call.
    let _scope = Scope::enter(serving_context(name, own));
    // SAFETY: the member's entry, made by fmerge.
    std::panic::catch_unwind(|| unsafe { entry() }).unwrap_or(101)
}

/// What a member that serves HTTP has of its own on the threads that act
/// for it: its environment `own` ([`c_env`]), its rewrites, and the
/// process's stdin and stdout.
pub fn serving_context(name: &str, own: &'static [&'static CStr]) -> Arc<Context> {
    Arc::new(Context {
        name: name.to_string(),
        stdin: Mutex::new(Input {
            body: Vec::new(),
            at: 0,
            open: false,
        }),
        stdout: Mutex::new(Vec::new()),
        env: [own, &[]],
        rewrites: rewrite::active_for(name, crate::rewrites()),
        noted: AtomicBool::new(false),
        serves: true,
    })
}

/// Whether the current thread acts for a member that serves HTTP itself
/// ([`serve`]), and which.
pub fn serving() -> Option<String> {
    with_current(|ctx| ctx.filter(|c| c.serves).map(|c| c.name.clone()))
}

/// Hands what std's stdin buffer holds back to the reader it came from,
/// emptying the buffer for the member on this thread (whose own stdin is
/// not open yet, so std's reads here find nothing new).
fn give_back_stdin(me: &Arc<Context>) {
    let mut stdin = std::io::stdin().lock();
    let left = match stdin.fill_buf() {
        Ok(b) if !b.is_empty() => b.len(),
        _ => return,
    };
    let bytes = stdin.fill_buf().map(<[u8]>::to_vec).unwrap_or_default();
    stdin.consume(left);
    drop(stdin);
    let owner = lock(&LAST_FILL).clone();
    match owner {
        Some(owner) => {
            if let Some(owner) = owner.upgrade()
                && !Arc::ptr_eq(&owner, me)
            {
                owner.unread(bytes.len());
            }
        }
        None => {
            let mut pending = lock(&PENDING);
            let rest = std::mem::take(&mut *pending);
            pending.extend_from_slice(&bytes);
            pending.extend_from_slice(&rest);
            ANY_PENDING.store(!pending.is_empty(), Ordering::Release);
        }
    }
}

/// Reads and drops what the member left unread, in std's buffer and in its
/// body, so that no later reader sees it.
fn drop_unread_stdin() {
    let mut stdin = std::io::stdin().lock();
    while let Ok(b) = stdin.fill_buf() {
        let n = b.len();
        if n == 0 {
            break;
        }
        stdin.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_runs_here_only_if_this_process_ends_first() {
        let s = Duration::from_secs;
        assert!(fits(None, None));
        assert!(fits(None, Some(s(10))));
        assert!(fits(Some(s(10)), Some(s(10))));
        assert!(fits(Some(s(30)), Some(s(10))));
        assert!(!fits(Some(s(2)), Some(s(10))));
        assert!(!fits(Some(s(2)), None));
    }
}
