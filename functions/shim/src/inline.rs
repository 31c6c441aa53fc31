//! Calls answered on the calling thread: a call to a member that runs in
//! this process, made from a thread that may run it ([`inproc::may_run_here`]),
//! is run in the middle of the client's own `send` of its request, so that
//! no other thread wakes for it and the client's wait for the reply finds it
//! already there. A call to a handler library's `handle` is started there
//! from any thread ([`handles::start`]): a `handle` that does not wait
//! replies at once; one that does goes on on its runtime, which writes the
//! reply into the pair when it has it.
//!
//! The client still has its socket, one end of the pair the interposed
//! `connect` made ([`adopt`]); this module holds the other end. After each
//! write the client makes to its end (`send`, `sendto`, `sendmsg`, `write`,
//! `writev`, all interposed), [`after_send`] reads what arrived; once it is
//! a whole request for such a member, the member runs here and its reply
//! is written into the pair, where the client reads it as it would have
//! read the stand-in's. Anything else (a call to be relayed, a member that
//! needs a process, a request that expects `100-continue`, a body too
//! large to hold, a request that is not HTTP) is handed to a stand-in
//! thread with what was read ([`server::serve_pair`]), which answers it as
//! it answers every paired connection. A client that writes some other way
//! (a kernel ring, `sendfile`) is noticed by a sweep that hands its
//! connection over too, later but answered the same.

use std::cell::Cell;
use std::io::{self, Cursor, Read, Write};
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::{handles, http, inproc, member, server};

/// A request larger than this is handed to a stand-in thread rather than
/// parsed again after each write.
const HOLD_AT_MOST: usize = 1 << 20;
/// How often the sweep looks at connections nothing wrote to through the
/// interposed calls, and how long a request may sit unparsed before it is
/// handed over.
const SWEEP_EVERY: Duration = Duration::from_millis(50);

/// A client's paired connection that no stand-in thread serves.
struct Held {
    /// The client's descriptor and its socket's inode (a number is reused
    /// once closed).
    fd: i32,
    inode: u64,
    /// Our end of the pair, non-blocking.
    ours: UnixStream,
    origin: SocketAddr,
    /// What was read of the next request.
    read: Vec<u8>,
    /// When `read` began to fill.
    since: Option<Instant>,
    /// The sweep found bytes in the pair that no interposed write had
    /// answered: still there at its next look, they are handed over. Not
    /// at the first, which may fall between a client's write and its
    /// `after_send`: handed over, a pooled connection would be a stand-in
    /// thread's for good, each of its calls two hand-offs slower.
    unread_seen: bool,
    /// Its connections to a member's own server and to the gateway, kept
    /// from one request a stand-in thread answered to the next.
    kept: server::Kept,
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());
/// How many connections are held.
static COUNT: AtomicUsize = AtomicUsize::new(0);
static SWEEPING: AtomicBool = AtomicBool::new(false);

/// The held descriptors below [`MARKED`], a bit each, so that every other
/// write of the process (each is interposed) passes without the lock;
/// descriptors from there on take it whenever any connection is held.
static MARKS: [AtomicU64; MARKED / 64] = [const { AtomicU64::new(0) }; MARKED / 64];
const MARKED: usize = 4096;

fn mark(fd: i32, on: bool) {
    if let Some(fd) = usize::try_from(fd).ok().filter(|&fd| fd < MARKED) {
        let bit = 1u64 << (fd % 64);
        if on {
            MARKS[fd / 64].fetch_or(bit, Ordering::AcqRel);
        } else {
            MARKS[fd / 64].fetch_and(!bit, Ordering::AcqRel);
        }
    }
}

/// The process whose connections are held: a child forked from it (a
/// `Command` between its fork and exec) holds none of them, and must not
/// take a lock another thread may have held at the fork.
static OWNER: AtomicU32 = AtomicU32::new(0);

/// Whether `fd` may be held (certainly not when this says no).
fn maybe_held(fd: i32) -> bool {
    let marked = match usize::try_from(fd) {
        Ok(fd) if fd < MARKED => MARKS[fd / 64].load(Ordering::Acquire) & (1u64 << (fd % 64)) != 0,
        _ => COUNT.load(Ordering::Acquire) > 0,
    };
    marked && OWNER.load(Ordering::Acquire) == std::process::id()
}

thread_local! {
    /// This thread has the list locked: what it writes meanwhile is the
    /// shim's own (a reply into its end of a pair), never a client's, and
    /// must not look for a held connection (the lock is not reentrant).
    static LOCKED_HERE: Cell<bool> = const { Cell::new(false) };
}

