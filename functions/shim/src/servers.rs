//! Members that serve HTTP themselves (of-watchdog's `http` mode): each
//! callee's `main` runs in this process for as long as the process does, on
//! a thread of its own with its own environment ([`crate::inproc::serve`]),
//! as its own of-watchdog would have started it; the port it listens on is
//! moved to a free one on 127.0.0.1 (the interposed `bind`), so that no two
//! members collide on the `:3000` every template uses and none listens
//! outside the pod; and a call to it through the gateway is forwarded to
//! that port as the gateway and its of-watchdog would have forwarded it
//! ([`forward`]): `/function/<name>` taken off the path, its
//! `exec_timeout` (or a shorter `X-Timeout`) answered with an empty 504, a
//! server that closes without a reply with an empty 500, both with
//! of-watchdog's `X-Duration-Seconds` and `X-OpenFaaS-Internal` headers.

use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::cgi;
use crate::http::{self, Framing, Request};
use crate::relay::{self, Upstream};
use crate::{Member, Mode};

/// How long a call waits for a member's server to listen, as the gateway
/// waits for a function's pod to become ready.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A port a member's server asked for and the one it has.
struct Bound {
    member: String,
    asked: u16,
    port: u16,
}

/// Every member's bound ports; a server that ended is `ended`.
struct Servers {
    bound: Vec<Bound>,
    ended: Vec<(String, i32)>,
}

