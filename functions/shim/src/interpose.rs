//! The C symbols that put the stand-in between the members and the gateway,
//! whatever HTTP client they use: `connect` and `getaddrinfo`, defined here
//! in place of libc's (the binary's own code binds to these at link time; a
//! shared libcurl binds to them because fmerge exports them), and the
//! constructor that forks the zygote and runs the member named by
//! `FMERGE_RUN_MEMBER`. In a member's process they also apply its rewrites
//! ([`rewrite`]): host names in `getaddrinfo`, ports in `connect`, and file
//! paths in the opens (`open`, `open64`, `openat`, `openat64`) the binary's
//! own code calls. On a thread that acts for a member run in this process
//! ([`crate::inproc`]), `read`/`readv` of stdin, `write`/`writev` of stdout,
//! `getenv`/`secure_getenv` and the rewrites are that member's, and
//! `pthread_create` passes the member on to the new thread.

use std::ffi::{CStr, c_char, c_int, c_long, c_void};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::gateway;
use crate::rewrite;
use crate::server;
use crate::sys::syscall;

const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;
const SYS_CONNECT: c_long = 42;
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

#[repr(C)]
struct SockaddrIn {
    family: u16,
    port: [u8; 2],
    addr: [u8; 4],
    zero: [u8; 8],
}

#[repr(C)]
struct SockaddrIn6 {
    family: u16,
    port: [u8; 2],
    flowinfo: u32,
    addr: [u8; 16],
    scope_id: u32,
}

/// glibc's `struct addrinfo` (x86_64: `ai_addr` before `ai_canonname`).
#[repr(C)]
struct AddrInfo {
    flags: c_int,
    family: c_int,
    socktype: c_int,
    protocol: c_int,
    addrlen: u32,
    addr: *const u8,
    canonname: *mut c_char,
    next: *const AddrInfo,
}

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// Reads a socket address in the AF_INET or AF_INET6 layout.
///
/// # Safety
/// `addr` must point to `len` readable bytes.
unsafe fn read_addr(addr: *const u8, len: u32) -> Option<SocketAddr> {
    if addr.is_null() || (len as usize) < size_of::<u16>() {
        return None;
    }
    // SAFETY: at least the family is readable (checked above).
    let family = unsafe { (addr as *const u16).read_unaligned() };
    if family == AF_INET && len as usize >= size_of::<SockaddrIn>() {
        // SAFETY: the caller's buffer holds a whole sockaddr_in.
        let a = unsafe { (addr as *const SockaddrIn).read_unaligned() };
        return Some(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::from(a.addr)),
            u16::from_be_bytes(a.port),
        ));
    }
    if family == AF_INET6 && len as usize >= size_of::<SockaddrIn6>() {
        // SAFETY: the caller's buffer holds a whole sockaddr_in6.
        let a = unsafe { (addr as *const SockaddrIn6).read_unaligned() };
        return Some(SocketAddr::new(
            IpAddr::V6(Ipv6Addr::from(a.addr)),
            u16::from_be_bytes(a.port),
        ));
    }
    None
}

/// The stand-in's address in the layout of `family`: an IPv6 socket reaches
/// 127.0.0.1 through its v4-mapped address.
fn loopback(family: u16, port: u16) -> Vec<u8> {
    let p = port.to_be_bytes();
    let bytes: Vec<u8> = if family == AF_INET {
        let a = SockaddrIn {
            family,
            port: p,
            addr: [127, 0, 0, 1],
            zero: [0; 8],
        };
        // SAFETY: a plain-old-data struct viewed as its bytes.
        unsafe {
            std::slice::from_raw_parts(
                &a as *const SockaddrIn as *const u8,
                size_of::<SockaddrIn>(),
            )
        }
        .to_vec()
    } else {
        let addr = Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets();
        let a = SockaddrIn6 {
            family,
            port: p,
            flowinfo: 0,
            addr,
            scope_id: 0,
        };
        // SAFETY: as above.
        unsafe {
            std::slice::from_raw_parts(
                &a as *const SockaddrIn6 as *const u8,
                size_of::<SockaddrIn6>(),
            )
        }
        .to_vec()
    };
    bytes
}

