//! Which destinations are "the gateway": the hosts of the base URLs fmerge
//! found in the members' code and of the gateway variables' values, the
//! addresses those names resolved to, and the original destination of each
//! connection redirected to the stand-in, so that the stand-in can relay
//! what it does not serve to where the client meant to go.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// A gateway a member may call: a host name (lower case, without a trailing
/// dot) or an IP literal, and its port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gateway {
    pub host: String,
    pub port: u16,
}

impl Gateway {
    /// The address, when the host is an IP literal.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

/// Parses `http://host[:port][/...]` (default port 80); anything else,
/// `https` included (TLS cannot be served in its place), is not a gateway.
pub fn parse_base_url(url: &str) -> Option<Gateway> {
    let scheme = url.get(..7)?;
    if !scheme.eq_ignore_ascii_case("http://") {
        return None;
    }
    let rest = &url[7..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None | Some("") => 80,
        Some(p) => p.parse().ok()?,
    };
    let host = normalize(host);
    (!host.is_empty()).then_some(Gateway { host, port })
}

/// A host name as compared: ASCII lower case, one trailing dot dropped.
pub fn normalize(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// The gateways of this binary: the table's URLs, then the values of the
/// table's variables in `env`.
pub fn gateways_from(
    urls: &[&str],
    vars: &[&str],
    env: impl Fn(&str) -> Option<String>,
) -> Vec<Gateway> {
    let mut out: Vec<Gateway> = Vec::new();
    let values = vars.iter().filter_map(|v| env(v));
    for g in urls
        .iter()
        .map(|u| u.to_string())
        .chain(values)
        .filter_map(|u| parse_base_url(&u))
    {
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// What the interposed `connect` and `getaddrinfo` share.
pub struct State {
    gateways: Vec<Gateway>,
    /// Whether any address is a gateway's: the one check a connect to
    /// anything else pays.
    any: AtomicBool,
    addrs: Mutex<HashSet<SocketAddr>>,
    /// Original destination by the local port of the redirected socket.
    origins: Mutex<HashMap<u16, SocketAddr>>,
}

impl State {
    pub fn new(gateways: Vec<Gateway>) -> State {
        let addrs: HashSet<SocketAddr> = gateways
            .iter()
            .filter_map(|g| Some(SocketAddr::new(g.ip()?, g.port)))
            .collect();
        State {
            any: AtomicBool::new(!addrs.is_empty()),
            addrs: Mutex::new(addrs),
            gateways,
            origins: Mutex::default(),
        }
    }

    /// The gateway whose host is `node`, if any.
    pub fn gateway_named(&self, node: &str) -> Option<&Gateway> {
        let node = normalize(node);
        self.gateways.iter().find(|g| g.host == node)
    }

    /// Remembers that `ip` is an address of `gateway`.
    pub fn remember(&self, gateway: &Gateway, ip: IpAddr) {
        lock(&self.addrs).insert(SocketAddr::new(ip, gateway.port));
        self.any.store(true, Ordering::Release);
    }

    /// Whether a connection to `dest` must go to the stand-in. A v4-mapped
    /// IPv6 destination is its IPv4 address.
    pub fn is_gateway(&self, dest: SocketAddr) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let dest = SocketAddr::new(dest.ip().to_canonical(), dest.port());
        lock(&self.addrs).contains(&dest)
    }

    /// Notes that the socket bound to local `port` meant to reach `dest`.
    pub fn set_origin(&self, port: u16, dest: SocketAddr) {
        lock(&self.origins).insert(port, dest);
    }

    /// Takes the original destination of the socket bound to local `port`.
    pub fn take_origin(&self, port: u16) -> Option<SocketAddr> {
        lock(&self.origins).remove(&port)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The data stays consistent even if a holder panicked: plain inserts.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// This binary's state, from the table and the environment, parsed once.
pub fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        State::new(gateways_from(
            crate::gateway_urls(),
            crate::gateway_vars(),
            |v| std::env::var(v).ok(),
        ))
    })
}

thread_local! {
    static BYPASS: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread's connects go where they are addressed.
pub fn bypassed() -> bool {
    BYPASS.try_with(Cell::get).unwrap_or(true)
}

/// Runs `f` with this thread's connects not redirected: the relay's way to
/// the real gateway.
pub fn with_bypass<T>(f: impl FnOnce() -> T) -> T {
    let before = BYPASS.with(|b| b.replace(true));
    let out = f();
    BYPASS.with(|b| b.set(before));
    out
}
