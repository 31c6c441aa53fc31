//! The connection layer: connections, served by hyper; the accept loop,
//! the connection cap, and what hyper and tokio leave to the server. For
//! the function's port and the metrics port alike.
//!
//! Every connection is accepted at once and served by hyper with its
//! limits set (`max_buf_size`, the header read timeout), so
//! that a probe is answered whoever holds the other connections. The cap
//! (`max_connections`) is kept by closing, when a new client arrives with
//! every slot taken, the keep-alive connection idle longest, by hyper's
//! graceful shutdown (its reply, if one is still being written, ends
//! first); where none is idle, the one that has waited longest for a whole
//! request head, outright, one whose head has begun to arrive (a slow
//! client's) before one nothing was read of yet. Idle ones go first: their
//! client has had its answer, while a new connection's head may be on its
//! way (closed before it is read, it would be a request lost, a probe's
//! among them, whenever clients reconnect faster than the server reads). A
//! connection inside a request is never closed for another; a function
//! request that finds every slot taken waits for one (see `request.rs`).
//!
//! Hand-written, for want of a library that does it: the eviction (hyper
//! and tower count connections or requests, neither closes idle ones to
//! make room), the write deadline (hyper has a header read timeout only),
//! a client's half-close told to its request (hyper either drops the
//! request or stops reading), and charging unfinished request heads to the
//! memory budget (see `io.rs`).

mod io;

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, mpsc, watch};
use tokio::time::Instant;

/// A reply as the connection layer's services give it to hyper.
pub(crate) type HttpResponse = hyper::Response<Full<Bytes>>;

/// hyper's read buffer, per connection: a request head (line and headers)
/// larger than this gets 431. Go allows 1 MiB of headers, nginx 32 KiB.
pub(crate) const MAX_HEAD: usize = 64 << 10;

/// The bytes of a request head a connection may hold before they are
/// charged to the budget: enough for any probe, so that a spent budget
/// never refuses health; bounded by the connection cap.
const FREE_HEAD: usize = 4 << 10;

/// The budget's unit (see `body.rs`), and what a head is charged at a time.
pub(crate) const BUDGET_UNIT: usize = 1024;
const HEAD_CHARGE: u32 = 8;

/// How a port's connections are held.
pub(crate) struct Limits {
    pub max_connections: usize,
    /// How long a request head may take to arrive, and a keep-alive
    /// connection wait for its next (`None`: for ever).
    pub header_timeout: Option<Duration>,
    /// How long a reply may take to be written, from its request's head
    /// (see `io.rs`).
    pub write_timeout: Duration,
    /// The memory budget heads are charged to (`None`: no budget).
    pub budget: Option<Arc<Semaphore>>,
}

/// [`Conn::write_by`] before a request's reply is made (a probe's, the
/// metrics port's, hyper's own): the write deadline counts from the first
/// write that waits.
const NO_REPLY_YET: u64 = u64::MAX;

/// A connection's states.
const FRESH: u8 = 0;
const IDLE: u8 = 1;
const BUSY: u8 = 2;
const EVICTED: u8 = 3;

/// One connection as its requests and the connection layer see it.
pub(crate) struct Conn {
    id: u64,
    state: AtomicU8,
    /// When it entered its state, or (FRESH, IDLE) when the first byte of
    /// its next request came; in nanoseconds since [`origin`].
    since: AtomicU64,
    /// When its current request began to arrive: the accept for its first
    /// request, the first byte for a later one.
    started: AtomicU64,
    /// Requests taken up so far (the head charge is for the latest).
    requests: AtomicU64,
    evict: Notify,
    /// Evicted before its first request: closed outright.
    evicted_fresh: AtomicBool,
    /// Bytes of its first request's head were read (FRESH): a slow
    /// client's head, not one that may be on its way unread.
    head_begun: AtomicBool,
    /// When its reply must be written by (Go's `WriteTimeout` from the
    /// request's head; see [`Conn::replied`]), in nanoseconds since
    /// [`origin`]; [`NO_REPLY_YET`] until the request's reply is made.
    write_by: AtomicU64,
    /// Its reply was made past that deadline: not to be written.
    late: AtomicBool,
    /// The client closed its side (sticky), and who waits for it.
    half_closed: AtomicBool,
    closed_side: AtomicWaker,
}

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// `t` in nanoseconds since [`origin`] (0 before it), as the atomics of a
/// [`Conn`] hold times.
pub(crate) fn nanos(t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(origin()).as_nanos()).unwrap_or(u64::MAX)
}

