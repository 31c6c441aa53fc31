//! A connection's socket as hyper sees it: the write deadline of Go's
//! `WriteTimeout`, a client's half-close held from hyper until its reply
//! is written (and told to its request), and the bytes of unfinished
//! request heads charged to the memory budget.

use super::{BUDGET_UNIT, BUSY, Conn, FREE_HEAD, HEAD_CHARGE, Limits, NO_REPLY_YET, origin};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Replies must be wholly written within `limit` of their request's head (Go's
/// `WriteTimeout`, reset by each request): a reply made past it, or a write
/// still waiting at it, fails and hyper closes the connection. A client that
/// closes its side while its request is served is told to its request (see
/// [`Conn::client_closed`]) and to hyper only once the reply is written: hyper
/// would otherwise drop the request and write nothing. The bytes of a request
/// head past [`FREE_HEAD`] are charged to the budget until the head is taken
/// up.
pub(super) struct Io {
    io: TcpStream,
    conn: Arc<Conn>,
    limit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
    /// A write waits (the timer is armed), until a flush ends the reply.
    waiting: bool,
    budget: Option<Arc<Semaphore>>,
    head: Option<OwnedSemaphorePermit>,
    /// Bytes of the current head read so far.
    head_read: usize,
    /// The request count the head charge is for.
    charged_for: u64,
    /// The client's end of input, held from hyper: `Some` once seen (with
    /// the reader to wake when it may be told), told once the request has
    /// left and a flush has written its reply.
    eof: Option<Option<Waker>>,
    eof_told: bool,
}

impl Io {
    pub(super) fn new(io: TcpStream, conn: Arc<Conn>, limits: &Limits) -> Io {
        Io {
            io,
            conn,
            limit: limits.write_timeout,
            timer: None,
            waiting: false,
            budget: limits.budget.clone(),
            head: None,
            head_read: 0,
            charged_for: 0,
            eof: None,
            eof_told: false,
        }
    }

    /// How many bytes of a head may be read now; an error if the budget
    /// is spent (hyper closes the connection).
    fn head_room(&mut self) -> io::Result<usize> {
        let requests = self.conn.requests.load(Ordering::Relaxed);
        if requests != self.charged_for {
            // The last head was taken up: its charge is over.
            self.charged_for = requests;
            self.head = None;
            self.head_read = 0;
        }
        let Some(budget) = &self.budget else {
            return Ok(usize::MAX);
        };
        let charged = self.head.as_ref().map_or(0, |p| p.num_permits()) * BUDGET_UNIT;
        let allowed = FREE_HEAD + charged;
        if self.head_read < allowed {
            return Ok(allowed - self.head_read);
        }
        let more = budget
            .clone()
            .try_acquire_many_owned(HEAD_CHARGE)
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    "request head would exceed max_buffered_bytes",
                )
            })?;
        match &mut self.head {
            Some(head) => head.merge(more),
            None => self.head = Some(more),
        }
        Ok(HEAD_CHARGE as usize * BUDGET_UNIT)
    }

    /// A write's outcome under the deadline: an error for a reply made
    /// past it (see [`Conn::replied`]), and a write the socket cannot take
    /// yet waits no later than it.
    fn by_deadline<R>(
        &mut self,
        cx: &mut Context<'_>,
        write: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        let late = |limit| {
            Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("reply not written within write_timeout ({limit:?})"),
            )))
        };
        if self.conn.late.load(Ordering::Relaxed) {
            return late(self.limit);
        }
        if let ready @ Poll::Ready(_) = write(Pin::new(&mut self.io), cx) {
            return ready;
        }
        let by = self.conn.write_by.load(Ordering::Relaxed);
        let limit = self.limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        let deadline = match by {
            NO_REPLY_YET if !self.waiting => Instant::now() + limit,
            NO_REPLY_YET => timer.deadline(),
            by => origin() + Duration::from_nanos(by),
        };
        self.waiting = true;
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => late(self.limit),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Conn {
    /// Says the reply of the request that arrived at `arrived` (as its head was
    /// read) was made `took` later: past `write_timeout` it is not to be
    /// written (checked once a reply, not at every write). The connection
    /// layer's own 504 (`restart`) gets a whole `write_timeout` from now
    /// instead: it would otherwise come too late to be written when
    /// `exec_timeout` is not below `write_timeout`.
    pub(crate) fn replied(
        &self,
        arrived: Instant,
        took: Duration,
        write_timeout: Duration,
        restart: bool,
    ) {
        let from = if restart { arrived + took } else { arrived };
        self.late
            .store(!restart && took >= write_timeout, Ordering::Relaxed);
        self.write_by
            .store(super::nanos(from + write_timeout), Ordering::Relaxed);
    }

    fn closed_its_side(&self) {
        self.half_closed.store(true, Ordering::Release);
        self.closed_side.wake();
    }

    /// Ready once the client has closed its side of the connection (or
    /// gone).
    pub(crate) fn client_closed(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if !self.half_closed.load(Ordering::Acquire) {
                self.closed_side.register(cx.waker());
                if !self.half_closed.load(Ordering::Acquire) {
                    return std::task::Poll::Pending;
                }
            }
            std::task::Poll::Ready(())
        })
    }
}

impl AsyncRead for Io {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(reader) = &mut this.eof {
            if this.eof_told {
                return Poll::Ready(Ok(()));
            }
            *reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if this.conn.state.load(Ordering::Relaxed) == BUSY {
            // A body (charged by its reader, `body.rs`), or the client's end.
            let filled = buf.filled().len();
            let room = buf.remaining() > 0;
            ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
            if room && buf.filled().len() == filled {
                this.conn.closed_its_side();
                this.eof = Some(Some(cx.waker().clone()));
                return Poll::Pending;
            }
            return Poll::Ready(Ok(()));
        }
        let room = this.head_room()?;
        let before = this.conn.requests.load(Ordering::Relaxed);
        let n = if room >= buf.remaining() {
            let filled = buf.filled().len();
            ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
            buf.filled().len() - filled
        } else {
            let mut part = buf.take(room);
            ready!(Pin::new(&mut this.io).poll_read(cx, &mut part))?;
            let n = part.filled().len();
            // SAFETY: `part` is the start of `buf`'s unfilled part, and
            // the read initialized its first `n` bytes.
            unsafe { buf.assume_init(n) };
            buf.advance(n);
            n
        };
        if n > 0 {
            this.head_read += n;
            this.conn.arrived(before);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.by_deadline(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.by_deadline(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.by_deadline(cx, |io, cx| io.poll_flush(cx)))?;
        self.waiting = false;
        // hyper flushes once a reply is wholly written: a held end of
        // input may be told once the request it came in has left.
        let this = &mut *self;
        if let Some(reader) = &mut this.eof
            && !this.eof_told
            && this.conn.state.load(Ordering::Relaxed) != BUSY
        {
            if let Some(reader) = reader.take() {
                reader.wake();
            }
            this.eof_told = true;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
