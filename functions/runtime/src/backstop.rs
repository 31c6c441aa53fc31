//! The front's backstop for handlers that never yield. A function request
//! runs on the handlers' runtime, on its connection's task, where
//! `exec_timeout` is a tokio timer and a client's disconnect is seen by
//! hyper: a handler that blocks its thread (or spins) stops both. The front
//! thread checks every [`TICK`] the requests running: one past its limit it
//! answers itself (a 504 written to the socket, which is then shut for
//! writing), one whose client has gone it counts as such (499); either way
//! the handler is abandoned, as of-watchdog abandons its upstream. A
//! connection handed over whose first request no handler thread has taken
//! up by `exec_timeout` (every thread blocked) is answered 504 the same way:
//! of-watchdog's `exec_timeout` counts from the request's arrival too. So is
//! the next request of a keep-alive connection: while as many handlers are
//! abandoned as there are handler threads (all may be blocked), the front
//! peeks at the idle connections, and answers one whose bytes no handler
//! has read `exec_timeout` after it first saw them.

use crate::Response;
use crate::deadline::ReadClock;
use crate::limits::{Admitted, timed_out};
use crate::request::Record;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How often the front looks for requests past their limit: how late past
/// `exec_timeout` a blocked handler's 504 may come.
pub(crate) const TICK: Duration = Duration::from_millis(50);

/// The connections handed to the handlers' runtime, as the front sees them.
pub(crate) struct Backstop {
    connections: Mutex<Vec<Weak<Watched>>>,
    /// The handlers' threads: with as many handlers abandoned, every thread
    /// may be blocked, and idle connections are peeked at.
    threads: usize,
    exec_timeout: Duration,
    access_log: bool,
    /// Whether the last check found the handler threads stalled.
    stalled: AtomicBool,
}

/// One connection: a second handle on its socket, and its request running
/// now, if any.
pub(crate) struct Watched {
    function: &'static str,
    socket: TcpStream,
    /// Its read deadline (kept here: one allocation per connection).
    pub(crate) clock: ReadClock,
    state: Mutex<State>,
}

// One per connection, replaced in place: boxing `Running` would allocate
// once per request.
#[allow(clippy::large_enum_variant)]
enum State {
    /// Handed over, its first request not yet taken up by a handler thread.
    Waiting {
        deadline: Instant,
        limit: Duration,
        record: Record,
    },
    Idle,
    /// Idle, and bytes of its next request seen by the front `since` then
    /// (while the handler threads looked stalled), not read by a handler.
    Pending {
        since: Instant,
    },
    Running {
        /// None: no limit.
        deadline: Option<Instant>,
        limit: Duration,
        record: Record,
        admitted: Admitted,
    },
    /// The front answered 504, or found the client gone, while its request
    /// ran: its handler has not come back (it may block a thread).
    Abandoned,
    /// The front answered 504, or found the client gone; the connection
    /// takes no more requests.
    Closed,
}

impl Backstop {
    pub(crate) fn new(threads: usize, exec_timeout: Duration, access_log: bool) -> Backstop {
        Backstop {
            connections: Mutex::default(),
            threads,
            exec_timeout,
            access_log,
            stalled: AtomicBool::new(false),
        }
    }

    /// Watches a connection handed over now; `waiting`: its first
    /// request's `exec_timeout` and record, for the front to answer it if
    /// no handler thread takes it up in time.
    pub(crate) fn watch(
        &self,
        function: &'static str,
        socket: TcpStream,
        clock: ReadClock,
        waiting: Option<(Duration, Record)>,
    ) -> Arc<Watched> {
        let state = match waiting {
            Some((limit, record)) => State::Waiting {
                deadline: Instant::now() + limit,
                limit,
                record,
            },
            None => State::Idle,
        };
        let watched = Arc::new(Watched {
            function,
            socket,
            clock,
            state: Mutex::new(state),
        });
        lock(&self.connections).push(Arc::downgrade(&watched));
        watched
    }

    /// Answers the requests past their limit, counts those whose client has
    /// gone; forgets closed connections. While the handler threads look
    /// stalled (and on the check after), looks at the idle connections too.
    pub(crate) fn check(&self, now: Instant) {
        let live: Vec<Arc<Watched>> = {
            let mut connections = lock(&self.connections);
            connections.retain(|w| w.strong_count() > 0);
            connections.iter().filter_map(Weak::upgrade).collect()
        };
        let abandoned = live.iter().filter(|w| w.check(now)).count();
        let stalled = !self.exec_timeout.is_zero() && abandoned >= self.threads;
        if self.stalled.swap(stalled, Ordering::Relaxed) || stalled {
            for w in &live {
                w.check_idle(now, stalled, self);
            }
        }
    }

    /// Whether every connection left is one the front has answered (its
    /// handler still blocked): the drain need not wait for those.
    pub(crate) fn only_abandoned(&self) -> bool {
        lock(&self.connections)
            .iter()
            .filter_map(Weak::upgrade)
            .all(|w| matches!(*lock(&w.state), State::Closed | State::Abandoned))
    }
}

impl Watched {
    /// A handler thread takes up the connection: false if the front has
    /// answered its first request already.
    pub(crate) fn take_up(&self) -> bool {
        let mut state = lock(&self.state);
        match std::mem::replace(&mut *state, State::Idle) {
            State::Waiting { record, .. } => {
                record.forget();
                true
            }
            closed @ (State::Closed | State::Abandoned) => {
                *state = closed;
                false
            }
            _ => true,
        }
    }