/// libc's `connect`, by system call: there is no "next" `connect` to find
/// once this one replaced it in the executable.
///
/// # Safety
/// As `connect(2)`.
unsafe fn real_connect(fd: c_int, addr: *const u8, len: u32) -> c_int {
    // SAFETY: the arguments are the caller's, passed through.
    unsafe { syscall(SYS_CONNECT, fd as c_long, addr, len as c_long) as c_int }
}

/// The local port of socket `fd`, binding it to loopback first if it is not
/// bound yet, so that the stand-in can tell which destination an accepted
/// connection had before the connection even exists.
fn local_port(fd: c_int, family: u16) -> Option<u16> {
    let mut buf = [0u8; 128];
    let mut len = buf.len() as u32;
    // SAFETY: `buf` has `len` writable bytes.
    if unsafe { getsockname(fd, buf.as_mut_ptr(), &mut len) } != 0 {
        return None;
    }
    // SAFETY: getsockname wrote `len` bytes.
    let port = unsafe { read_addr(buf.as_ptr(), len) }?.port();
    if port != 0 {
        return Some(port);
    }
    let any = loopback(family, 0);
    // SAFETY: `any` is a whole sockaddr of the socket's family.
    if unsafe { real_bind(fd, any.as_ptr(), any.len() as u32) } != 0 {
        return None;
    }
    let mut len = buf.len() as u32;
    // SAFETY: as above.
    if unsafe { getsockname(fd, buf.as_mut_ptr(), &mut len) } != 0 {
        return None;
    }
    // SAFETY: as above.
    Some(unsafe { read_addr(buf.as_ptr(), len) }?.port())
}

/// Sends a connect to a gateway to the stand-in; `None` leaves it alone.
fn redirect(fd: c_int, dest: SocketAddr) -> Option<c_int> {
    let state = gateway::state();
    if gateway::bypassed() || !state.is_gateway(dest) {
        return None;
    }
    // A line a member run here has not ended yet is its output, not the
    // output of the member it is calling.
    crate::inproc::flush_own_stdout();
    if let Some(r) = pair(fd, dest) {
        return Some(r);
    }
    let stand_in = server::stand_in_port()?;
    let family = if dest.is_ipv4() { AF_INET } else { AF_INET6 };
    let port = local_port(fd, family)?;
    state.set_origin(port, dest);
    let to = loopback(family, stand_in);
    // SAFETY: `to` is a whole sockaddr of the socket's family.
    let r = unsafe { real_connect(fd, to.as_ptr(), to.len() as u32) };
    let pending = std::io::Error::last_os_error().raw_os_error() == Some(115); // EINPROGRESS
    if r != 0 && !pending {
        state.take_origin(port);
    }
    Some(r)
}

const F_GETFL: c_int = 3;
const F_SETFL: c_int = 4;
const F_GETFD: c_int = 1;
const FD_CLOEXEC: c_int = 1;
const O_CLOEXEC: c_int = 0o2000000;
const IPPROTO_TCP: c_int = 6;

unsafe extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
    fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int;
}

/// The client sockets [`pair`] replaced: descriptor, the socket's inode
/// (a descriptor number is reused once closed) and the gateway address it
/// stands for.
static PAIRED: std::sync::Mutex<Vec<(c_int, u64, SocketAddr)>> = std::sync::Mutex::new(Vec::new());
static ANY_PAIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

use crate::inline::inode;

/// The gateway address socket `fd` stands for, if [`pair`] made it.
fn paired(fd: c_int) -> Option<SocketAddr> {
    if !ANY_PAIRED.load(Ordering::Acquire) {
        return None;
    }
    let ino = inode(fd)?;
    let list = PAIRED.lock().unwrap_or_else(|e| e.into_inner());
    list.iter()
        .find(|(f, i, _)| *f == fd && *i == ino)
        .map(|(_, _, dest)| *dest)
}

