//! What a function's name tells the walk: the primitives at the bottom of
//! the call graph that wait (the C library's, and std's, whose code is not
//! in the bitcode), and the functions that hand work to another thread or
//! run it once, which the walk does not follow.

/// What the walk does at a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// It waits: a sleep, a wait on another thread, a process, a file, or
    /// a socket.
    Waits(Wait),
    /// It hands its work to another thread, runs it once, or is known not
    /// to wait: not followed.
    HandsOff,
    /// Followed, if the bitcode has its code.
    Plain,
}

/// How a primitive waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Always: a sleep, a join, a condition variable.
    Always,
    /// I/O on a descriptor, which waits only when the descriptor blocks: the
    /// async runtime's own I/O layer ([`NON_BLOCKING_IO`]) makes every
    /// descriptor it uses non-blocking, so its calls of these return at once
    /// ([`Io`]).
    OnDescriptor,
}

/// The crates whose every descriptor is non-blocking (tokio's I/O driver
/// and mio under it): their reads, writes, connects and accepts return at
/// once, and their one wait, `epoll_wait`, is in the reactor, which runs
/// between requests.
pub const NON_BLOCKING_IO: &[&str] = &["mio::", "tokio::"];

/// Crates that wrap a socket for whoever made it (blocking or not).
const SOCKET_WRAPPERS: &[&str] = &["socket2::"];

/// Where a function stands for descriptor I/O below it.
pub enum Io {
    /// The async runtime's own I/O ([`NON_BLOCKING_IO`]): a descriptor wait
    /// below it, through [`Io::Wrapper`]s only, is on a non-blocking one.
    Runtime,
    /// A socket wrapper: as its caller.
    Wrapper,
    /// Anything else (the user's code, a task the runtime polls).
    Other,
}

/// Where the function at `path` stands, as a path or as an impl
/// (`<&mio::… as Read>`).
pub fn io(path: &str) -> Io {
    let path = path.trim_start_matches(['<', '&']);
    if NON_BLOCKING_IO.iter().any(|p| path.starts_with(p)) {
        Io::Runtime
    } else if SOCKET_WRAPPERS.iter().any(|p| path.starts_with(p)) {
        Io::Wrapper
    } else {
        Io::Other
    }
}

/// C library functions that wait whatever the descriptor.
const LIBC_WAITS: &[&str] = &[
    "nanosleep",
    "clock_nanosleep",
    "sleep",
    "usleep",
    "poll",
    "ppoll",
    "select",
    "pselect",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "wait",
    "waitpid",
    "wait3",
    "wait4",
    "waitid",
    "pthread_join",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "sem_wait",
    "sem_timedwait",
    "flock",
    "lockf",
    "system",
    "pause",
    "sigsuspend",
    "sigwait",
    "sigwaitinfo",
    "sigtimedwait",
    "getaddrinfo",
    "gethostbyname",
    "gethostbyname_r",
    "fsync",
    "fdatasync",
    "sync",
    "syncfs",
];

/// C library I/O, which waits on a blocking descriptor or the file system.
const LIBC_IO: &[&str] = &[
    "read",
    "readv",
    "pread",
    "pread64",
    "preadv",
    "preadv2",
    "write",
    "writev",
    "pwrite",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "recv",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "send",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "connect",
    "accept",
    "accept4",
    "open",
    "open64",
    "openat",
    "openat64",
    "creat",
    "stat",
    "stat64",
    "lstat",
    "lstat64",
    "statx",
    "sendfile",
    "sendfile64",
    "splice",
    "copy_file_range",
    "opendir",
    "readdir",
    "readdir64",
    "unlink",
    "unlinkat",
    "rename",
    "mkdir",
];

/// std's functions that wait (by path prefix): std's own code is not in the
/// bitcode, so its entry points are judged by name (an item std inlines
/// into its caller, as `std::fs::read` or `Instant::now`, is followed down
/// to the non-inlined function it calls).
const STD_WAITS: &[&str] = &[
    "std::thread::functions::sleep",
    "std::thread::sleep",
    "std::thread::functions::park",
    "std::thread::park",
    "std::thread::JoinInner",
    "std::thread::JoinHandle",
    "std::sys::thread::unix::Thread::join",
    "std::sys::pal::unix::thread::Thread::join",
    "std::sys::pal::unix::futex::futex_wait",
    "std::sys::futex::futex_wait",
    "std::sys::sync::thread_parking",
    "std::process::Command::output",
    "std::process::Command::status",
    "std::process::Child::wait",
    "std::sync::Barrier::wait",
    "std::sync::barrier::Barrier::wait",
    "std::sync::mpmc::context::Context::wait_until",
    "std::io::stdio::Stdin::read",
    "<std::io::stdio::Stdin",
    "<std::io::stdio::StdinLock",
    "<&std::io::stdio::Stdin",
    "std::io::stdio::Stdin::lines",
];

/// std's file functions (by path prefix): they wait on the file system, or
/// on the descriptor a `File` wraps (mio's waker writes to an eventfd so).
const STD_FILES: &[&str] = &["std::fs::", "<std::fs::", "<&std::fs::", "std::sys::fs::"];

/// Within [`STD_FILES`]' prefixes, what does not wait: reading what a
/// `stat` already returned, building options, and the debug check of a
/// descriptor (`fcntl(F_GETFD)`) that `OwnedFd`'s drop makes before `close`.
const STD_QUICK: &[&str] = &[
    "std::fs::Metadata",
    "<std::fs::Metadata",
    "std::fs::FileType",
    "<std::fs::FileType",
    "std::fs::Permissions",
    "<std::fs::Permissions",
    "std::fs::FileTimes",
    "std::fs::DirEntry::path",
    "std::fs::DirEntry::file_name",
    "std::sys::fs::unix::debug_assert_fd_is_open",
    "std::sys::fs::unix::FileAttr",
    "std::sys::fs::unix::FileType",
    "std::sys::fs::unix::FilePermissions",
    "std::sys::fs::unix::DirEntry::file_name",
    "std::sys::fs::unix::DirEntry::path",
];

