//! Warm starts of the caller's process: of-watchdog starts the caller's
//! binary once per request (`fprocess`), and for a binary that links large
//! shared libraries (libcurl brings OpenSSL, Kerberos, LDAP…) most of that
//! start is the dynamic loader and the page faults of mapping them, the
//! same every time. The merged image's `fprocess` is therefore the launcher
//! (`src/bin/fmerge-warm.rs`, a small static binary) in front of the merged
//! binary: it asks a warm server for the process instead, a copy of the
//! binary as exec left it (libraries loaded and relocated, no Rust runtime
//! yet, no `main` run), which forks one, gives it the launcher's stdio,
//! working directory, arguments and environment, and sends its wait status
//! back, which the launcher ends with. The process then runs the caller's
//! `main` as a started one would, with everything a fresh process has
//! (its own globals, stdio, exit and environment), minus exec's new address
//! layout and the libraries' constructors, which ran once in the server.
//!
//! The server comes from the first start: where there is none, the
//! launcher starts the binary itself with [`wire::WARM_VAR`] naming the
//! socket, and that process, before anything else in it runs, forks the
//! server (detached: its own session, stdio on /dev/null, so a watchdog
//! waiting for the request's pipes to close does not wait for it) and goes
//! on as a cold start. One server per binary file, arguments and
//! namespaces (the launcher's socket name says which: a process of another
//! network or mount namespace is not this one's), held by a lock; it ends
//! with the watchdog that started that first process, or after [`IDLE`]
//! without requests where that watchdog is not PID 1 (`idle_limit`). A
//! process whose launcher is gone (killed at `exec_timeout`) is killed with
//! SIGKILL, as of-watchdog kills a started one.

use crate::sys::*;
use crate::wire::{self, Reply, WARM_VAR};
use std::ffi::{CStr, c_int};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the server waits for a request before it ends (a request after
/// that is a cold start again, which starts a new server).
pub const IDLE: Duration = Duration::from_secs(600);

/// How long the server started by `starter` may wait for a request: [`IDLE`],
/// or for ever where the starter is PID 1, as of-watchdog is in its image.
/// The server, detached, is then the starter's child, and of-watchdog reaps
/// only the commands it runs: a server ended on idle would stay a zombie,
/// one per idle period, until the pod's PID limit. It ends with the
/// container instead, as the watchdog does.
fn idle_limit(starter: c_int) -> Option<Duration> {
    (starter != 1).then_some(IDLE)
}

/// How long a connected launcher may take to send its request.
const REQUEST_WAIT: Duration = Duration::from_secs(2);

/// Called first by the constructor: where the launcher asked for a warm
/// server ([`WARM_VAR`]) and none holds its lock, forks one. Returns in
/// this process (a cold start, which goes on) and, in the server, in each
/// process it forks for a request (set up as that request's process).
///
/// # Safety
/// The process must have a single thread; `argv` must hold `argc` strings.
pub unsafe fn serve_if_asked(argc: c_int, argv: *const *const u8) {
    let Some(socket) = std::env::var_os(WARM_VAR) else {
        return;
    };
    // SAFETY: single-threaded; the caller's code must never see it.
    unsafe { std::env::remove_var(WARM_VAR) };
    let Some((listener, lock)) = claim(Path::new(&socket)) else {
        return;
    };
    // What started this process (the watchdog: the launcher exec'd the
    // binary in its place): the server ends with it.
    // SAFETY: a plain system call.
    let parent = unsafe { getppid() };
    let starter = pidfd_open(parent);
    let args: Vec<Vec<u8>> = (0..argc.max(0) as usize)
        // SAFETY: the process's own argv, `argc` NUL-terminated strings.
        .map(|i| {
            unsafe { CStr::from_ptr(*argv.add(i) as *const _) }
                .to_bytes()
                .to_vec()
        })
        .collect();
    // SAFETY: single-threaded, so each child is a whole copy.
    match unsafe { fork() } {
        -1 => {}
        0 => {
            // SAFETY: a process of its own, single-threaded.
            unsafe {
                setsid();
                match fork() {
                    0 => {}
                    _ => _exit(0),
                }
            }
            let server = Server {
                socket: PathBuf::from(socket),
                listener,
                _lock: lock,
                starter,
                idle: idle_limit(parent),
                args,
                running: Vec::new(),
                // SAFETY: reads (and sets) this process's disposition.
                sigpipe: unsafe { signal(SIGPIPE, SIG_IGN) },
            };
            // Returns only in a request's process.
            server.serve();
        }
        pid => {
            drop((listener, lock, starter));
            let mut status = 0;
            // SAFETY: our own child, which exits at once.
            unsafe { waitpid(pid, &mut status, 0) };
        }
    }
}

/// The server's lock and socket at `socket`, unless another server holds
/// them.
fn claim(socket: &Path) -> Option<(UnixListener, File)> {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(socket))
        .ok()?;
    // SAFETY: a lock on our own descriptor; held as long as the server
    // (which inherits it) lives.
    if unsafe { flock(lock.as_raw_fd(), LOCK_EX | LOCK_NB) } != 0 {
        return None;
    }
    // A socket left by a server that ended.
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket).ok()?;
    Some((listener, lock))
}

