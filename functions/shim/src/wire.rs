//! What the launcher (`src/bin/fmerge-warm.rs`) and the warm server
//! (`warm.rs`) say to each other over the server's Unix socket; the one
//! place both read it from (the launcher is compiled alone and includes
//! this file by path, so only std). Descriptors travel as `SCM_RIGHTS`
//! ([`send_fds`], [`receive_fds`], which the zygote's calls use too).
//!
//! The launcher sends one request: its stdin, stdout, stderr and working
//! directory as descriptors, its arguments and its whole environment as
//! [`Request`]. The server answers with [`Reply`]s of [`REPLY_LEN`] bytes:
//! [`Reply::Started`] with the process's pid, then [`Reply::Ended`] with its
//! wait status; or [`Reply::Refused`] at once, and the launcher starts the
//! binary itself.

use std::ffi::{c_int, c_void};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The variable the launcher sets on the binary it starts itself: the
/// socket the binary's first process makes the warm server listen on.
/// The binary removes it before anything else reads the environment.
pub const WARM_VAR: &str = "FMERGE_WARM";

/// The descriptors a request carries: stdin, stdout, stderr and the
/// working directory.
pub const REQUEST_FDS: usize = 4;

/// The largest request (arguments and environment); a larger one is
/// refused, and the launcher starts the binary itself.
pub const MAX_REQUEST: usize = 256 * 1024;

/// One process to fork: the arguments it must have been started with
/// (the server's own, or it refuses) and its whole environment.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub args: Vec<Vec<u8>>,
    pub env: Vec<Vec<u8>>,
}

impl Request {
    /// `[len u32][argc u32]`, then each argument and each `KEY=value`,
    /// NUL-terminated.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0; 8];
        out[4..8].copy_from_slice(&(self.args.len() as u32).to_le_bytes());
        for s in self.args.iter().chain(&self.env) {
            out.extend_from_slice(s);
            out.push(0);
        }
        let len = (out.len() - 4) as u32;
        out[..4].copy_from_slice(&len.to_le_bytes());
        out
    }

    /// The request after its length prefix; `None` for anything else.
    pub fn decode(b: &[u8]) -> Option<Request> {
        let argc = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let mut strings: Vec<Vec<u8>> = match b.get(4..)? {
            [] => Vec::new(),
            [body @ .., 0] => body.split(|&c| c == 0).map(<[u8]>::to_vec).collect(),
            _ => return None,
        };
        if strings.len() < argc {
            return None;
        }
        let env = strings.split_off(argc);
        Some(Request { args: strings, env })
    }
}

/// The server's answers, each [`REPLY_LEN`] bytes: a tag and an `i32`.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// The process was forked: its pid.
    Started(i32),
    /// It ended: its wait status, as `waitpid` gives it.
    Ended(i32),
    /// Not served (other arguments, a request too large or unreadable):
    /// start the binary.
    Refused,
}

pub const REPLY_LEN: usize = 5;

impl Reply {
    pub fn encode(&self) -> [u8; REPLY_LEN] {
        let (tag, n) = match self {
            Reply::Started(pid) => (b'S', *pid),
            Reply::Ended(status) => (b'E', *status),
            Reply::Refused => (b'N', 0),
        };
        let mut out = [tag, 0, 0, 0, 0];
        out[1..].copy_from_slice(&n.to_le_bytes());
        out
    }

    pub fn decode(b: &[u8; REPLY_LEN]) -> Option<Reply> {
        let n = i32::from_le_bytes(b[1..].try_into().ok()?);
        match b[0] {
            b'S' => Some(Reply::Started(n)),
            b'E' => Some(Reply::Ended(n)),
            b'N' => Some(Reply::Refused),
            _ => None,
        }
    }

    pub fn read(stream: &mut UnixStream) -> Option<Reply> {
        let mut b = [0; REPLY_LEN];
        stream.read_exact(&mut b).ok()?;
        Reply::decode(&b)
    }

    pub fn write(&self, stream: &mut UnixStream) -> std::io::Result<()> {
        stream.write_all(&self.encode())
    }
}

unsafe extern "C" {
    fn sendmsg(fd: c_int, msg: *const MsgHdr, flags: c_int) -> isize;
    fn recvmsg(fd: c_int, msg: *mut MsgHdr, flags: c_int) -> isize;
}

const SOL_SOCKET: c_int = 1;
const SCM_RIGHTS: c_int = 1;
const MSG_NOSIGNAL: c_int = 0x4000;
const MSG_CMSG_CLOEXEC: c_int = 0x4000_0000;
const MSG_TRUNC: c_int = 0x20;

#[repr(C)]
struct IoVec {
    base: *mut c_void,
    len: usize,
}

/// glibc's `struct msghdr` (x86_64).
#[repr(C)]
struct MsgHdr {
    name: *mut c_void,
    namelen: u32,
    iov: *mut IoVec,
    iovlen: usize,
    control: *mut c_void,
    controllen: usize,
    flags: c_int,
}

impl MsgHdr {
    /// A message of one buffer, `rights` its control data, no address.
    fn of<const N: usize>(iov: &mut IoVec, rights: &mut Rights<N>) -> MsgHdr {
        MsgHdr {
            name: std::ptr::null_mut(),
            namelen: 0,
            iov,
            iovlen: 1,
            control: rights as *mut Rights<N> as *mut c_void,
            controllen: size_of::<Rights<N>>(),
            flags: 0,
        }
    }
}