/// std's socket operations that wait (the last segment of a path under
/// `std::net` or `std::sys::net`): reading a socket's address or setting an
/// option does not.
const NET_WAITS: &[&str] = &[
    "connect",
    "connect_timeout",
    "accept",
    "read",
    "read_vectored",
    "read_buf",
    "read_exact",
    "read_to_end",
    "read_to_string",
    "write",
    "write_vectored",
    "write_all",
    "write_fmt",
    "recv",
    "recv_from",
    "recv_with_flags",
    "peek",
    "peek_from",
    "send",
    "send_to",
    "to_socket_addrs",
    "lookup_host",
    "try_from",
    "next",
    "incoming",
];

/// Where work is handed to another thread or run once, and what is known
/// not to wait: the walk stops there, and at a reference passed to one of
/// them.
const HANDS_OFF: &[&str] = &[
    // Once: the first caller runs the initialisation, later ones return at once.
    "std::sync::once::Once::call_once",
    "std::sync::poison::once::Once::call_once",
    "std::sys::sync::once::",
    "std::sync::once_lock::OnceLock",
    "std::sync::lazy_lock::LazyLock",
    "std::sync::poison::once_lock::OnceLock",
    "once_cell::imp::",
    "once_cell::sync::OnceCell",
    "once_cell::sync::Lazy",
    "lazy_static::lazy::Lazy",
    // Another thread: tokio's blocking pool, a thread of its own.
    "tokio::runtime::blocking::",
    "tokio::task::blocking::",
    "tokio::runtime::handle::Handle::spawn_blocking",
    "<tokio::runtime::blocking::",
    "tokio::runtime::scheduler::multi_thread::worker::block_in_place",
    "tokio::runtime::scheduler::block_in_place",
    "std::thread::spawn",
    "std::thread::Builder::spawn",
    "std::thread::scoped::",
    "std::sys::thread::unix::Thread::new",
    "std::sys::pal::unix::thread::Thread::new",
    // Closing a descriptor does not wait.
    "<std::os::fd::owned::OwnedFd as core::ops::drop::Drop>::drop",
    // Known not to wait: getrandom reads the kernel's random device only on
    // kernels without the getrandom call (before Linux 3.17), and a read of
    // it never waits once the pool is seeded, which the kernel does at boot.
    "getrandom::backends::linux_android_with_fallback::use_file_fallback",
    "getrandom::backends::use_file::",
];

/// A tokio task's `poll`, reached through the task's vtable: it runs where
/// the task was handed, on the runtime's threads or, for a task the function
/// hands to the blocking pool ([`BLOCKING_POOL`]), on that pool's.
pub const TASK_POLL: &str = "tokio::runtime::task::raw::poll";

/// Where tokio hands a task to its blocking pool (`spawn_blocking`, inlined
/// into its caller down to this call).
pub const BLOCKING_POOL: &str = "tokio::runtime::blocking::pool::Spawner::spawn_task";

/// What the walk does at the function `symbol` (demangled: `path`), which
/// the bitcode has code for when `defined`.
pub fn judge(symbol: &str, path: &str, defined: bool) -> Judged {
    let path = &inherent(path);
    if HANDS_OFF.iter().any(|p| path.starts_with(p)) {
        return Judged::HandsOff;
    }
    if defined {
        return Judged::Plain;
    }
    if LIBC_WAITS.contains(&symbol) {
        return Judged::Waits(Wait::Always);
    }
    if LIBC_IO.contains(&symbol) {
        return Judged::Waits(Wait::OnDescriptor);
    }
    let quick = STD_QUICK.iter().any(|p| path.starts_with(p));
    if !quick && STD_FILES.iter().any(|p| path.starts_with(p)) {
        return Judged::Waits(Wait::OnDescriptor);
    }
    if !quick && STD_WAITS.iter().any(|p| path.starts_with(p)) {
        return Judged::Waits(Wait::Always);
    }
    if is_std_net(path) && NET_WAITS.contains(&last_segment(path)) {
        return Judged::Waits(Wait::OnDescriptor);
    }
    if path.starts_with("std::sys::sync::condvar::") && path.contains("wait")
        || path.contains("Condvar::wait")
    {
        return Judged::Waits(Wait::Always);
    }
    Judged::Plain
}

fn is_std_net(path: &str) -> bool {
    [
        "std::net::",
        "<std::net::",
        "<&std::net::",
        "std::sys::net::",
        "<std::sys::net::",
    ]
    .iter()
    .any(|p| path.starts_with(p))
}

/// An inherent method's path as written in code: v0 symbols demangle
/// `Instant::now` as `<std::time::Instant>::now`.
pub fn inherent(path: &str) -> String {
    if let Some(rest) = path.strip_prefix('<') {
        let mut depth = 1;
        for (i, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                let (ty, tail) = (&rest[..i], &rest[i + 1..]);
                if !ty.contains(" as ") {
                    return format!("{ty}{tail}");
                }
                break;
            }
        }
    }
    path.to_string()
}

/// The name after the last `::` outside angle brackets.
pub fn last_segment(path: &str) -> &str {
    let (mut depth, mut start) = (0i32, 0);
    let bytes = path.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => start = i + 2,
            _ => {}
        }
    }
    &path[start.min(path.len())..]
}
