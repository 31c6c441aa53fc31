//! A connection's deadlines. The per-reply write deadline: a connection
//! whose reply cannot be written within `write_timeout` is closed, as Go's
//! `WriteTimeout` closes it for of-watchdog. Without it a client that sends
//! requests and never reads the replies holds its connection slot for ever.
//! The per-request read deadline ([`ReadClock`]): a request's line, headers
//! and body together must arrive within `read_timeout`, as with Go's
//! `ReadTimeout`, counted from the connection's accept for its first
//! request and from the first byte of each later one.

use crate::backstop::Watched;
use std::io;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Where a connection's request stands, shared by its stream (which arms
/// and enforces the read deadline) and its requests' service (which takes
/// it over once the headers are in, see [`ReadClock::headers_read`]).
pub(crate) struct ReadClock {
    /// [`IDLE`], [`SERVING`], or the deadline of the request being read,
    /// in nanoseconds since [`origin`].
    state: AtomicU64,
    limit: Duration,
}

/// Between requests: the next byte that arrives starts the next deadline.
const IDLE: u64 = 0;
/// The headers are in: the service reads the body under its own timer
/// (so that a late body gets a 408), and a handler running is no read.
const SERVING: u64 = u64::MAX;

/// A timer made when first needed, then reset.
type Timer = Option<Pin<Box<Sleep>>>;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn encode(at: Instant) -> u64 {
    (at.saturating_duration_since(origin()).as_nanos() as u64).clamp(1, SERVING - 1)
}

impl ReadClock {
    /// A clock for a connection accepted at `accepted`, whose first request
    /// must be read by `accepted + limit` (a zero `limit`: no deadline).
    pub(crate) fn new(accepted: Instant, limit: Duration) -> ReadClock {
        let state = if limit.is_zero() {
            SERVING
        } else {
            encode(accepted + limit)
        };
        ReadClock {
            state: AtomicU64::new(state),
            limit,
        }
    }

    /// The headers of a request are in: its deadline, if one runs, for the
    /// body. The stream no longer enforces it until [`ReadClock::replied`].
    pub(crate) fn headers_read(&self) -> Option<Instant> {
        match self.state.swap(SERVING, Ordering::Relaxed) {
            IDLE | SERVING => None,
            at => Some(origin() + Duration::from_nanos(at)),
        }
    }

    /// The request is answered: the next byte starts the next deadline.
    pub(crate) fn replied(&self) {
        if !self.limit.is_zero() {
            self.state.store(IDLE, Ordering::Relaxed);
        }
    }

    /// Whether no byte of a next request has reached the handler side
    /// since the last reply (always true without a read deadline: the
    /// clock cannot tell then).
    pub(crate) fn unread(&self) -> bool {
        self.limit.is_zero() || self.state.load(Ordering::Relaxed) == IDLE
    }

    /// Bytes arrived: between requests, they start the next deadline.
    fn arrived(&self) {
        if self.state.load(Ordering::Relaxed) == IDLE {
            self.state
                .store(encode(Instant::now() + self.limit), Ordering::Relaxed);
        }
    }

    /// The deadline the stream enforces now, if any.
    fn running(&self) -> Option<Instant> {
        match self.state.load(Ordering::Relaxed) {
            IDLE | SERVING => None,
            at => Some(origin() + Duration::from_nanos(at)),
        }
    }
}

/// A stream whose replies must be written within `limit`, counted from the
/// first write the socket could not take at once; hyper flushes once a
/// reply is wholly written, which ends it. A reply the socket takes without
/// pushing back never touches the timer (the common case costs nothing).
pub(crate) struct Deadline<T> {
    io: T,
    limit: Duration,
    /// Armed when a write would block, disarmed when the reply is flushed;
    /// made at the first push-back, then reset for each later one.
    timer: Timer,
    armed: bool,
    /// The read deadline, on the connections that have one.
    read: Option<(std::sync::Arc<Watched>, Timer)>,
}

impl<T> Deadline<T> {
    pub(crate) fn new(io: T, limit: Duration) -> Self {
        Deadline {
            io,
            limit,
            timer: None,
            armed: false,
            read: None,
        }
    }

    /// Enforces the read deadline of `watched`'s clock too.
    pub(crate) fn reading(mut self, watched: std::sync::Arc<Watched>) -> Self {
        self.read = Some((watched, None));
        self
    }

    /// A read found nothing to read: pending until the read deadline, if
    /// one runs, then an error (hyper closes the connection).
    fn read_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some((watched, timer)) = &mut self.read else {
            return Poll::Pending;
        };
        let clock = &watched.clock;
        let Some(deadline) = clock.running() else {
            return Poll::Pending;
        };
        let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "request not received within read_timeout ({:?})",
                    clock.limit
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Called when the socket pushed back: arms the deadline if it is not
    /// armed, and errs once it has passed.
    fn pushed_back(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let limit = self.limit;
        let deadline = Instant::now() + limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if !self.armed {
            self.armed = true;
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("reply not written within write_timeout ({limit:?})"),
            )),
            Poll::Pending => Ok(()),
        }
    }

    /// A pending write or flush, or the deadline's error if it has passed.
    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        match self.pushed_back(cx) {
            Ok(()) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Deadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Pending => self.read_pending(cx),
            Poll::Ready(Ok(())) => {
                if let Some((watched, _)) = &self.read
                    && buf.filled().len() > before
                {
                    watched.clock.arrived();
                }
                Poll::Ready(Ok(()))
            }
            ready => ready,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Deadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write(cx, buf) {
            Poll::Pending => self.pending(cx),
            ready => ready,
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.pending(cx),
            ready => ready,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Pending => self.pending(cx),
            ready => {
                ready!(ready)?;
                self.armed = false;
                Poll::Ready(Ok(()))
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_shutdown(cx) {
            Poll::Pending => self.pending(cx),
            ready => ready,
        }
    }
}