/// Connects client socket `fd` to the stand-in without TCP: one end of a
/// Unix socket pair takes the descriptor's place (its flags kept), the
/// other is served on a thread of the stand-in. Loopback TCP costs most of
/// a call in the kernel; a pair does not. The client's TCP options, peer
/// and local address stay as a TCP client expects them (`setsockopt`,
/// `getsockopt`, `getpeername`, `getsockname` below). `None`: the pair
/// could not be made, and the connection goes over loopback TCP.
fn pair(fd: c_int, dest: SocketAddr) -> Option<c_int> {
    use std::os::fd::AsRawFd;
    // SAFETY: reads the flags of the caller's descriptor.
    let (status, fd_flags) = unsafe { (fcntl(fd, F_GETFL), fcntl(fd, F_GETFD)) };
    if status < 0 || fd_flags < 0 {
        return None;
    }
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().ok()?;
    let cloexec = if fd_flags & FD_CLOEXEC != 0 {
        O_CLOEXEC
    } else {
        0
    };
    // SAFETY: replaces the caller's unconnected socket by its end of the
    // pair; `theirs` is closed when dropped, the descriptor stays.
    if unsafe { dup3(theirs.as_raw_fd(), fd, cloexec) } < 0 {
        return None;
    }
    drop(theirs);
    // SAFETY: the status flags (O_NONBLOCK) the caller's socket had.
    unsafe { fcntl(fd, F_SETFL, status) };
    let ino = inode(fd);
    if let Some(ino) = ino {
        let mut list = PAIRED.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|(f, _, _)| *f != fd);
        list.push((fd, ino, dest));
        ANY_PAIRED.store(true, Ordering::Release);
    }
    // Answered on the client's own thread where it can be (`inline`),
    // else by a stand-in thread.
    let ours = match ino {
        Some(ino) if crate::inline::wanted() => match crate::inline::adopt(fd, ino, ours, dest) {
            Ok(()) => return Some(0),
            Err(ours) => ours,
        },
        _ => ours,
    };
    if !server::serve_pair(ours, dest, Vec::new()) {
        return Some(-1);
    }
    Some(0)
}

/// Writes `addr` into a caller's `sockaddr` buffer of `*len` bytes, as the
/// kernel does (truncated to the buffer, `*len` the full size).
///
/// # Safety
/// `out` must have `*len` writable bytes.
unsafe fn write_addr(addr: SocketAddr, out: *mut u8, len: *mut u32) {
    let family = if addr.is_ipv4() { AF_INET } else { AF_INET6 };
    let mut bytes = loopback(family, addr.port());
    if let (SocketAddr::V4(a), true) = (addr, family == AF_INET) {
        bytes[4..8].copy_from_slice(&a.ip().octets());
    } else if let SocketAddr::V6(a) = addr {
        bytes[8..24].copy_from_slice(&a.ip().octets());
    }
    // SAFETY: the caller's buffer and length, as getpeername(2) has them.
    unsafe {
        let n = (*len as usize).min(bytes.len());
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, n);
        *len = bytes.len() as u32;
    }
}

const SYS_GETSOCKNAME: c_long = 51;
const SYS_GETPEERNAME: c_long = 52;
const SYS_SETSOCKOPT: c_long = 54;
const SYS_GETSOCKOPT: c_long = 55;

/// `getpeername(2)`: a paired socket's peer is the gateway it stands for.
///
/// # Safety
/// As `getpeername(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getpeername(fd: c_int, addr: *mut u8, len: *mut u32) -> c_int {
    if let Some(dest) = paired(fd).filter(|_| !addr.is_null() && !len.is_null()) {
        // SAFETY: the caller's buffer, as getpeername requires.
        unsafe { write_addr(dest, addr, len) };
        return 0;
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe { syscall(SYS_GETPEERNAME, fd as c_long, addr, len) as c_int }
}

/// `getsockname(2)`: a paired socket's own address is on loopback.
///
/// # Safety
/// As `getsockname(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getsockname(fd: c_int, addr: *mut u8, len: *mut u32) -> c_int {
    if let Some(dest) = paired(fd).filter(|_| !addr.is_null() && !len.is_null()) {
        let local = match dest {
            SocketAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            SocketAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 0),
        };
        // SAFETY: as above.
        unsafe { write_addr(local, addr, len) };
        return 0;
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe { syscall(SYS_GETSOCKNAME, fd as c_long, addr, len) as c_int }
}