/// A `cmsghdr` carrying exactly `N` descriptors, aligned as the kernel
/// reads it.
#[repr(C, align(8))]
struct Rights<const N: usize> {
    len: usize,
    level: c_int,
    kind: c_int,
    fds: [c_int; N],
}

/// Sends `bytes` in one `sendmsg` on the socket `fd`, with `fds`
/// attached; what `sendmsg` returns (the bytes sent, or -1). Also the
/// zygote's calls (a sequenced-packet socket: all or nothing).
pub fn send_fds<const N: usize>(fd: RawFd, bytes: &[u8], fds: [RawFd; N]) -> isize {
    let mut iov = IoVec {
        base: bytes.as_ptr() as *mut c_void,
        len: bytes.len(),
    };
    let mut rights = Rights {
        len: size_of::<Rights<N>>(),
        level: SOL_SOCKET,
        kind: SCM_RIGHTS,
        fds,
    };
    let msg = MsgHdr::of(&mut iov, &mut rights);
    // SAFETY: every pointer in `msg` is valid for its length.
    unsafe { sendmsg(fd, &msg, MSG_NOSIGNAL) }
}

/// What one `recvmsg` got: the bytes, whether the message was longer than
/// the buffer, and exactly `N` descriptors (any other count is closed).
pub struct Received<const N: usize> {
    pub len: usize,
    pub truncated: bool,
    pub fds: Option<[OwnedFd; N]>,
}

/// One `recvmsg` on the socket `fd` into `buf`.
pub fn receive_fds<const N: usize>(fd: RawFd, buf: &mut [u8]) -> std::io::Result<Received<N>> {
    let mut iov = IoVec {
        base: buf.as_mut_ptr() as *mut c_void,
        len: buf.len(),
    };
    let mut rights = Rights {
        len: 0,
        level: 0,
        kind: 0,
        fds: [-1; N],
    };
    let mut msg = MsgHdr::of(&mut iov, &mut rights);
    // SAFETY: every pointer in `msg` is valid for its length.
    let n = unsafe { recvmsg(fd, &mut msg, MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let rights_came = rights.level == SOL_SOCKET && rights.kind == SCM_RIGHTS;
    let fds = if rights_came && rights.len == size_of::<Rights<N>>() {
        // SAFETY: the kernel installed these descriptors for this process.
        Some(rights.fds.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }))
    } else {
        if rights_came {
            let count = rights.len.saturating_sub(16) / size_of::<c_int>();
            for fd in rights.fds.iter().take(count.min(N)) {
                // SAFETY: descriptors received with the message, owned here.
                drop(unsafe { OwnedFd::from_raw_fd(*fd) });
            }
        }
        None
    };
    Ok(Received {
        len: n as usize,
        truncated: msg.flags & MSG_TRUNC != 0,
        fds,
    })
}

/// Sends `request` with `fds` attached to its first byte.
pub fn send(stream: &mut UnixStream, request: &Request, fds: [RawFd; REQUEST_FDS]) -> bool {
    let bytes = request.encode();
    bytes.len() <= MAX_REQUEST
        && send_fds(stream.as_raw_fd(), &bytes[..1], fds) == 1
        && stream.write_all(&bytes[1..]).is_ok()
}

/// Receives one request and its descriptors; `None` for anything that is
/// not a whole one.
pub fn receive(stream: &mut UnixStream) -> Option<(Request, [OwnedFd; REQUEST_FDS])> {
    let mut first = [0u8; 1];
    let got = receive_fds::<REQUEST_FDS>(stream.as_raw_fd(), &mut first).ok()?;
    let fds = got.fds?;
    if got.len != 1 {
        return None;
    }
    let mut rest = [0u8; 3];
    stream.read_exact(&mut rest).ok()?;
    let len = u32::from_le_bytes([first[0], rest[0], rest[1], rest[2]]) as usize;
    if len > MAX_REQUEST {
        return None;
    }
    let mut body = vec![0; len];
    stream.read_exact(&mut body).ok()?;
    Some((Request::decode(&body)?, fds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_each_reply_read_back_as_written() {
        let r = Request {
            args: vec![b"/usr/local/bin/m".to_vec(), b"".to_vec(), b"-v".to_vec()],
            env: vec![b"A=1".to_vec(), b"Http_Path=/x".to_vec()],
        };
        assert_eq!(Request::decode(&r.encode()[4..]), Some(r));
        for reply in [Reply::Started(42), Reply::Ended(0x0900), Reply::Refused] {
            assert_eq!(Reply::decode(&reply.encode()), Some(reply));
        }
        assert_eq!(Request::decode(&[1, 0, 0, 0, b'a']), None, "unterminated");
        assert_eq!(Request::decode(&[2, 0, 0, 0, b'a', 0]), None, "one of two");
    }

    #[test]
    fn descriptors_travel_with_the_request() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let r = Request {
            args: vec![b"m".to_vec()],
            env: vec![b"K=v".to_vec()],
        };
        let (mut pr, pw) = UnixStream::pair().unwrap();
        assert!(send(&mut a, &r, [0, pw.as_raw_fd(), 2, 0]));
        drop(pw);
        let (got, fds) = receive(&mut b).unwrap();
        assert_eq!(got, r);
        let mut out = UnixStream::from(fds.into_iter().nth(1).unwrap());
        out.write_all(b"hi").unwrap();
        drop(out);
        let mut s = String::new();
        pr.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hi");
    }
}
