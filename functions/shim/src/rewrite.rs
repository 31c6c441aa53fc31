//! A member's own data stores and secrets, in its own process.
//!
//! `fmerge build --rewrite CALLEE:FROM=TO` changes a callee's literals in
//! the crates only it links. A literal in a crate the caller links too (the
//! team's Redis helper, with the cluster's host and the secret file every
//! function reads) cannot change without changing the caller. But a
//! watchdog-process member runs in a process of its own, so there the
//! rewrite applies where the literal is used: a host name FROM resolves as
//! TO's host (and a connection to FROM's port goes to TO's), a file FROM
//! opens as TO. Only in that member's process, or on the threads that act
//! for it when it runs in the caller's (the `inproc` module); never in the
//! caller's own.

use std::cell::Cell;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, OnceLock};

/// One rewrite of one member (the generated table's `REWRITES`).
pub struct Rewrite {
    /// The member's name, as in `/function/<name>`.
    pub member: &'static str,
    /// A host name, `host:port`, or an absolute file path.
    pub from: &'static str,
    pub to: &'static str,
}

/// What a rewrite's FROM or TO stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Host { host: String, port: Option<u16> },
    Path(String),
}

/// FROM or TO read as a target: an absolute path, or `host[:port]`.
pub fn target(text: &str) -> Option<Target> {
    if text.starts_with('/') {
        return Some(Target::Path(text.to_string()));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port.parse().ok()?)),
        None => (text, None),
    };
    let name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
    if host.is_empty() || !host.chars().all(name) {
        return None;
    }
    Some(Target::Host {
        host: crate::gateway::normalize(host),
        port,
    })
}

/// One member's rewrites in force: in its own process, or on the threads
/// that act for it.
pub struct Active {
    /// (FROM, TO) pairs, each side a [`Target`].
    pairs: Vec<(Target, Target)>,
    /// Addresses a rewritten host resolved to, with FROM's port and TO's.
    ports: Mutex<Vec<(IpAddr, u16, u16)>>,
}

static ACTIVE: OnceLock<Active> = OnceLock::new();

/// `member`'s rewrites of `table`, if it has any.
pub fn active_for(member: &str, table: &[Rewrite]) -> Option<Active> {
    let pairs: Vec<(Target, Target)> = table
        .iter()
        .filter(|r| r.member == member)
        .filter_map(|r| Some((target(r.from)?, target(r.to)?)))
        .collect();
    (!pairs.is_empty()).then(|| Active {
        pairs,
        ports: Mutex::new(Vec::new()),
    })
}

/// Puts `member`'s rewrites of `table` in force in this process (its
/// constructor calls it once it knows which member it runs).
pub fn activate(member: &str, table: &[Rewrite]) {
    if let Some(active) = active_for(member, table) {
        let _ = ACTIVE.set(active);
    }
}

/// What a thread acting for a member run in this process has in force
/// instead of this process's: the member's rewrites (null for none).
#[derive(Clone, Copy)]
pub enum OnThread {
    /// The thread acts for no member: this process's rewrites.
    Process,
    /// It acts for a member with these rewrites, alive while it does.
    Member(*const Active),
}

thread_local! {
    static ON_THREAD: Cell<OnThread> = const { Cell::new(OnThread::Process) };
}

/// Puts `on` in force on this thread (the `inproc` module's scopes do, as they
/// enter and leave); what was in force before.
pub fn set_on_thread(on: OnThread) -> OnThread {
    ON_THREAD
        .try_with(|c| c.replace(on))
        .unwrap_or(OnThread::Process)
}

/// Calls `f` with the rewrites in force on this thread: its member's when
/// it acts for one run in this process, else this process's.
fn with_active<T>(f: impl FnOnce(&Active) -> Option<T>) -> Option<T> {
    match ON_THREAD.try_with(Cell::get).unwrap_or(OnThread::Process) {
        // SAFETY: a member's rewrites stay alive while a thread acts for it
        // (the scope that set them holds the member).
        OnThread::Member(ptr) => f(unsafe { ptr.as_ref() }?),
        OnThread::Process => f(ACTIVE.get()?),
    }
}

/// Whether any rewrite is in force here: the cheap test before every other.
pub fn any() -> bool {
    with_active(|_| Some(())).is_some()
}

/// The host to resolve in place of `node`, with (FROM's port, TO's port)
/// when the rewrite names both.
pub fn host(node: &str) -> Option<(String, Option<(u16, u16)>)> {
    let node = crate::gateway::normalize(node);
    with_active(|active| {
        active.pairs.iter().find_map(|pair| match pair {
            (Target::Host { host, port: from }, Target::Host { host: to, port })
                if *host == node =>
            {
                Some((to.clone(), from.zip(*port)))
            }
            _ => None,
        })
    })
}

/// Notes that a rewritten host resolved to `ip`, whose connections on port
/// `ports.0` go to `ports.1`.
pub fn remember_port(ip: IpAddr, ports: (u16, u16)) {
    with_active(|active| {
        let mut seen = active.ports.lock().unwrap_or_else(|e| e.into_inner());
        if !seen.contains(&(ip, ports.0, ports.1)) {
            seen.push((ip, ports.0, ports.1));
        }
        Some(())
    });
}

/// The destination a connection to `dest` goes to instead, if a rewritten
/// host resolved to it with a port rewrite.
pub fn destination(dest: SocketAddr) -> Option<SocketAddr> {
    with_active(|active| {
        let seen = active.ports.lock().unwrap_or_else(|e| e.into_inner());
        let ip = dest.ip().to_canonical();
        seen.iter()
            .find(|(i, from, _)| *i == ip && *from == dest.port())
            .map(|(_, _, to)| SocketAddr::new(dest.ip(), *to))
    })
}

/// The file to open in place of `path`.
pub fn path(path: &str) -> Option<String> {
    with_active(|active| {
        active.pairs.iter().find_map(|pair| match pair {
            (Target::Path(from), Target::Path(to)) if from == path => Some(to.clone()),
            _ => None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_paths_or_hosts() {
        assert_eq!(
            target("/var/openfaas/secrets/redis-password"),
            Some(Target::Path("/var/openfaas/secrets/redis-password".into()))
        );
        assert_eq!(
            target("redis.openfaas-fn.svc.cluster.local."),
            Some(Target::Host {
                host: "redis.openfaas-fn.svc.cluster.local".into(),
                port: None
            })
        );
        assert_eq!(
            target("Redis-B:6380"),
            Some(Target::Host {
                host: "redis-b".into(),
                port: Some(6380)
            })
        );
        assert_eq!(target("redis://x:6379"), None);
        assert_eq!(target("host:port"), None);
        assert_eq!(target(""), None);
    }
}