/// `setsockopt(2)`: a TCP option of a paired socket (`TCP_NODELAY`, …) is
/// taken and has nothing to do.
///
/// # Safety
/// As `setsockopt(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn setsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    value: *const c_void,
    len: u32,
) -> c_int {
    if level == IPPROTO_TCP && paired(fd).is_some() {
        return 0;
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe {
        syscall(
            SYS_SETSOCKOPT,
            fd as c_long,
            level as c_long,
            name as c_long,
            value,
            len as c_long,
        ) as c_int
    }
}

/// `getsockopt(2)`: a TCP option of a paired socket reads as 0.
///
/// # Safety
/// As `getsockopt(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    value: *mut u8,
    len: *mut u32,
) -> c_int {
    if level == IPPROTO_TCP && !value.is_null() && !len.is_null() && paired(fd).is_some() {
        // SAFETY: the caller's buffer of `*len` bytes.
        unsafe { std::ptr::write_bytes(value, 0, *len as usize) };
        return 0;
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe {
        syscall(
            SYS_GETSOCKOPT,
            fd as c_long,
            level as c_long,
            name as c_long,
            value,
            len,
        ) as c_int
    }
}

/// `connect(2)`, redirecting connections to a gateway to the stand-in.
///
/// # Safety
/// As `connect(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const u8, len: u32) -> c_int {
    // SAFETY: `addr` has `len` bytes, as connect(2) requires of the caller.
    let dest = unsafe { read_addr(addr, len) };
    if let Some(dest) = dest
        && let Some(r) = redirect(fd, dest)
    {
        return r;
    }
    if rewrite::any()
        && let Some(to) = dest.and_then(rewrite::destination)
    {
        // The same address with the rewritten port (bytes 2 and 3 of both
        // layouts), the rest as the caller gave it.
        // SAFETY: `addr` has `len` bytes.
        let mut copy = unsafe { std::slice::from_raw_parts(addr, len as usize) }.to_vec();
        copy[2..4].copy_from_slice(&to.port().to_be_bytes());
        // SAFETY: `copy` is the caller's sockaddr with another port.
        return unsafe { real_connect(fd, copy.as_ptr(), len) };
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe { real_connect(fd, addr, len) }
}

const SYS_BIND: c_long = 49;

/// The kernel's `bind(2)`.
///
/// # Safety
/// As `bind(2)`.
unsafe fn real_bind(fd: c_int, addr: *const u8, len: u32) -> c_int {
    // SAFETY: the caller's arguments, as bind(2) takes them.
    unsafe { syscall(SYS_BIND, fd as c_long, addr, len as c_long) as c_int }
}

/// `bind(2)`: a member that serves HTTP itself listens on a free port of
/// 127.0.0.1 instead of the address it asks for ([`crate::servers`]), so
/// that members never collide and none is reachable from outside the pod;
/// anyone else's `bind` is the kernel's.
///
/// # Safety
/// As `bind(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bind(fd: c_int, addr: *const u8, len: u32) -> c_int {
    // SAFETY: `addr` has `len` bytes, as bind(2) requires of the caller.
    let asked = unsafe { read_addr(addr, len) }.filter(|a| a.port() != 0);
    // (A port of 0 asks for any free one: a client's or the shim's own
    // socket, left alone.)
    let (Some(asked), Some(member)) = (asked, crate::inproc::serving()) else {
        // SAFETY: the caller's arguments, passed through.
        return unsafe { real_bind(fd, addr, len) };
    };
    let family = if asked.is_ipv4() { AF_INET } else { AF_INET6 };
    let moved = loopback(family, 0);
    // SAFETY: `moved` is a whole sockaddr of the socket's family.
    let r = unsafe { real_bind(fd, moved.as_ptr(), moved.len() as u32) };
    if r == 0
        && let Some(port) = local_port(fd, family)
    {
        crate::servers::bound(&member, asked.port(), port);
    }
    r
}

type GetAddrInfo =
    unsafe extern "C" fn(*const c_char, *const c_char, *const c_void, *mut *const c_void) -> c_int;