    /// Marks a request running until `deadline` (`None`: no limit; `limit`
    /// for its reply), counted by `record` however it ends and in flight
    /// until answered. [`Running::done`] gives the record back unless the
    /// front has answered meanwhile. `None` if the front has answered this
    /// request already (it waited for a thread): it is not to be run.
    pub(crate) fn running(
        &self,
        deadline: Option<Instant>,
        limit: Duration,
        record: Record,
        admitted: Admitted,
    ) -> Option<Running<'_>> {
        let mut state = lock(&self.state);
        let deadline = match *state {
            State::Closed | State::Abandoned => {
                record.forget();
                return None;
            }
            // Seen waiting by the front: its limit counts from then.
            State::Pending { since } => deadline.map(|d| d.min(since + limit)),
            _ => deadline,
        };
        *state = State::Running {
            deadline,
            limit,
            record,
            admitted,
        };
        Some(Running { watched: self })
    }

    /// Whether the client closed or reset the connection while its request
    /// runs (a peek sees the end of the stream, as nginx checks for its
    /// 499). A client that pipelines its next request is still there.
    fn client_gone(&self) -> bool {
        match self.socket.peek(&mut [0u8; 1]) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        }
    }

    /// Whether bytes wait in the socket, unread (a peek; the end of the
    /// stream is none).
    fn bytes_pending(&self) -> bool {
        matches!(self.socket.peek(&mut [0u8; 1]), Ok(n) if n > 0)
    }

    /// Checks a request waiting or running; true if the connection's
    /// handler is abandoned (the front answered while it ran).
    fn check(&self, now: Instant) -> bool {
        let mut state = lock(&self.state);
        match *state {
            State::Waiting { deadline, .. } if deadline <= now => {
                let State::Waiting { limit, record, .. } =
                    std::mem::replace(&mut *state, State::Closed)
                else {
                    unreachable!("matched above")
                };
                self.answer_504(limit, record);
            }
            State::Running { deadline, .. } => self.check_running(&mut state, deadline, now),
            _ => {}
        }
        matches!(*state, State::Abandoned)
    }

    /// While the handler threads look `stalled`: notes when bytes of an
    /// idle connection's next request are first seen, unread by a handler,
    /// and answers 504 once they have waited `exec_timeout`. Otherwise (or
    /// once a handler reads them) the connection is idle again.
    fn check_idle(&self, now: Instant, stalled: bool, backstop: &Backstop) {
        let mut state = lock(&self.state);
        match *state {
            State::Idle if stalled && self.clock.unread() && self.bytes_pending() => {
                *state = State::Pending { since: now };
            }
            State::Pending { since } => {
                if !stalled || !self.clock.unread() || !self.bytes_pending() {
                    *state = State::Idle;
                } else if since + backstop.exec_timeout <= now {
                    *state = State::Closed;
                    let record = self.unread_record(since, backstop.access_log);
                    self.answer_504(backstop.exec_timeout, record);
                }
            }
            _ => {}
        }
    }

    /// The record of a request seen `since` then whose headers no handler
    /// has read: its method and target from the bytes waiting.
    fn unread_record(&self, since: Instant, log: bool) -> Record {
        let mut head = [0u8; 1024];
        let n = self.socket.peek(&mut head).unwrap_or(0);
        let line = crate::handoff::FirstLine {
            read: bytes::Bytes::copy_from_slice(&head[..n]),
            probe: false,
        };
        let (method, log) = line.method_and_target(log);
        Record::start(self.function, crate::call::UNVERIFIED, method, log).since(since)
    }

    fn check_running(&self, state: &mut State, deadline: Option<Instant>, now: Instant) {
        let late = deadline.is_some_and(|d| d <= now);
        if !late && !self.client_gone() {
            return;
        }
        let State::Running {
            limit,
            record,
            admitted,
            ..
        } = std::mem::replace(state, State::Abandoned)
        else {
            unreachable!("matched by the caller")
        };
        if !late {
            // Dropped unfinished: counted as the client's doing (499).
            drop((record, admitted));
            let _ = self.socket.shutdown(Shutdown::Both);
            return;
        }
        self.answer_504(limit, record);
        drop(admitted);
    }

    fn answer_504(&self, limit: Duration, record: Record) {
        let response = timed_out(self.function, limit);
        // The socket is non-blocking: a reply that does not fit its send
        // buffer (a client that reads nothing) is cut, as the write
        // deadline would cut it.
        let mut socket = &self.socket;
        let _ = socket.write_all(&wire(&response));
        let _ = self.socket.shutdown(Shutdown::Write);
        record.finish(response.status(), response.body().len());
    }
}

/// `response` as HTTP/1.1 bytes, for a reply the front writes itself on a
/// connection it then closes.
pub(crate) fn wire(response: &Response) -> Vec<u8> {
    let body = response.body();
    let status = response.status();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    for (name, value) in response.headers() {
        if let Ok(value) = value.to_str()
            && name != http::header::CONNECTION
        {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A request marked running; see [`Watched::running`].
pub(crate) struct Running<'a> {
    watched: &'a Watched,
}

impl Running<'_> {
    /// The request's record, or `None` if the front answered it.
    pub(crate) fn done(self) -> Option<Record> {
        self.take()
    }

    /// The handler is back: a request the front answered meanwhile leaves
    /// its connection closed.
    fn take(&self) -> Option<Record> {
        let mut state = lock(&self.watched.state);
        match std::mem::replace(&mut *state, State::Idle) {
            State::Running { record, .. } => Some(record),
            State::Closed | State::Abandoned => {
                *state = State::Closed;
                None
            }
            State::Idle => None,
            other => {
                *state = other;
                None
            }
        }
    }
}

impl Drop for Running<'_> {
    /// Dropped before done (the client went away): the record is dropped
    /// with it, and counts so.
    fn drop(&mut self) {
        drop(self.take());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
