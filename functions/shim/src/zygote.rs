//! Members' processes forked, not started: at the binary's start, before
//! `main` and while the process still has one thread, a constructor forks a
//! zygote, a copy of the process as exec left it (libraries loaded and
//! relocated, no Rust runtime yet, no member's `main` run). A call to a member
//! asks the zygote for a process; it forks one, gives it the call's stdin,
//! stdout and environment, and runs the member's `main` in it. The member
//! gets everything a fresh process of its own would (its globals, its stdio,
//! its exit, its environment), without paying exec and the dynamic loader
//! again: for binaries that link large shared libraries (libcurl brings
//! OpenSSL, Kerberos, LDAP…), that load is most of a process start.
//!
//! The zygote is single-threaded and serves every call of the process tree
//! (the caller's, and the nested calls of the members it runs) with `poll`:
//! it forks each member, kills it at its `exec_timeout` through a pidfd (a
//! pid cannot be reused while the zygote holds its pidfd and has not reaped
//! it), reaps it, and writes its wait status to the call's status pipe. It
//! ends when the caller's process ends (its end of the control socket
//! closes). Where it cannot serve (no pidfds, an environment too large for
//! one message, the zygote gone before the member started), the call runs
//! in a process started from this binary instead (the member module's
//! fallback).

use crate::wire::{receive_fds, send_fds};
use std::ffi::{OsStr, OsString, c_int, c_long};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::sys::*;

/// The largest call message: the environment travels in it. A larger one
/// runs its member from a process start instead.
const MAX_MESSAGE: usize = 128 * 1024;
/// The descriptors a call hands the zygote: the member's stdin, stdout and
/// stderr, and the pipe its status is written to.
const CALL_FDS: usize = 4;

/// This process's end of the zygote's control socket; -1 when there is none.
static CONTROL: AtomicI32 = AtomicI32::new(-1);
/// The zygote this process forked (its child); 0 when none.
static ZYGOTE: AtomicI32 = AtomicI32::new(0);

/// At the caller's exit: closes the control socket, so that the zygote
/// ends, and reaps it, so that its CPU time and its members' count as this
/// process's (a watchdog and a pod's accounting see them) and no orphan is
/// left behind.
extern "C" fn reap_zygote() {
    let zygote = ZYGOTE.swap(0, Ordering::Relaxed);
    let control = CONTROL.swap(-1, Ordering::Relaxed);
    if zygote <= 0 {
        return;
    }
    // SAFETY: this process's own descriptor and child.
    unsafe {
        if control >= 0 {
            close(control);
        }
        let mut status = 0;
        while waitpid(zygote, &mut status, 0) < 0
            && last_error().kind() == std::io::ErrorKind::Interrupted
        {}
    }
}