/// `getaddrinfo(3)`: libc's, noting the addresses a gateway's name resolves to.
///
/// # Safety
/// As `getaddrinfo(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const c_void,
    res: *mut *const c_void,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let mut real = REAL.load(Ordering::Acquire);
    if real == 0 {
        // SAFETY: dlsym with a NUL-terminated name.
        real = unsafe { dlsym(RTLD_NEXT, c"getaddrinfo".as_ptr()) } as usize;
        if real == 0 {
            return -4; // EAI_FAIL
        }
        REAL.store(real, Ordering::Release);
    }
    // SAFETY: `real` is libc's getaddrinfo, which has this signature.
    let real: GetAddrInfo = unsafe { std::mem::transmute::<usize, GetAddrInfo>(real) };
    if rewrite::any()
        && !node.is_null()
        // SAFETY: `node` is a C string, as getaddrinfo requires.
        && let Ok(name) = unsafe { CStr::from_ptr(node) }.to_str()
        && let Some((host, ports)) = rewrite::host(name)
        && let Ok(host) = std::ffi::CString::new(host)
    {
        // SAFETY: the caller's arguments, the node replaced by another C string.
        let r = unsafe { real(host.as_ptr(), service, hints, res) };
        if r == 0
            && let Some(ports) = ports
        {
            // SAFETY: on success `*res` is a list that libc built.
            let mut ai = unsafe { *res } as *const AddrInfo;
            while !ai.is_null() {
                // SAFETY: each node and its address are libc's, still alive.
                let node = unsafe { &*ai };
                if let Some(a) = unsafe { read_addr(node.addr, node.addrlen) } {
                    rewrite::remember_port(a.ip().to_canonical(), ports);
                }
                ai = node.next;
            }
        }
        return r;
    }
    // SAFETY: the caller's arguments, passed through.
    let r = unsafe { real(node, service, hints, res) };
    if r != 0 || node.is_null() || res.is_null() {
        return r;
    }
    // SAFETY: `node` is a C string, as getaddrinfo requires.
    let Ok(name) = unsafe { CStr::from_ptr(node) }.to_str() else {
        return r;
    };
    let state = gateway::state();
    if let Some(gw) = state.gateway_named(name) {
        // SAFETY: on success `*res` is a list that libc built.
        let mut ai = unsafe { *res } as *const AddrInfo;
        while !ai.is_null() {
            // SAFETY: each node and its address are libc's, still alive.
            let node = unsafe { &*ai };
            if let Some(a) = unsafe { read_addr(node.addr, node.addrlen) } {
                state.remember(gw, a.ip().to_canonical());
            }
            ai = node.next;
        }
    }
    r
}

const SYS_OPENAT: c_long = 257;
const AT_FDCWD: c_int = -100;

/// `openat(2)` by system call, with `path` replaced when a rewrite of this
/// member's names it.
///
/// # Safety
/// As `openat(2)`.
unsafe fn open_at(dirfd: c_int, path: *const c_char, flags: c_int, mode: u32) -> c_int {
    let mut path = path;
    let replaced;
    if rewrite::any()
        && !path.is_null()
        // SAFETY: `path` is a C string, as open(2) requires.
        && let Ok(name) = unsafe { CStr::from_ptr(path) }.to_str()
        && let Some(to) = rewrite::path(name)
        && let Ok(to) = std::ffi::CString::new(to)
    {
        replaced = to;
        path = replaced.as_ptr();
    }
    // SAFETY: the caller's arguments, `path` maybe another C string.
    unsafe {
        syscall(
            SYS_OPENAT,
            dirfd as c_long,
            path,
            flags as c_long,
            mode as c_long,
        ) as c_int
    }
}

// The C library's opens, so that a rewritten secret file opens as its
// member's own (std's `File::open` calls `open64`). `mode` is the variadic
// argument: on x86-64 it arrives in the third argument's register whether
// the caller passed one or not, and the kernel reads it only with
// `O_CREAT` or `O_TMPFILE`, when the caller must pass it.

/// The opens under each of their names (the `64` one the same call on
/// 64-bit targets), through [`open_at`] at the directory `$dirfd`.
macro_rules! opens {
    ($([$($name:ident),+] $args:tt at $dirfd:expr;)*) => {
        $($(opens!(@one $name $args $dirfd);)+)*
    };
    (@one $name:ident ($($arg:ident: $ty:ty),*) $dirfd:expr) => {
        #[doc = concat!("`", stringify!($name), "(2)`.")]
        ///
        /// # Safety
        /// As its system call.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            $($arg: $ty,)*
            path: *const c_char,
            flags: c_int,
            mode: u32,
        ) -> c_int {
            // SAFETY: the caller's arguments.
            unsafe { open_at($dirfd, path, flags, mode) }
        }
    };
}