/// The list, locked by this thread.
struct List(MutexGuard<'static, Vec<Held>>);

impl Deref for List {
    type Target = Vec<Held>;
    fn deref(&self) -> &Vec<Held> {
        &self.0
    }
}

impl DerefMut for List {
    fn deref_mut(&mut self) -> &mut Vec<Held> {
        &mut self.0
    }
}

impl Drop for List {
    fn drop(&mut self) {
        LOCKED_HERE.set(false);
    }
}

fn held() -> List {
    let list = HELD.lock().unwrap_or_else(|p| p.into_inner());
    LOCKED_HERE.set(true);
    List(list)
}

/// Puts `h` in the list, its descriptor marked.
fn hold(list: &mut Vec<Held>, h: Held) {
    mark(h.fd, true);
    list.push(h);
    COUNT.store(list.len(), Ordering::Release);
}

/// Takes the `i`th of the list out, its descriptor unmarked.
fn unhold(list: &mut Vec<Held>, i: usize) -> Held {
    let h = list.swap_remove(i);
    mark(h.fd, false);
    COUNT.store(list.len(), Ordering::Release);
    h
}

/// Holds `ours`, the stand-in's end of the pair whose other end is the
/// client's `fd` (socket `inode`), headed for the gateway `origin`; gives
/// it back if it cannot, for a stand-in thread to serve.
pub fn adopt(fd: i32, inode: u64, ours: UnixStream, origin: SocketAddr) -> Result<(), UnixStream> {
    if ours.set_nonblocking(true).is_err() {
        return Err(ours);
    }
    OWNER.store(std::process::id(), Ordering::Release);
    let mut list = held();
    // An older connection on the same descriptor is closed: its client is gone.
    if let Some(i) = list.iter().position(|h| h.fd == fd) {
        unhold(&mut list, i);
    }
    let h = Held {
        fd,
        inode,
        ours,
        origin,
        read: Vec::new(),
        since: None,
        unread_seen: false,
        kept: server::Kept::default(),
    };
    hold(&mut list, h);
    drop(list);
    start_sweep();
    Ok(())
}

/// Takes the held connection of descriptor `fd`, if there is one.
fn take(fd: i32) -> Option<Held> {
    if !maybe_held(fd) || LOCKED_HERE.get() {
        return None;
    }
    let mut list = held();
    let i = list.iter().position(|h| h.fd == fd)?;
    let mut h = unhold(&mut list, i);
    h.unread_seen = false;
    Some(h)
}

fn put_back(h: Held) {
    hold(&mut held(), h);
}

/// Called after the client wrote to `fd`: answers what it wrote, if it is
/// whole, here or through a stand-in thread.
pub fn after_send(fd: i32) {
    if let Some(h) = take(fd) {
        read_and_answer(h);
    }
}

/// Reads what the client of `h` wrote and answers each whole request.
fn read_and_answer(mut h: Held) {
    let ended = drain(&mut h);
    if ended && h.read.is_empty() {
        // The client's end is closed (its descriptor now names another
        // socket) or shut: nothing to answer; dropping ours ends the pair.
        return;
    }
    loop {
        let (req, used) = match next_request(&h.read) {
            Next::Incomplete if !ended && h.read.len() <= HOLD_AT_MOST => {
                h.since.get_or_insert_with(Instant::now);
                return put_back(h);
            }
            Next::Incomplete | Next::Elsewhere => return hand_over(h),
            Next::Request(req, used) => (req, used),
        };
        let keep = req.keep_alive();
        let answered = answer(&req, keep);
        h.read.drain(..used);
        h.since = (!h.read.is_empty()).then(Instant::now);
        let Some(answered) = answered else {
            return answer_elsewhere(h, req);
        };
        let bytes = match answered {
            Answer::Now(bytes) => bytes,
            Answer::Later(later) => {
                return later.then(Box::new(move |bytes| reply_later(h, bytes, keep)));
            }
        };
        let Some(back) = reply_with(h, bytes, keep) else {
            return;
        };
        h = back;
        if h.read.is_empty() {
            return put_back(h);
        }
    }
}

/// Writes `bytes`, a reply, to `h`'s client; `h` if the connection goes
/// on here, `None` if it is closed or handed to another thread.
fn reply_with(h: Held, mut bytes: Vec<u8>, keep: bool) -> Option<Held> {
    let written = match write_some(&h.ours, &bytes) {
        Ok(n) => n,
        // The client is gone: dropping ours ends the pair.
        Err(()) => return None,
    };
    if written < bytes.len() {
        finish_elsewhere(h, bytes.split_off(written), keep);
        return None;
    }
    // Dropping ours ends the connection after the reply.
    keep.then_some(h)
}

/// [`reply_with`] for a reply that comes on another thread than the
/// client's: the connection is held again before the reply is out, so that
/// the request the client writes once it has the reply finds it held (its
/// `send` looks without waiting where nothing is held).
fn reply_later(h: Held, bytes: Vec<u8>, keep: bool) {
    // A client that closed its descriptor while waiting is gone (its number
    // may name another connection by now).
    if inode(h.fd) != Some(h.inode) {
        return;
    }
    if !(keep && h.read.is_empty()) {
        if let Some(h) = reply_with(h, bytes, keep) {
            read_and_answer(h);
        }
        return;
    }
    let mut list = held();
    hold(&mut list, h);
    let at = list.len() - 1;
    let written = write_some(&list[at].ours, &bytes);
    if written == Ok(bytes.len()) {
        return;
    }
    let h = unhold(&mut list, at);
    drop(list);
    if let Ok(n) = written {
        finish_elsewhere(h, bytes[n..].to_vec(), keep);
    }
}

/// Reads what the client has written so far; whether its side has ended.
fn drain(h: &mut Held) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match (&h.ours).read(&mut chunk) {
            Ok(0) => return true,
            // A stream socket's read is short only when nothing more waits.
            Ok(n) if n < chunk.len() => {
                h.read.extend_from_slice(&chunk[..n]);
                return false;
            }
            Ok(n) => h.read.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return e.kind() != io::ErrorKind::WouldBlock,
        }
    }
}