/// This process's stdio on /dev/null, for a process that outlives the
/// start it was forked from: a watchdog reads a request's pipes until
/// their last writer closes. Shared with the warm server.
///
/// # Safety
/// Replaces descriptors 0 to 2, which nothing else may be using.
pub(crate) unsafe fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: as the caller promises.
            unsafe { dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// What the zygote writes to a call's status pipe: first that the member's
/// process exists, then how it ended.
const STARTED: u8 = b'S';
const ENDED: u8 = b'E';

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A pidfd for `pid`, an unreaped child of this process (so the pid is
/// still its own); where there is none, the child is killed, since it can
/// then be neither timed nor reaped. Shared with the warm server.
pub(crate) fn pidfd_of_child(pid: c_int) -> Option<OwnedFd> {
    let fd = pidfd_open(pid);
    if fd.is_none() {
        // SAFETY: our unreaped child.
        unsafe { kill(pid, SIGKILL) };
    }
    fd
}

/// SIGKILL to the process of `pidfd` (which cannot be another process's
/// while it is unreaped).
pub(crate) fn kill_by(pidfd: &OwnedFd) {
    // SAFETY: a signal through a descriptor this process holds.
    unsafe {
        syscall(
            SYS_PIDFD_SEND_SIGNAL,
            pidfd.as_raw_fd() as c_long,
            SIGKILL as c_long,
            0 as c_long,
            0 as c_long,
        )
    };
}

/// Reaps the ended child of `pidfd`: its wait status as `waitpid` gives
/// it; `None` while it runs.
pub(crate) fn reap(pidfd: &OwnedFd) -> Option<i32> {
    let mut info = [0u64; 16];
    // SAFETY: `info` is as large as siginfo_t; the pidfd is this process's
    // child's.
    let r = unsafe { waitid(P_PIDFD, pidfd.as_raw_fd() as u32, &mut info, WEXITED) };
    if r != 0 {
        return None;
    }
    // siginfo_t: si_code at byte 8, si_status at byte 24.
    let code = info[1] as i32;
    let status = (info[3] & 0xffff_ffff) as i32;
    Some(match code {
        CLD_EXITED => (status & 0xff) << 8,
        CLD_DUMPED => (status & 0x7f) | 0x80,
        _ => status & 0x7f,
    })
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { pipe2(fds.as_mut_ptr(), O_CLOEXEC) } != 0 {
        return Err(last_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { socketpair(AF_UNIX, SOCK_SEQPACKET | O_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(last_error());
    }
    // SAFETY: as in `pipe`.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Forks the zygote, if this binary has members to run and the kernel
/// gives pidfds. Called by the constructor, on the only thread there is.
///
/// # Safety
/// The process must have a single thread; `argv` must live as long as it.
pub unsafe fn start(argc: c_int, argv: *const *const u8) {
    // Kernels without pidfds (before 5.3): no zygote, process starts.
    // SAFETY: a system call on this process's own pid.
    let probe = unsafe { syscall(SYS_PIDFD_OPEN, getpid() as c_long, 0 as c_long) };
    if probe < 0 {
        return;
    }
    // SAFETY: a descriptor this call opened.
    unsafe { close(probe as c_int) };
    let Ok((ours, its)) = socket_pair() else {
        return;
    };
    // SAFETY: called before `main` on the only thread, so the child is a
    // whole copy of the process.
    let parent = unsafe { getpid() };
    match unsafe { fork() } {
        -1 => {}
        0 => {
            drop(ours);
            // SAFETY: the zygote's own setup, single-threaded.
            unsafe { become_zygote(parent, its, argc, argv) }
        }
        zygote => {
            drop(its);
            CONTROL.store(std::os::fd::IntoRawFd::into_raw_fd(ours), Ordering::Relaxed);
            ZYGOTE.store(zygote, Ordering::Relaxed);
            // SAFETY: registers a function with no captured state.
            unsafe { atexit(reap_zygote) };
        }
    }
}

/// The zygote's life: detached from the caller's stdio, ending with it.
unsafe fn become_zygote(parent: c_int, control: OwnedFd, argc: c_int, argv: *const *const u8) -> ! {
    // SAFETY: plain system calls on this process.
    unsafe {
        // Ends with the caller even if the caller is killed.
        prctl(PR_SET_PDEATHSIG, SIGKILL as u64);
        if getppid() != parent {
            _exit(0);
        }
        // The caller's stdio must close when the caller ends.
        detach_stdio();
        // A status pipe whose reader is gone must not kill the zygote.
        signal(SIGPIPE, SIG_IGN);
        // Its members stay unreaped until it waits for them, whatever the
        // caller's process inherited.
        signal(SIGCHLD, SIG_DFL);
    }
    let mut zygote = Zygote {
        clients: vec![control],
        running: Vec::new(),
        argc,
        argv,
    };
    zygote.serve()
}

/// A member's process the zygote forked and has not reaped yet.
struct Running {
    pidfd: OwnedFd,
    status: File,
    deadline: Option<Instant>,
}

struct Zygote {
    /// Control sockets: the caller's first (when it closes, the zygote
    /// ends), then each member process's, for its own calls.
    clients: Vec<OwnedFd>,
    running: Vec<Running>,
    argc: c_int,
    argv: *const *const u8,
}

impl Zygote {
    fn serve(&mut self) -> ! {
        let mut buf = vec![0u8; MAX_MESSAGE];
        loop {
            let now = Instant::now();
            let wait = self
                .running
                .iter()
                .filter_map(|r| r.deadline)
                // Rounded up, so that a deadline under a millisecond away
                // is not polled for in a busy loop.
                .map(|d| {
                    let us = d.saturating_duration_since(now).as_micros();
                    us.div_ceil(1000).min(i32::MAX as u128) as c_int
                })
                .min()
                .unwrap_or(-1);
            let mut fds: Vec<PollFd> = self
                .clients
                .iter()
                .chain(self.running.iter().map(|r| &r.pidfd))
                .map(|fd| PollFd {
                    fd: fd.as_raw_fd(),
                    events: POLLIN,
                    revents: 0,
                })
                .collect();
            // SAFETY: `fds` is a valid array of `fds.len()` entries.
            let n = unsafe { poll(fds.as_mut_ptr(), fds.len() as u64, wait) };
            if n < 0 && last_error().kind() != std::io::ErrorKind::Interrupted {
                // SAFETY: ends the zygote; its members run on.
                unsafe { _exit(1) };
            }
            let clients = self.clients.len();
            let ready: Vec<usize> = (0..fds.len()).filter(|&i| fds[i].revents != 0).collect();
            // Ended members first (before indices move), from the back.
            for &i in ready.iter().rev().filter(|&&i| i >= clients) {
                self.reap(i - clients);
            }
            for &i in ready.iter().rev().filter(|&&i| i < clients) {
                if !self.take_call(i, &mut buf) {
                    if i == 0 {
                        // The caller ended.
                        // SAFETY: ends the zygote alone.
                        unsafe { _exit(0) };
                    }
                    self.clients.swap_remove(i);
                }
            }
            let now = Instant::now();
            for r in &mut self.running {
                if r.deadline.is_some_and(|d| d <= now) {
                    r.deadline = None;
                    // Unreaped, so the pidfd's process is still this member's.
                    kill_by(&r.pidfd);
                }
            }
        }
    }

    /// Reaps an ended member and writes its wait status for its caller.
    fn reap(&mut self, i: usize) {
        let Some(raw) = reap(&self.running[i].pidfd) else {
            return;
        };
        let mut ended = self.running.swap_remove(i);
        let mut msg = [ENDED, 0, 0, 0, 0];
        msg[1..].copy_from_slice(&raw.to_le_bytes());
        let _ = ended.status.write_all(&msg);
    }

    /// Receives one call from client `i` and forks its member; false when
    /// that client has gone.
    fn take_call(&mut self, i: usize, buf: &mut [u8]) -> bool {
        let got = match receive_fds::<CALL_FDS>(self.clients[i].as_raw_fd(), buf) {
            Ok(got) => got,
            Err(e) => return e.kind() == std::io::ErrorKind::Interrupted,
        };
        if got.len == 0 && got.fds.is_none() {
            return false;
        }
        // Not a call this shim sent (whatever descriptors came are
        // closed): the caller sees no start (a process start then).
        let Some([stdin, stdout, stderr, status]) = got.fds else {
            return true;
        };
        let mut status = File::from(status);
        let call = (!got.truncated)
            .then(|| Message::decode(&buf[..got.len]))
            .flatten()
            .and_then(|m| Some((crate::member_named(&m.name)?, m)));
        let Some((member, call)) = call else {
            return true;
        };
        let Ok((theirs, ours)) = socket_pair() else {
            return true;
        };
        // SAFETY: the zygote has one thread, so the child is whole.
        match unsafe { fork() } {
            -1 => true,
            0 => {
                // The member's process.
                drop(ours);
                let keep = [stdin.as_raw_fd(), stdout.as_raw_fd(), stderr.as_raw_fd()];
                // SAFETY: the child's own descriptors and dispositions.
                unsafe {
                    for (to, fd) in keep.iter().enumerate() {
                        dup2(*fd, to as c_int);
                    }
                    signal(SIGPIPE, SIG_DFL);
                    signal(SIGCHLD, SIG_DFL);
                    prctl(PR_SET_PDEATHSIG, 0);
                }
                drop((stdin, stdout, stderr, status));
                self.clients.clear();
                self.running.clear();
                CONTROL.store(
                    std::os::fd::IntoRawFd::into_raw_fd(theirs),
                    Ordering::Relaxed,
                );
                // SAFETY: this process has one thread; the member's `main`
                // reads the environment only after this.
                unsafe {
                    clearenv();
                    for (k, v) in &call.env {
                        std::env::set_var(k, v);
                    }
                }
                crate::rewrite::activate(member.name, crate::rewrites());
                // SAFETY: the member's C main, with the process's argc and argv.
                let code = unsafe { (member.main)(self.argc, self.argv) };
                // The C library's exit: see `interpose::run_member`.
                // SAFETY: ends this member's process as its `main` returning.
                unsafe { exit(code) }
            }
            pid => {
                drop(theirs);
                let Some(pidfd) = pidfd_of_child(pid) else {
                    return true;
                };
                let _ = status.write_all(&[STARTED]);
                self.running.push(Running {
                    pidfd,
                    status,
                    deadline: call.timeout.map(|t| Instant::now() + t),
                });
                self.clients.push(ours);
                true
            }
        }
    }
}

/// A call as it travels to the zygote.
struct Message {
    name: String,
    timeout: Option<Duration>,
    env: Vec<(OsString, OsString)>,
}

impl Message {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        let ms = self.timeout.map_or(u64::MAX, |t| t.as_millis() as u64);
        out.extend_from_slice(&ms.to_le_bytes());
        for (k, v) in &self.env {
            out.extend_from_slice(k.as_bytes());
            out.push(b'=');
            out.extend_from_slice(v.as_bytes());
            out.push(0);
        }
        out
    }

    fn decode(b: &[u8]) -> Option<Message> {
        let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let name = std::str::from_utf8(b.get(4..4 + len)?).ok()?.to_string();
        let rest = b.get(4 + len..)?;
        let ms = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
        let mut env = Vec::new();
        for entry in rest[8..].split(|&c| c == 0).filter(|e| !e.is_empty()) {
            let eq = entry.iter().position(|&c| c == b'=')?;
            env.push((
                OsStr::from_bytes(&entry[..eq]).to_os_string(),
                OsStr::from_bytes(&entry[eq + 1..]).to_os_string(),
            ));
        }
        Some(Message {
            name,
            timeout: (ms != u64::MAX).then(|| Duration::from_millis(ms)),
            env,
        })
    }
}

/// How a call through the zygote went.
pub enum Outcome {
    /// The member ran: what it wrote to stdout, and its wait status.
    Ran(Vec<u8>, Result<i32, String>),
    /// No member process was started: run it another way.
    NotStarted,
}

/// Runs `name` in a process forked by the zygote, with `env` as its whole
/// environment, `body` on its stdin and SIGKILL at `timeout`.
pub fn execute(
    name: &str,
    env: &[(OsString, OsString)],
    body: &[u8],
    timeout: Option<Duration>,
) -> Outcome {
    let control = CONTROL.load(Ordering::Relaxed);
    if control < 0 {
        return Outcome::NotStarted;
    }
    let message = Message {
        name: name.to_string(),
        timeout,
        env: env.to_vec(),
    }
    .encode();
    if message.len() > MAX_MESSAGE {
        return Outcome::NotStarted;
    }
    let Ok(((in_r, in_w), (out_r, out_w), (st_r, st_w))) =
        pipe().and_then(|i| Ok((i, pipe()?, pipe()?)))
    else {
        return Outcome::NotStarted;
    };
    // All or nothing: a sequenced-packet socket.
    let sent = send_fds(
        control,
        &message,
        [in_r.as_raw_fd(), out_w.as_raw_fd(), 2, st_w.as_raw_fd()],
    );
    drop((in_r, out_w, st_w));
    if sent < 0 {
        return Outcome::NotStarted;
    }
    let mut status = File::from(st_r);
    let mut started = [0u8; 1];
    if status.read_exact(&mut started).is_err() || started[0] != STARTED {
        return Outcome::NotStarted;
    }
    // A thread writes stdin, so that a member that answers before reading
    // everything cannot deadlock against a full pipe.
    let mut stdin = File::from(in_w);
    let body = body.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let mut out = Vec::new();
    let read = File::from(out_r).read_to_end(&mut out);
    let mut ended = [0u8; 5];
    let result = match (read, status.read_exact(&mut ended)) {
        (Err(e), _) => Err(e.to_string()),
        (_, Err(_)) => Err("its process was lost with the zygote that ran it".to_string()),
        _ if ended[0] != ENDED => Err("its zygote sent no status".to_string()),
        _ => Ok(i32::from_le_bytes(
            ended[1..].try_into().unwrap_or_default(),
        )),
    };
    let _ = writer.join();
    Outcome::Ran(out, result)
}