impl Conn {
    /// When the request being served began to arrive.
    pub(crate) fn started(&self) -> Instant {
        origin() + Duration::from_nanos(self.started.load(Ordering::Relaxed))
    }

    /// Marks a request taken up; false if the connection was evicted.
    fn enter(&self) -> bool {
        let state = &self.state;
        let entered = state.fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
            (state != EVICTED).then_some(BUSY)
        });
        if entered.is_err() {
            return false;
        }
        self.write_by.store(NO_REPLY_YET, Ordering::Relaxed);
        self.late.store(false, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn leave(&self) {
        self.since.store(nanos(Instant::now()), Ordering::Relaxed);
        let _ = self
            .state
            .compare_exchange(BUSY, IDLE, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Bytes arrived while not in a request: the first of a later request
    /// starts its clock.
    fn arrived(&self, previous_requests: u64) {
        if self.requests.load(Ordering::Relaxed) != previous_requests {
            return;
        }
        match self.state.load(Ordering::Relaxed) {
            FRESH => self.head_begun.store(true, Ordering::Relaxed),
            IDLE => {
                let now = nanos(Instant::now());
                if self.started.load(Ordering::Relaxed) < self.since.load(Ordering::Relaxed) {
                    self.started.store(now, Ordering::Relaxed);
                }
            }
            _ => {}
        }
    }

    /// Marks it evicted unless it is inside a request; true if it was.
    fn try_evict(&self) -> bool {
        for from in [FRESH, IDLE] {
            if self
                .state
                .compare_exchange(from, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.evicted_fresh.store(from == FRESH, Ordering::Relaxed);
                self.evict.notify_one();
                return true;
            }
        }
        false
    }
}

/// A request taken up on its connection, left however it ends.
pub(crate) struct InRequest(Arc<Conn>);

impl InRequest {
    /// Takes a request of `conn` up; `None` if the connection layer has closed
    /// it to make room (the reply would go nowhere).
    pub(crate) fn enter(conn: &Arc<Conn>) -> Option<InRequest> {
        conn.enter().then(|| InRequest(conn.clone()))
    }
}

impl Drop for InRequest {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// The connections counted against the cap.
pub(crate) struct Connections {
    limits: Limits,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
}

impl Connections {
    pub(crate) fn new(limits: Limits) -> Connections {
        Connections {
            limits,
            open: Mutex::default(),
            next: AtomicU64::new(0),
        }
    }

    /// Counts a new connection in, closing the one idle longest (else the
    /// one that has waited longest for its head) if every slot is taken.
    fn admit(&self) -> Arc<Conn> {
        let now = nanos(Instant::now());
        let conn = Arc::new(Conn {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            state: AtomicU8::new(FRESH),
            since: AtomicU64::new(now),
            started: AtomicU64::new(now),
            requests: AtomicU64::new(0),
            evict: Notify::new(),
            evicted_fresh: AtomicBool::new(false),
            head_begun: AtomicBool::new(false),
            write_by: AtomicU64::new(NO_REPLY_YET),
            late: AtomicBool::new(false),
            half_closed: AtomicBool::new(false),
            closed_side: AtomicWaker::new(),
        });
        let mut open = lock(&self.open);
        while open.len() >= self.limits.max_connections {
            let oldest = open
                .values()
                .filter(|c| matches!(c.state.load(Ordering::Relaxed), FRESH | IDLE))
                .min_by_key(|c| {
                    let rank = match c.state.load(Ordering::Relaxed) {
                        IDLE => 0,
                        _ if c.head_begun.load(Ordering::Relaxed) => 1,
                        _ => 2,
                    };
                    (rank, c.since.load(Ordering::Relaxed))
                })
                .cloned();
            // Every connection is inside a request: this one is served
            // past the cap as far as its head (probes need no slot).
            let Some(oldest) = oldest else { break };
            if oldest.try_evict() {
                open.remove(&oldest.id);
            }
        }
        open.insert(conn.id, conn.clone());
        conn
    }

    fn forget(&self, conn: &Conn) {
        lock(&self.open).remove(&conn.id);
    }
}

/// Serves `listener`'s connections with the service `make` gives each
/// until `stop` turns true; then asks every connection to close once its
/// request is answered, and returns what closes when the last has closed.
/// `log` names the port in the accept errors logged.
pub(crate) async fn serve<M, S, F>(
    connections: &'static Connections,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    log: &'static str,
    make: M,
) -> mpsc::Receiver<()>
where
    M: Fn(Arc<Conn>) -> S,
    S: Fn(hyper::Request<Incoming>) -> F + Send + 'static,
    F: Future<Output = Result<HttpResponse, Infallible>> + Send + 'static,
{
    let (done_tx, done) = mpsc::channel::<()>(1);
    let mut accept_errors = 0u64;
    let mut backoff = Duration::from_millis(10);
    loop {
        let stream = tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors (EMFILE/ENFILE) or memory: the
                    // connection stays queued; retrying at once would spin.
                    if accept_errors == 0 {
                        eprintln!("{log}: accept failed: {e}; backing off up to 1s (further failures of this burst are counted, not logged)");
                    }
                    accept_errors += 1;
                    tokio::select! {
                        _ = stop.changed() => break,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
        };
        if accept_errors > 0 {
            eprintln!("{log}: accepting again after {accept_errors} failed accepts");
            accept_errors = 0;
            backoff = Duration::from_millis(10);
        }
        let _ = stream.set_nodelay(true);
        let conn = connections.admit();
        let service = make(conn.clone());
        tokio::spawn(connection(
            connections,
            stream,
            conn,
            service,
            stop.clone(),
            done_tx.clone(),
        ));
        // Lets the new connection read its head before the next accept can
        // evict it: a probe is answered before a flood of new connections
        // makes it the oldest.
        tokio::task::yield_now().await;
    }
    done
}

async fn connection<S, F>(
    connections: &'static Connections,
    stream: TcpStream,
    conn: Arc<Conn>,
    service: S,
    mut stop: watch::Receiver<bool>,
    _done: mpsc::Sender<()>,
) where
    S: Fn(hyper::Request<Incoming>) -> F + Send + 'static,
    F: Future<Output = Result<HttpResponse, Infallible>> + Send + 'static,
{
    let limits = &connections.limits;
    let io = io::Io::new(stream, conn.clone(), limits);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // hyper's header timer also runs while a keep-alive connection
        // waits for its next request: it is the idle timeout too (Go's
        // IdleTimeout defaults to ReadTimeout the same way).
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_HEAD)
        // hyper reads on while a request is served, and `io.rs` tells its
        // request when the client closes its side.
        .half_close(false);
    let served = builder.serve_connection(TokioIo::new(io), hyper::service::service_fn(service));
    tokio::pin!(served);
    let mut closing = false;
    loop {
        tokio::select! {
            // The connection first, in order: it wakes this task for every
            // request, the other two almost never, and a random start
            // would cost a draw at each wake.
            biased;
            _ = served.as_mut() => break,
            () = conn.evict.notified(), if !closing => {
                if conn.evicted_fresh.load(Ordering::Relaxed) {
                    // No request taken up: nothing of a reply to finish.
                    break;
                }
                served.as_mut().graceful_shutdown();
                closing = true;
            }
            _ = stop.changed(), if !closing => {
                served.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
    connections.forget(&conn);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