/// What the bytes read so far hold.
enum Next {
    /// A whole request, and how many bytes it took.
    Request(http::Request, usize),
    /// Not a whole request yet.
    Incomplete,
    /// Something a stand-in thread must answer: the client waits for
    /// `100 Continue`, or the bytes are not a request it can read.
    Elsewhere,
}

fn next_request(read: &[u8]) -> Next {
    let Some(head_end) = read.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Next::Incomplete;
    };
    let mut cursor = Cursor::new(read);
    match http::read_request(&mut cursor, &mut io::sink()) {
        Ok(Some(req)) => {
            let used = cursor.position() as usize;
            Next::Request(req, used)
        }
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            let head = String::from_utf8_lossy(&read[..head_end]).to_ascii_lowercase();
            if head.contains("100-continue") {
                Next::Elsewhere
            } else {
                Next::Incomplete
            }
        }
        // A body cut mid-line reads as invalid until its line is whole.
        Err(_) if !read.ends_with(b"\n") => Next::Incomplete,
        Ok(None) | Err(_) => Next::Elsewhere,
    }
}

/// How a request answered here is answered.
enum Answer {
    /// With this reply, whole.
    Now(Vec<u8>),
    /// By a handler library's `handle` that goes on elsewhere.
    Later(handles::Later),
}

/// How `req` (whose connection stays open if `keep`) is answered here: a
/// call to a handler library's `handle` is started from any thread
/// ([`handles::start`]); a call to a member that runs in this process is
/// run where fmerge allows it and this thread may run it. `None`: by a
/// stand-in thread.
fn answer(req: &http::Request, keep: bool) -> Option<Answer> {
    let (name, _, _) = crate::cgi::function_target(&req.target)?;
    let m = crate::member_named(name)?;
    if m.mode == crate::Mode::Http {
        // A member that serves HTTP itself is called through its server,
        // never run per call, unless its `handle` answers for it.
        return match handles::start(m, handles::handled(m)?, req) {
            handles::Started::Reply(bytes) => Some(Answer::Now(bytes)),
            handles::Started::Later(later) => Some(Answer::Later(later)),
            handles::Started::NotHere => None,
        };
    }
    if m.run.is_none() || !crate::inline_calls() || !inproc::may_run_here() {
        return None;
    }
    let reply = member::run_in_process(m, &server::member_call(req, &|_| true)?)?;
    let mut bytes = Vec::new();
    let _ = server::write_reply(&mut bytes, &reply, &req.method, keep);
    Some(Answer::Now(bytes))
}

/// Whether connections to the stand-in are held for answers on the
/// client's thread: where fmerge lets members run there, or where a
/// member's `handle` can be started there.
pub fn wanted() -> bool {
    static WANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WANTED.get_or_init(|| {
        crate::inline_calls()
            || crate::members()
                .iter()
                .any(|m| handles::handled(m).is_some())
    })
}