opens! {
    [open, open64] () at AT_FDCWD;
    [openat, openat64] (dirfd: c_int) at dirfd;
}

const SYS_READ: c_long = 0;
const SYS_WRITE: c_long = 1;
const SYS_READV: c_long = 19;
const SYS_WRITEV: c_long = 20;

#[repr(C)]
pub struct IoVec {
    base: *mut u8,
    len: usize,
}

/// A read of stdin or a write of stdout (`stdio`: 0 or 1) on `fd`:
/// `member` serves it on a thread that acts for a member (`None`: not
/// one); any other is the system call `nr` with the caller's `args`,
/// passed through, whose result `after` takes.
///
/// # Safety
/// `args` are what `nr` requires after `fd`.
unsafe fn stdio_or_syscall(
    fd: c_int,
    stdio: c_int,
    member: impl FnOnce() -> Option<usize>,
    nr: c_long,
    args: [usize; 2],
    after: fn(c_int, isize) -> isize,
) -> isize {
    if fd == stdio
        && let Some(n) = member()
    {
        return n as isize;
    }
    // SAFETY: the caller's arguments, passed through.
    after(fd, unsafe {
        syscall(nr, fd as c_long, args[0], args[1]) as isize
    })
}

/// `read(2)`: a member's stdin on a thread that acts for it.
///
/// # Safety
/// As `read(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut u8, count: usize) -> isize {
    // SAFETY: the caller gives `count` writable bytes at `buf`.
    let slice = || (!buf.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(buf, count) });
    let member = || crate::inproc::read_stdin(slice()?);
    // SAFETY: as `read(2)`.
    unsafe { stdio_or_syscall(fd, 0, member, SYS_READ, [buf as usize, count], |_, r| r) }
}

/// `readv(2)` or `writev(2)` (the system call `nr`) of the `count` iovecs
/// at `iov`, as [`stdio_or_syscall`]: for a member, each iovec is moved by
/// `each` (which says how many bytes), in turn until one is left short,
/// and the total returned; for no iovec, the system call.
///
/// # Safety
/// `iov` points at `count` iovecs, as readv(2) and writev(2) require.
unsafe fn vectored(
    fd: c_int,
    stdio: c_int,
    (iov, count): (*const IoVec, c_int),
    mut each: impl FnMut(&IoVec) -> usize,
    nr: c_long,
    after: fn(c_int, isize) -> isize,
) -> isize {
    let member = || {
        if count <= 0 || !crate::inproc::with_current(|c| c.is_some()) {
            return None;
        }
        // SAFETY: as this function's contract.
        let iov = unsafe { std::slice::from_raw_parts(iov, count as usize) };
        let mut total = 0;
        for v in iov {
            let n = each(v);
            total += n;
            if n < v.len {
                break;
            }
        }
        Some(total)
    };
    let args = [iov as usize, count as usize];
    // SAFETY: as this function's contract.
    unsafe { stdio_or_syscall(fd, stdio, member, nr, args, after) }
}

/// `readv(2)`: as `read`, into each buffer in turn.
///
/// # Safety
/// As `readv(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const IoVec, count: c_int) -> isize {
    // SAFETY: the caller gives `count` iovecs, each naming `len` writable
    // bytes.
    let each = |v: &IoVec| unsafe { std::slice::from_raw_parts_mut(v.base, v.len) };
    let each = |v: &IoVec| crate::inproc::read_stdin(each(v)).unwrap_or(0);
    // SAFETY: as `readv(2)`.
    unsafe { vectored(fd, 0, (iov, count), each, SYS_READV, |_, r| r) }
}

/// `write(2)`: a member's stdout on a thread that acts for it.
///
/// # Safety
/// As `write(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn write(fd: c_int, buf: *const u8, count: usize) -> isize {
    // SAFETY: the caller gives `count` readable bytes at `buf`.
    let slice = || (!buf.is_null()).then(|| unsafe { std::slice::from_raw_parts(buf, count) });
    let member = || crate::inproc::write_stdout(slice()?);
    // SAFETY: as `write(2)`.
    unsafe { stdio_or_syscall(fd, 1, member, SYS_WRITE, [buf as usize, count], sent) }
}