/// What a request's process takes from its request.
type Taken = ([OwnedFd; wire::REQUEST_FDS], Vec<Vec<u8>>);

/// The lock file of the server at `socket`.
fn lock_path(socket: &Path) -> PathBuf {
    let mut path = socket.as_os_str().to_owned();
    path.push(".lock");
    PathBuf::from(path)
}

/// A request's process, forked and not yet reaped.
struct Running {
    pidfd: OwnedFd,
    /// Its launcher; `None` once it has gone (the process is then killed).
    launcher: Option<UnixStream>,
}

struct Server {
    socket: PathBuf,
    listener: UnixListener,
    _lock: File,
    /// The process that started the binary the server came from (its
    /// watchdog): when it ends, so does the server.
    starter: Option<OwnedFd>,
    /// How long it waits for a request before it ends ([`idle_limit`]).
    idle: Option<Duration>,
    /// The arguments of the start it came from: a request with others is
    /// refused (its process must see its own).
    args: Vec<Vec<u8>>,
    running: Vec<Running>,
    /// SIGPIPE's disposition in the binary's own start, for its processes.
    sigpipe: usize,
}

impl Server {
    /// Serves until idle ([`idle_limit`]) or its starter ends; returns only
    /// in a request's process.
    fn serve(mut self) {
        // SAFETY: plain system calls on this process.
        unsafe {
            crate::zygote::detach_stdio();
            signal(SIGCHLD, SIG_DFL);
        }
        loop {
            let mut fds: Vec<PollFd> = [
                self.listener.as_raw_fd(),
                self.starter.as_ref().map_or(-1, |s| s.as_raw_fd()),
            ]
            .into_iter()
            .chain(self.running.iter().flat_map(|r| {
                [
                    r.pidfd.as_raw_fd(),
                    r.launcher.as_ref().map_or(-1, |l| l.as_raw_fd()),
                ]
            }))
            .map(|fd| PollFd {
                fd,
                events: POLLIN,
                revents: 0,
            })
            .collect();
            let idle = match self.idle {
                Some(idle) if self.running.is_empty() => idle.as_millis() as c_int,
                _ => -1,
            };
            // SAFETY: `fds` is a valid array of `fds.len()` entries.
            let n = unsafe { poll(fds.as_mut_ptr(), fds.len() as u64, idle) };
            if n == 0 || fds[1].revents != 0 {
                // Idle, or its watchdog ended: the processes running (none
                // when idle) end with it (their PR_SET_PDEATHSIG).
                let _ = std::fs::remove_file(&self.socket);
                // Its lock file too. A start that opened it just before
                // may still lock it beside one that makes it anew: two
                // servers, the later socket wins, the other is never asked
                // and ends as this one does. Harmless.
                let _ = std::fs::remove_file(lock_path(&self.socket));
                // SAFETY: ends the server.
                unsafe { _exit(0) };
            }
            if n < 0 {
                continue;
            }
            for i in (0..self.running.len()).rev() {
                let (pid, launcher) = (fds[2 + 2 * i].revents, fds[3 + 2 * i].revents);
                if launcher != 0 {
                    // The launcher sends nothing after its request: it has
                    // gone (killed), and so must its process.
                    self.running[i].launcher = None;
                    crate::zygote::kill_by(&self.running[i].pidfd);
                }
                if pid != 0 {
                    let r = self.running.swap_remove(i);
                    if let (Some(status), Some(mut launcher)) =
                        (crate::zygote::reap(&r.pidfd), r.launcher)
                    {
                        let _ = Reply::Ended(status).write(&mut launcher);
                    }
                }
            }
            if fds[0].revents != 0
                && let Ok((stream, _)) = self.listener.accept()
                && let Some((fds, env)) = self.take(stream)
            {
                // SAFETY: the request's process, single-threaded.
                unsafe { self.become_request(fds, &env) };
                return;
            }
        }
    }