/// Writes what the pair takes now of `bytes`; how much it took, or `Err`
/// where the client's end is gone.
fn write_some(ours: &UnixStream, bytes: &[u8]) -> Result<usize, ()> {
    let mut at = 0;
    while at < bytes.len() {
        match (&*ours).write(&bytes[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return Err(()),
        }
    }
    Ok(at)
}

/// Answers `req`, which this thread does not ([`answer`] said `None`), on
/// a stand-in thread ([`server::answer`]), then holds the connection again,
/// so that the client's next request is answered on its own thread: a
/// pooled connection that called a member's own server once would else be
/// a stand-in thread's for good, each later call to a `handle` two
/// hand-offs slower.
fn answer_elsewhere(mut h: Held, req: http::Request) {
    server::on_stand_in(Box::new(move || {
        if h.ours.set_nonblocking(false).is_err() {
            return;
        }
        let went_on = {
            let mut writer = io::BufWriter::new(&h.ours);
            let config = server::merged_config();
            server::answer(&req, Some(h.origin), config, &mut h.kept, &mut writer)
                .and_then(|on| writer.flush().map(|()| on))
        };
        // Dropping ours ends the pair, after a reply that ends it.
        if matches!(went_on, Ok(true)) && h.ours.set_nonblocking(true).is_ok() {
            give_back(h);
        }
    }));
}

/// Holds `h` again, its reply out. What its client wrote meanwhile (no
/// interposed write found it held) is answered here.
fn give_back(h: Held) {
    if !h.read.is_empty() {
        return read_and_answer(h);
    }
    if inode(h.fd) != Some(h.inode) {
        return;
    }
    let mut list = held();
    hold(&mut list, h);
    let at = list.len() - 1;
    if unread(&list[at].ours) == 0 {
        return;
    }
    let h = unhold(&mut list, at);
    drop(list);
    read_and_answer(h);
}

/// Gives the connection to a stand-in thread, with what was read of it.
fn hand_over(h: Held) {
    if h.ours.set_nonblocking(false).is_ok() {
        server::serve_pair(h.ours, h.origin, h.read);
    }
}

/// A reply larger than the pair takes at once: a thread writes the rest
/// while the client reads, then serves the connection if it stays open.
fn finish_elsewhere(h: Held, rest: Vec<u8>, keep: bool) {
    let _ = h.ours.set_nonblocking(false);
    let _ = std::thread::Builder::new()
        .name("fmerge-reply".into())
        .spawn(move || {
            inproc::act_for_no_one();
            if (&h.ours).write_all(&rest).is_ok() && keep {
                server::serve_pair(h.ours, h.origin, h.read);
            }
        });
}

/// Starts the sweep if it is not running: it ends when nothing is held.
fn start_sweep() {
    if SWEEPING.swap(true, Ordering::AcqRel) {
        return;
    }
    let started = std::thread::Builder::new()
        .name("fmerge-sweep".into())
        .spawn(|| {
            inproc::act_for_no_one();
            loop {
                std::thread::sleep(SWEEP_EVERY);
                if !sweep() {
                    return;
                }
            }
        });
    if started.is_err() {
        SWEEPING.store(false, Ordering::Release);
    }
}

/// One look at the held connections: the ones whose client is gone are
/// dropped; the ones with bytes no interposed write answered at two looks
/// in a row, or a request unparsed for a whole sweep, are handed over.
/// `false` (and the sweep ends) when none is left.
fn sweep() -> bool {
    let mut over = Vec::new();
    let mut list = held();
    let mut i = 0;
    while i < list.len() {
        let h = &mut list[i];
        let gone = inode(h.fd) != Some(h.inode);
        let unread_now = unread(&h.ours) > 0;
        let unread_twice = unread_now && h.unread_seen;
        h.unread_seen = unread_now;
        let waiting = unread_twice || h.since.is_some_and(|t| t.elapsed() >= SWEEP_EVERY);
        if gone {
            unhold(&mut list, i);
        } else if waiting {
            over.push(unhold(&mut list, i));
        } else {
            i += 1;
        }
    }
    let left = !list.is_empty();
    if !left {
        SWEEPING.store(false, Ordering::Release);
    }
    drop(list);
    for h in over {
        hand_over(h);
    }
    left
}

/// The inode of the socket `fd` is, if it is open.
pub fn inode(fd: i32) -> Option<u64> {
    unsafe extern "C" {
        fn fstat(fd: i32, buf: *mut [u64; 18]) -> i32;
    }
    let mut st = [0u64; 18];
    // SAFETY: `st` is as large as `struct stat` on x86-64 (144 bytes).
    (unsafe { fstat(fd, &mut st) } == 0).then_some(st[1])
}

/// How many bytes wait to be read on `ours`.
fn unread(ours: &UnixStream) -> i32 {
    unsafe extern "C" {
        fn ioctl(fd: i32, request: u64, ...) -> i32;
    }
    const FIONREAD: u64 = 0x541B;
    let mut n: i32 = 0;
    // SAFETY: FIONREAD writes one int.
    if unsafe { ioctl(ours.as_raw_fd(), FIONREAD, &mut n) } < 0 {
        return 0;
    }
    n
}