/// `writev(2)`: as `write`, each buffer in turn.
///
/// # Safety
/// As `writev(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const IoVec, count: c_int) -> isize {
    // SAFETY: the caller gives `count` iovecs, each naming `len` readable
    // bytes.
    let each = |v: &IoVec| unsafe { std::slice::from_raw_parts(v.base, v.len) };
    let each = |v: &IoVec| crate::inproc::write_stdout(each(v)).unwrap_or(0);
    // SAFETY: as `writev(2)`.
    unsafe { vectored(fd, 1, (iov, count), each, SYS_WRITEV, sent) }
}

/// After a write of `r` bytes to `fd`: a paired connection held for
/// answers on this thread ([`crate::inline`]) reads it. `r` is returned.
fn sent(fd: c_int, r: isize) -> isize {
    if r > 0 {
        crate::inline::after_send(fd);
    }
    r
}

const SYS_SENDTO: c_long = 44;
const SYS_SENDMSG: c_long = 46;

/// `send(2)`: `sendto` without an address.
///
/// # Safety
/// As `send(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn send(fd: c_int, buf: *const u8, len: usize, flags: c_int) -> isize {
    // SAFETY: send(2) is sendto(2) without an address.
    unsafe { sendto(fd, buf, len, flags, std::ptr::null(), 0) }
}

/// `sendto(2)`: as `write`, for a client's socket.
///
/// # Safety
/// As `sendto(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sendto(
    fd: c_int,
    buf: *const u8,
    len: usize,
    flags: c_int,
    addr: *const u8,
    addr_len: u32,
) -> isize {
    // SAFETY: the caller's arguments, passed through.
    let r = unsafe {
        syscall(
            SYS_SENDTO,
            fd as c_long,
            buf,
            len,
            flags as c_long,
            addr,
            addr_len as c_long,
        ) as isize
    };
    sent(fd, r)
}

/// `sendmsg(2)`: as `send`.
///
/// # Safety
/// As `sendmsg(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const c_void, flags: c_int) -> isize {
    // SAFETY: the caller's arguments, passed through.
    let r = unsafe { syscall(SYS_SENDMSG, fd as c_long, msg, flags as c_long) as isize };
    sent(fd, r)
}

/// libc's definition of `name`, looked up once into `slot`.
fn next(slot: &AtomicUsize, name: &CStr) -> usize {
    let mut real = slot.load(Ordering::Acquire);
    if real == 0 {
        // SAFETY: dlsym with a NUL-terminated name.
        real = unsafe { dlsym(RTLD_NEXT, name.as_ptr()) } as usize;
        slot.store(real, Ordering::Release);
    }
    real
}

type GetEnv = unsafe extern "C" fn(*const c_char) -> *const c_char;

/// `getenv(3)` (exported, so shared libraries get it too): a member's own
/// environment on a thread that acts for it, else libc's.
///
/// # Safety
/// As `getenv(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getenv(name: *const c_char) -> *const c_char {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: `name` is a C string, as getenv requires.
    unsafe { env_lookup(&REAL, c"getenv", name) }
}

/// `secure_getenv(3)`: as `getenv` (the binary is never set-user-ID).
///
/// # Safety
/// As `secure_getenv(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn secure_getenv(name: *const c_char) -> *const c_char {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: `name` is a C string, as secure_getenv requires.
    unsafe { env_lookup(&REAL, c"secure_getenv", name) }
}

/// # Safety
/// `name` must be null or a C string.
unsafe fn env_lookup(slot: &AtomicUsize, symbol: &CStr, name: *const c_char) -> *const c_char {
    if name.is_null() {
        return std::ptr::null();
    }
    // SAFETY: a C string, as the caller promises.
    if let Some(value) = crate::inproc::getenv(unsafe { CStr::from_ptr(name) }) {
        return value;
    }
    let real = next(slot, symbol);
    if real == 0 {
        return std::ptr::null();
    }
    // SAFETY: libc's function of that name, which has this signature.
    unsafe { std::mem::transmute::<usize, GetEnv>(real)(name) }
}

