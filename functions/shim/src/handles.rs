//! Members in a handler-library template (a library's `handle` that the
//! template's `main` serves with hyper), whose `handle` fmerge exports
//! (`fmerge.handle.<name>`, written by fmerge's `workspace::handle`): a
//! call to one is answered by calling that `handle` on the calling thread
//! of the stand-in, acting for the member (its environment, its rewrites),
//! with no server of its own and no socket between the stand-in and it.
//! The reply is what its template's server would have sent and its
//! of-watchdog passed on: the status and headers `handle` gave, its body
//! with a `Content-Length` and a `Date` (as hyper's server adds them),
//! of-watchdog's `X-Duration-Seconds`; a `handle`
//! that panics is of-watchdog's empty 500 (its server's connection closed
//! without a reply), one past the member's `exec_timeout` (or a shorter
//! `X-Timeout`) its empty 504, while `handle` goes on, as it would behind
//! its server.
//!
//! Where `handle` has a shape the entry does not take (its `.shape` says
//! 0), the member's server is started as for any member that serves HTTP
//! ([`crate::servers`]).

use std::ffi::c_void;
use std::io::{self, Write};
use std::time::Instant;

use crate::http::Request;
use crate::inproc::Scope;
use crate::{HandleCall, Member, servers};

/// `member`'s `handle` entry, if it has one that takes its `handle`'s shape.
pub fn handled(member: &Member) -> Option<HandleCall> {
    let handle = member.handle.as_ref()?;
    handle.takes_its_shape().then_some(handle.call)
}

/// What [`crate::HandleReply`] was given.
type Got = Option<(u16, Vec<u8>, Vec<u8>)>;

unsafe extern "C" fn take(
    ctx: *mut c_void,
    status: u16,
    head: *const u8,
    head_len: usize,
    body: *const u8,
    body_len: usize,
) {
    let bytes = |p: *const u8, n: usize| match n {
        0 => Vec::new(),
        // SAFETY: the entry's promise: valid for reads during this call.
        _ => unsafe { std::slice::from_raw_parts(p, n) }.to_vec(),
    };
    // SAFETY: `ctx` is the `Got` of `answer`, alive during the call.
    let got = unsafe { &mut *(ctx as *mut Got) };
    *got = Some((status, bytes(head, head_len), bytes(body, body_len)));
}

/// Answers `req`, a call to `member` through the gateway, with `call`, its
/// `handle` entry; whether the client connection can stay open.
pub fn answer(
    member: &Member,
    call: HandleCall,
    req: &Request,
    client: &mut dyn Write,
) -> io::Result<bool> {
    let started = Instant::now();
    let limit = servers::limit(member, req);
    let target = servers::target_received(req);
    let mut headers = Vec::new();
    for (k, v) in &req.headers {
        headers.extend_from_slice(k.as_bytes());
        headers.extend_from_slice(b": ");
        headers.extend_from_slice(v.as_bytes());
        headers.extend_from_slice(b"\r\n");
    }
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
            call(
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
            eprintln!(
                "fmerge: {} killed due to exec_timeout: {:?}",
                member.name,
                limit.unwrap_or_default()
            );
            return servers::empty(client, 504, started);
        }
        _ => return servers::empty(client, 500, started),
    };
    let mut out = format!("HTTP/1.1 {status} {}\r\n", crate::http::reason(status)).into_bytes();
    let has = |name: &[u8]| {
        head.split(|&b| b == b'\n')
            .any(|l| l.len() > name.len() && l[..name.len()].eq_ignore_ascii_case(name))
    };
    let (has_length, has_date) = (has(b"content-length:"), has(b"date:"));
    out.extend_from_slice(&head);
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
    if !req.method.eq_ignore_ascii_case("HEAD") {
        out.extend_from_slice(&body);
    }
    client.write_all(&out)?;
    client.flush()?;
    Ok(true)
}
