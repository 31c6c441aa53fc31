//! Which connections the front takes, and on what slot: `max_connections`
//! regular slots, a reserve of [`PROBE_CONNECTIONS`] for probes, a waiting
//! room for function requests whose line came on the reserve, the 503 for
//! those past it, and the descriptors that all of them need.

use crate::serve::Server;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections accepted beyond `max_connections` so that health and ready
/// stay answerable while every slot is held (by stalled clients, say). One
/// is held only until the connection's first request line: a function
/// request gives it back and waits for a regular slot (see `waiting`), so
/// that only probes keep them.
pub(crate) const PROBE_CONNECTIONS: usize = 16;

/// How long a connection of that reserve may take to send its request.
pub(crate) const PROBE_HEADER_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) enum Slot {
    Regular(OwnedSemaphorePermit),
    /// One of [`PROBE_CONNECTIONS`], taken while every regular slot is.
    Probe(OwnedSemaphorePermit),
}

/// A regular connection slot if one is free, else one of the reserve, else
/// whichever frees first.
pub(crate) async fn take_slot(server: &Server, reserve: &Arc<Semaphore>) -> Slot {
    if let Ok(p) = server.connections.clone().try_acquire_owned() {
        return Slot::Regular(p);
    }
    if let Ok(p) = reserve.clone().try_acquire_owned() {
        return Slot::Probe(p);
    }
    tokio::select! {
        p = server.connections.clone().acquire_owned() => Slot::Regular(p.expect("never closed")),
        p = reserve.clone().acquire_owned() => Slot::Probe(p.expect("never closed")),
    }
}

/// A regular slot for a function request whose line came on a probe slot,
/// by `deadline`; `None` if as many wait already, or none frees in time.
pub(crate) async fn wait_for_slot(
    server: &Server,
    deadline: Option<tokio::time::Instant>,
) -> Option<OwnedSemaphorePermit> {
    let _waiting = server.waiting.clone().try_acquire_owned().ok()?;
    let slot = server.connections.clone().acquire_owned();
    match deadline {
        None => slot.await.ok(),
        Some(deadline) => tokio::time::timeout_at(deadline, slot).await.ok()?.ok(),
    }
}

/// How long a refused connection is kept for its 503 to be written and
/// read: it holds no slot, so it must not stay for long.
const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// Answers 503 with `Retry-After` to a function request that found no
/// connection slot, and closes its connection.
pub(crate) async fn refuse(server: &Server, mut stream: TcpStream) {
    let mut r = crate::Error::with_status(
        503,
        format!(
            "every connection slot (max_connections {}) stayed taken; retry later",
            server.settings.max_connections
        ),
    )
    .into_response_quiet();
    r.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from_static("1"),
    );
    let reply = crate::backstop::wire(&r);
    let _ = tokio::time::timeout(REFUSAL_TIME, async {
        stream.write_all(&reply).await?;
        stream.shutdown().await?;
        // Read what the client still sends, so that closing does not reset
        // the connection before it reads the reply.
        let mut rest = [0u8; 4096];
        while stream.read(&mut rest).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// Raises the soft limit on open files to the hard one, as Go's runtime
/// does at start: each connection handed to the handlers takes two.
pub(crate) fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `limit`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
