//! The C library's functions and constants the shim calls (x86_64 Linux,
//! glibc), declared once; std has no wrapper for them.
//! (The shim's own definitions in libc's place are `interpose`'s.)

use std::ffi::{c_int, c_long};
use std::os::fd::{FromRawFd, OwnedFd};

unsafe extern "C" {
    pub fn fork() -> c_int;
    pub fn setsid() -> c_int;
    pub fn socketpair(domain: c_int, kind: c_int, protocol: c_int, fds: *mut c_int) -> c_int;
    pub fn poll(fds: *mut PollFd, n: u64, timeout: c_int) -> c_int;
    pub fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    pub fn dup2(old: c_int, new: c_int) -> c_int;
    pub fn fchdir(fd: c_int) -> c_int;
    pub fn close(fd: c_int) -> c_int;
    pub fn _exit(code: c_int) -> !;
    pub fn exit(code: c_int) -> !;
    pub fn syscall(num: c_long, ...) -> c_long;
    pub fn waitid(idtype: u32, id: u32, info: *mut [u64; 16], options: c_int) -> c_int;
    pub fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    pub fn signal(sig: c_int, handler: usize) -> usize;
    pub fn prctl(option: c_int, arg: u64, ...) -> c_int;
    pub fn flock(fd: c_int, op: c_int) -> c_int;
    pub fn getuid() -> u32;
    pub fn getppid() -> c_int;
    pub fn getpid() -> c_int;
    pub fn gettid() -> c_int;
    pub fn kill(pid: c_int, sig: c_int) -> c_int;
    pub fn atexit(f: extern "C" fn()) -> c_int;
    pub fn clearenv() -> c_int;
    pub fn getsockopt(
        fd: c_int,
        level: c_int,
        name: c_int,
        value: *mut u32,
        len: *mut u32,
    ) -> c_int;
}

/// `struct pollfd`.
#[repr(C)]
pub struct PollFd {
    pub fd: c_int,
    pub events: i16,
    pub revents: i16,
}

pub const AF_UNIX: c_int = 1;
pub const SOCK_SEQPACKET: c_int = 5;
pub const O_CLOEXEC: c_int = 0x80000;
pub const POLLIN: i16 = 1;
pub const SOL_SOCKET: c_int = 1;
pub const SO_PEERCRED: c_int = 17;
pub const LOCK_EX: c_int = 2;
pub const LOCK_NB: c_int = 4;
pub const SYS_PIDFD_OPEN: c_long = 434;
pub const SYS_PIDFD_SEND_SIGNAL: c_long = 424;
pub const P_PID: u32 = 1;
pub const P_PIDFD: u32 = 3;
pub const WEXITED: c_int = 4;
pub const WNOWAIT: c_int = 0x0100_0000;
pub const SIGKILL: c_int = 9;
pub const SIGPIPE: c_int = 13;
pub const SIGCHLD: c_int = 17;
pub const SIG_DFL: usize = 0;
pub const SIG_IGN: usize = 1;
pub const PR_SET_PDEATHSIG: c_int = 1;
pub const CLD_EXITED: i32 = 1;
pub const CLD_DUMPED: i32 = 3;

/// A pidfd for the process `pid`, if the kernel gives one.
pub fn pidfd_open(pid: c_int) -> Option<OwnedFd> {
    // SAFETY: a system call with plain arguments.
    let fd = unsafe { syscall(SYS_PIDFD_OPEN, pid as c_long, 0 as c_long) };
    // SAFETY: the descriptor pidfd_open just returned, owned here alone.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as c_int) })
}