type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
type PthreadCreate =
    unsafe extern "C" fn(*mut u64, *const c_void, StartRoutine, *mut c_void) -> c_int;

/// A thread started on behalf of a member run in this process.
struct Start {
    routine: StartRoutine,
    arg: *mut c_void,
    ctx: std::sync::Arc<crate::inproc::Context>,
}

extern "C" fn start_for_member(start: *mut c_void) -> *mut c_void {
    // SAFETY: `pthread_create` below boxed a `Start` for this thread alone.
    let start = unsafe { Box::from_raw(start as *mut Start) };
    let _scope = crate::inproc::Scope::enter(start.ctx);
    (start.routine)(start.arg)
}

/// `pthread_create(3)` (exported): a thread started while acting for a
/// member run in this process acts for it too.
///
/// # Safety
/// As `pthread_create(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut u64,
    attr: *const c_void,
    routine: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let real = next(&REAL, c"pthread_create");
    if real == 0 {
        return 11; // EAGAIN
    }
    // SAFETY: libc's pthread_create, which has this signature.
    let real = unsafe { std::mem::transmute::<usize, PthreadCreate>(real) };
    let Some(ctx) = crate::inproc::current() else {
        // SAFETY: the caller's arguments, passed through.
        return unsafe { real(thread, attr, routine, arg) };
    };
    let start = Box::into_raw(Box::new(Start { routine, arg, ctx }));
    // SAFETY: the caller's thread and attributes, our routine and its box.
    let r = unsafe { real(thread, attr, start_for_member, start as *mut c_void) };
    if r != 0 {
        // SAFETY: not started: the box is still ours.
        drop(unsafe { Box::from_raw(start) });
    }
    r
}

/// Forks the zygote members' processes come from, then runs the member
/// `FMERGE_RUN_MEMBER` names instead of `main`.
extern "C" fn run_member(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
    // First: the warm server must be a copy of the binary before any of
    // this runs (each of its processes runs the rest as a start would).
    // SAFETY: constructors run before main, on the only thread there is
    // yet; argv holds argc strings.
    unsafe { crate::warm::serve_if_asked(argc, argv as *const *const u8) };
    if crate::members().iter().any(|m| m.run.is_some()) {
        crate::inproc::install_panic_note();
    }
    // Only members that need a process of their own need the zygote.
    let env: Vec<_> = std::env::vars_os().collect();
    // (A member that serves HTTP itself runs here, as a server.)
    if crate::members().iter().any(|m| {
        m.name != crate::caller()
            && m.mode != crate::Mode::Http
            && !crate::member::runs_here(m, &crate::member::settings(m.name, &env))
    }) {
        // SAFETY: constructors run before main, on the only thread there is
        // yet; argv lives as long as the process.
        unsafe { crate::zygote::start(argc, argv as *const *const u8) };
    }
    let Some(name) = std::env::var_os(crate::RUN_MEMBER_VAR) else {
        crate::servers::start_all();
        return;
    };
    let name = name.to_string_lossy().into_owned();
    let Some(member) = crate::member_named(&name) else {
        let known: Vec<&str> = crate::members().iter().map(|m| m.name).collect();
        eprintln!(
            "error: {}={name} names no member of this merged binary",
            crate::RUN_MEMBER_VAR
        );
        eprintln!(
            "fix: unset {} or set it to one of: {}",
            crate::RUN_MEMBER_VAR,
            known.join(", ")
        );
        std::process::exit(2);
    };
    // SAFETY: constructors run before main, on the only thread there is yet.
    unsafe { std::env::remove_var(crate::RUN_MEMBER_VAR) };
    rewrite::activate(member.name, crate::rewrites());
    // SAFETY: the member's C main, with the process's own argc and argv.
    let code = unsafe { (member.main)(argc, argv as *const *const u8) };
    // The C library's exit, not std's: the member's `main` went through
    // std's runtime, which flushed stdout and marked this thread as the one
    // exiting; `std::process::exit` would abort as a second exit.
    // SAFETY: ends the process as the member's own `main` returning would.
    unsafe { crate::sys::exit(code) }
}

#[used]
#[unsafe(link_section = ".init_array")]
static RUN_MEMBER: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = run_member;