static SERVERS: Mutex<Servers> = Mutex::new(Servers {
    bound: Vec::new(),
    ended: Vec::new(),
});
static CHANGED: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, Servers> {
    SERVERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the server of every callee that serves HTTP itself, each on a
/// thread of its own: from the binary's start, in the caller's process.
pub fn start_all() {
    for m in crate::members() {
        // A handler library whose `handle` is called directly needs no
        // server: its template's `main` never runs.
        if m.mode != Mode::Http
            || m.name == crate::caller()
            || m.handle
                .as_ref()
                .is_some_and(crate::Handle::takes_its_shape)
        {
            continue;
        }
        let Some(entry) = m.run else { continue };
        let name = m.name;
        let own = crate::member::resident(name).env;
        let started = crate::inproc::thread().spawn(move || {
            let code = crate::inproc::serve(name, entry, own);
            // Its own process would have ended, and its of-watchdog with
            // it ("Forked function has terminated"): calls to it fail from
            // now on, as they would until its pod restarted.
            eprintln!("fmerge: the server of {name} ended with exit code {code}");
            lock().ended.push((name.to_string(), code));
            CHANGED.notify_all();
        });
        if let Err(e) = started {
            eprintln!("fmerge: cannot start the server of {name}: {e}");
        }
    }
}

/// Notes that `member`'s server, which asked for port `asked`, listens on
/// `port` of 127.0.0.1.
pub fn bound(member: &str, asked: u16, port: u16) {
    lock().bound.push(Bound {
        member: member.to_string(),
        asked,
        port,
    });
    CHANGED.notify_all();
}

/// The port `member`'s server listens on: the one it asked for that its
/// `upstream_url` names, else the first it bound; waits until it listens.
fn port_of(member: &Member, within: Duration) -> Result<u16, String> {
    let wanted = crate::member::resident(member.name).settings.upstream_port;
    let deadline = Instant::now() + within;
    let mut servers = lock();
    loop {
        let mine = || servers.bound.iter().filter(|b| b.member == member.name);
        let found = match wanted {
            Some(w) => mine().find(|b| b.asked == w).or_else(|| mine().next()),
            None => mine().next(),
        };
        if let Some(b) = found {
            return Ok(b.port);
        }
        if let Some((_, code)) = servers.ended.iter().find(|(n, _)| n == member.name) {
            return Err(format!(
                "the server of {} ended with exit code {code}",
                member.name
            ));
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "the server of {} did not listen within {within:?}",
                member.name
            ));
        }
        servers = CHANGED
            .wait_timeout(servers, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// The limit of a call to `member`: its `exec_timeout`, lowered by a
/// shorter `X-Timeout` of the request, as of-watchdog's `getTimeout`.
pub(crate) fn limit(member: &Member, req: &Request) -> Option<Duration> {
    let own = crate::member::resident(member.name).settings.timeout;
    let asked = req
        .header("X-Timeout")
        .and_then(cgi::parse_go_duration)
        .filter(|d| !d.negative)
        .map(|d| d.value);
    match (own, asked) {
        (Some(own), Some(asked)) if asked <= own => Some(asked),
        (None, Some(asked)) if asked.is_zero() => None,
        (own, _) => own,
    }
}

/// `req`, a call to `member` through the gateway, as that member's server
/// receives it: the request line without `/function/<name>`.
fn as_received(req: &Request) -> Vec<u8> {
    let target = target_received(req);
    let line_end = req.raw.windows(2).position(|w| w == b"\r\n").unwrap_or(0);
    let mut out = format!("{} {target} HTTP/1.{}", req.method, req.minor).into_bytes();
    out.extend_from_slice(&req.raw[line_end..]);
    out
}

/// The target of `req`, a call through the gateway, as the member's
/// server receives it: without `/function/<name>`.
pub(crate) fn target_received(req: &Request) -> String {
    let (_, rest, query) = cgi::function_target(&req.target).unwrap_or(("", "", None));
    let path = if rest.is_empty() { "/" } else { rest };
    match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    }
}

/// of-watchdog's answer when the function gave none: empty, with its
/// duration and mark.
pub(crate) fn empty(client: &mut dyn Write, status: u16, started: Instant) -> io::Result<bool> {
    let reason = http::reason(status);
    write!(
        client,
        "HTTP/1.1 {status} {reason}\r\nX-Duration-Seconds: {:.6}\r\nX-Openfaas-Internal: of-watchdog\r\nContent-Length: 0\r\n\r\n",
        started.elapsed().as_secs_f64()
    )?;
    client.flush()?;
    Ok(true)
}

/// Forwards `req`, a call to `member` (which serves HTTP itself), to its
/// server in this process and its reply to `client`, as of-watchdog would
/// have; whether the client connection can stay open.
pub fn forward(
    slot: &mut Option<Upstream>,
    member: &Member,
    req: &Request,
    client: &mut dyn Write,
) -> io::Result<bool> {
    let started = Instant::now();
    let limit = limit(member, req);
    let deadline = limit.map(|l| started + l);
    let port = match port_of(member, limit.unwrap_or(READY_WITHIN).min(READY_WITHIN)) {
        Ok(port) => port,
        Err(why) => {
            eprintln!("fmerge: a call to {}: {why}", member.name);
            return empty(client, 500, started);
        }
    };
    let sent = send(slot, port, req, deadline);
    let head = match sent {
        Ok(Some(head)) => head,
        Ok(None) => {
            *slot = None;
            return empty(client, 500, started);
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            *slot = None;
            eprintln!(
                "fmerge: {} killed due to exec_timeout: {:?}",
                member.name,
                limit.unwrap_or_default()
            );
            return empty(client, 504, started);
        }
        Err(e) => {
            *slot = None;
            eprintln!("fmerge: a call to {}: {e}", member.name);
            return empty(client, 500, started);
        }
    };
    let up = slot.as_mut().expect("the reply came on it");
    // of-watchdog copies the function's headers and adds its duration.
    let end = head.raw.len() - 2;
    client.write_all(&head.raw[..end])?;
    write!(
        client,
        "X-Duration-Seconds: {:.6}\r\n\r\n",
        started.elapsed().as_secs_f64()
    )?;
    let framing = http::response_framing(&req.method, &head)?;
    let copied = copy_body(up, framing, client, deadline);
    client.flush()?;
    let keep = copied.is_ok() && http::response_keeps_alive(&head, framing);
    if !keep {
        *slot = None;
    }
    match copied {
        Ok(()) => Ok(keep),
        // Part of the reply is out: the client learns of the failure by
        // the connection closing, as from of-watchdog's cut copy.
        Err(e) => Err(io::Error::new(io::ErrorKind::BrokenPipe, e)),
    }
}

/// Sends `req` to the member's server on `port` (on the connection in
/// `slot` where it may be reused) and reads the reply's head by `deadline`.
fn send(
    slot: &mut Option<Upstream>,
    port: u16,
    req: &Request,
    deadline: Option<Instant>,
) -> io::Result<Option<http::ResponseHead>> {
    let dest = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    if slot
        .as_ref()
        .is_some_and(|u| u.writer.peer_addr().ok() != Some(dest))
    {
        *slot = None;
    }
    let up = relay::connection(slot, dest)?;
    up.writer.write_all(&as_received(req))?;
    read_head(up, deadline)
}

fn read_head(
    up: &mut Upstream,
    deadline: Option<Instant>,
) -> io::Result<Option<http::ResponseHead>> {
    loop {
        set_deadline(up, deadline)?;
        let head = http::read_response_head(&mut up.reader)?;
        match head {
            // Interim replies (100 Continue) were answered to the client by
            // the stand-in already.
            Some(h) if h.status < 200 && h.status != 101 => continue,
            other => return Ok(other),
        }
    }
}

fn set_deadline(up: &Upstream, deadline: Option<Instant>) -> io::Result<()> {
    let left = match deadline {
        Some(d) => Some(
            d.checked_duration_since(Instant::now())
                .filter(|l| !l.is_zero())
                .ok_or(io::ErrorKind::TimedOut)?,
        ),
        None => None,
    };
    up.writer.set_read_timeout(left)
}

/// Copies the reply's body to `client` as it comes, until `deadline`
/// ([`relay::copy_body`]).
fn copy_body(
    up: &mut Upstream,
    framing: Framing,
    client: &mut dyn Write,
    deadline: Option<Instant>,
) -> io::Result<()> {
    set_deadline(up, deadline)?;
    relay::copy_body(up, framing, client)
}
