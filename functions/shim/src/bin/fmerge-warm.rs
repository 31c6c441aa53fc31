//! `fmerge-warm BINARY [ARGS...]`: the `fprocess` of a merged image of
//! watchdog-process functions, in front of the merged binary. It asks the
//! binary's warm server (the shim's `warm` module says why and how) for a
//! process with its own stdio, working directory, arguments and
//! environment, and ends as that process ends (its exit code, or the
//! signal that killed it); signals it gets are passed on. Where no server
//! answers, it starts BINARY itself, as of-watchdog would have, asking that
//! start to leave a server behind.
//!
//! Static and std only (fmerge compiles this file alone with `rustc`), so
//! that its own start costs next to nothing.

#[path = "../wire.rs"]
#[allow(dead_code)]
mod wire;

use std::ffi::{OsString, c_int, c_long};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use wire::{Reply, Request};

unsafe extern "C" {
    fn getuid() -> u32;
    fn syscall(num: c_long, ...) -> c_long;
    fn signal(sig: c_int, handler: usize) -> usize;
    fn raise(sig: c_int) -> c_int;
}

const SYS_PIDFD_OPEN: c_long = 434;
const SYS_PIDFD_SEND_SIGNAL: c_long = 424;
const SIG_DFL: usize = 0;
const SIGKILL: i32 = 9;
/// The signals passed on to the process: those a watchdog, an operator or
/// a terminal sends to end or poke it (SIGKILL and SIGSTOP cannot be
/// caught; the process then loses its launcher and the server kills it).
const PASSED_ON: [c_int; 7] = [1, 2, 3, 10, 12, 14, 15];

/// The process's pidfd, for [`pass_on`].
static PIDFD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn pass_on(sig: c_int) {
    let fd = PIDFD.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: a system call, async-signal-safe.
        unsafe { syscall(SYS_PIDFD_SEND_SIGNAL, fd as c_long, sig as c_long, 0, 0) };
    }
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(binary) = args.next() else {
        eprintln!(
            "error: fmerge-warm needs the binary to run\nfix: run `fmerge-warm BINARY [ARGS...]`, as the merged image's fprocess does"
        );
        std::process::exit(2);
    };
    let rest: Vec<OsString> = args.collect();
    let Some(socket) = socket_for(&binary, &rest) else {
        start(&binary, &rest, None);
    };
    match warm(&socket, &binary, &rest) {
        Warm::Ended(status) => end_as(status),
        Warm::NoServer => start(&binary, &rest, Some(&socket)),
        Warm::Refused => start(&binary, &rest, None),
    }
}

/// The server's socket for `binary` with `rest`: one per file (its device,
/// inode, size and times: a new build is a new server), arguments and
/// namespaces, in a folder only this user can enter; `None` where there is
/// none to be had.
fn socket_for(binary: &OsString, rest: &[OsString]) -> Option<PathBuf> {
    let meta = std::fs::metadata(binary).ok()?;
    // SAFETY: a plain system call.
    let uid = unsafe { getuid() };
    let dir = std::env::temp_dir().join(format!("fmerge-warm-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let own = std::fs::symlink_metadata(&dir).ok()?;
    if !own.is_dir() || own.uid() != uid || own.mode() & 0o077 != 0 {
        return None;
    }
    // FNV-1a: a name, not a secret (the folder is private).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes.iter().chain([&0xff]) {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for n in [
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ] {
        eat(&n.to_le_bytes());
    }
    for a in std::iter::once(binary).chain(rest) {
        eat(a.as_bytes());
    }
    // The server's processes share its namespaces: one per set of them.
    for ns in ["net", "mnt", "pid", "uts", "ipc", "user", "cgroup"] {
        let ns = std::fs::metadata(format!("/proc/self/ns/{ns}")).ok()?;
        eat(&ns.dev().to_le_bytes());
        eat(&ns.ino().to_le_bytes());
    }
    Some(dir.join(format!("{hash:016x}.sock")))
}

/// What came of asking the server.
enum Warm {
    /// Its process ran: its wait status.
    Ended(i32),
    /// No server listens: a start of the binary is to leave one.
    NoServer,
    /// One listens and did not fork the process (or it cannot be asked).
    Refused,
}

/// The process from the server at `socket`, run to its end.
fn warm(socket: &Path, binary: &OsString, rest: &[OsString]) -> Warm {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return Warm::NoServer;
    };
    let Ok(cwd) = std::fs::File::open(".") else {
        return Warm::Refused;
    };
    let request = Request {
        args: std::iter::once(binary)
            .chain(rest)
            .map(|a| a.clone().into_vec())
            .collect(),
        env: std::env::vars_os()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                kv
            })
            .collect(),
    };
    if !wire::send(&mut stream, &request, [0, 1, 2, cwd.as_raw_fd()]) {
        return Warm::Refused;
    }
    drop(cwd);
    let Some(Reply::Started(pid)) = Reply::read(&mut stream) else {
        return Warm::Refused;
    };
    // SAFETY: a pidfd for the process, which its server has not reaped
    // (it reaps only after telling us, below).
    let fd = unsafe { syscall(SYS_PIDFD_OPEN, pid as c_long, 0 as c_long) };
    if fd >= 0 {
        PIDFD.store(fd as i32, Ordering::Relaxed);
        for sig in PASSED_ON {
            // SAFETY: a handler that only makes a system call.
            unsafe { signal(sig, pass_on as extern "C" fn(c_int) as usize) };
        }
    }
    match Reply::read(&mut stream) {
        Some(Reply::Ended(status)) => Warm::Ended(status),
        // The server ended first, and its processes with it.
        _ => {
            eprintln!(
                "fmerge-warm: the warm server of {} ended before process {pid} did",
                Path::new(binary).display()
            );
            Warm::Ended(SIGKILL)
        }
    }
}

/// Ends this process as a process with wait status `status` ended.
fn end_as(status: i32) -> ! {
    let sig = status & 0x7f;
    if sig == 0 {
        std::process::exit((status >> 8) & 0xff);
    }
    // SAFETY: this process's own disposition and signal.
    unsafe {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    std::process::exit(128 + sig);
}

/// `binary` started in place of this process, with the server's socket
/// when it is to leave one behind.
fn start(binary: &OsString, rest: &[OsString], socket: Option<&Path>) -> ! {
    let mut command = std::process::Command::new(binary);
    command.args(rest);
    if let Some(socket) = socket {
        command.env(wire::WARM_VAR, socket);
    }
    let e = command.exec();
    eprintln!(
        "error: fmerge-warm cannot start {}: {e}\nfix: give the merged binary's path, as fmerge writes the image's fprocess",
        Path::new(binary).display()
    );
    std::process::exit(127);
}