    /// Forks a process for the request on `stream`; in that process, the
    /// request's descriptors and environment.
    fn take(&mut self, mut stream: UnixStream) -> Option<Taken> {
        if !same_user(&stream) {
            return None;
        }
        let _ = stream.set_read_timeout(Some(REQUEST_WAIT));
        let Some((request, fds)) = wire::receive(&mut stream) else {
            let _ = Reply::Refused.write(&mut stream);
            return None;
        };
        if request.args != self.args {
            let _ = Reply::Refused.write(&mut stream);
            return None;
        }
        // SAFETY: the server is single-threaded, so the child is whole.
        match unsafe { fork() } {
            -1 => {
                let _ = Reply::Refused.write(&mut stream);
                None
            }
            0 => Some((fds, request.env)),
            pid => {
                drop(fds);
                if let Some(pidfd) = crate::zygote::pidfd_of_child(pid) {
                    let _ = Reply::Started(pid).write(&mut stream);
                    let _ = stream.set_read_timeout(None);
                    self.running.push(Running {
                        pidfd,
                        launcher: Some(stream),
                    });
                } else {
                    let _ = Reply::Refused.write(&mut stream);
                }
                None
            }
        }
    }

    /// The forked process as the launcher's own: its stdio, directory and
    /// environment, the binary's signal dispositions, nothing of the server.
    unsafe fn become_request(self, fds: [OwnedFd; wire::REQUEST_FDS], env: &[Vec<u8>]) {
        let [stdin, stdout, stderr, cwd] = fds;
        // SAFETY: this process's own descriptors and settings.
        unsafe {
            for (to, fd) in [stdin, stdout, stderr].iter().enumerate() {
                dup2(fd.as_raw_fd(), to as c_int);
            }
            fchdir(cwd.as_raw_fd());
            signal(SIGPIPE, self.sigpipe);
            // Never outlives the server, whose launcher waits for its status.
            prctl(PR_SET_PDEATHSIG, SIGKILL as u64);
            clearenv();
        }
        for entry in env {
            if let Some(eq) = entry.iter().position(|&c| c == b'=') {
                use std::os::unix::ffi::OsStrExt;
                let key = std::ffi::OsStr::from_bytes(&entry[..eq]);
                let value = std::ffi::OsStr::from_bytes(&entry[eq + 1..]);
                if !key.is_empty() {
                    // SAFETY: single-threaded, before `main`.
                    unsafe { std::env::set_var(key, value) };
                }
            }
        }
        // The listener, the lock and the other requests' descriptors close
        // here; the socket file stays the server's.
        drop(self);
    }
}

/// Whether the peer runs as this process's user (the socket's folder is
/// private to it too; this holds where that folder is not).
fn same_user(stream: &UnixStream) -> bool {
    let mut cred = [0u32; 3];
    let mut len = size_of::<[u32; 3]>() as u32;
    // SAFETY: `cred` is a `struct ucred` (pid, uid, gid) of `len` bytes.
    let r = unsafe {
        getsockopt(
            stream.as_raw_fd(),
            SOL_SOCKET,
            SO_PEERCRED,
            cred.as_mut_ptr(),
            &mut len,
        )
    };
    // SAFETY: a plain system call.
    r == 0 && cred[1] == unsafe { getuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_started_by_pid_1_never_ends_on_idle() {
        assert_eq!(idle_limit(1), None, "of-watchdog as the image's PID 1");
        assert_eq!(idle_limit(4242), Some(IDLE), "any other starter");
    }
}
