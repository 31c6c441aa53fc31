//! The per-reply write deadline: a connection whose reply cannot be written
//! within `write_timeout` is closed, as Go's `WriteTimeout` closes it for
//! of-watchdog. Without it a client that sends requests and never reads the
//! replies holds its connection slot for ever.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A stream whose writes must complete within `limit` of the first write of
/// a reply. hyper flushes once a reply is wholly written, which ends it.
pub(crate) struct Deadline<T> {
    io: T,
    limit: Duration,
    /// Armed at a reply's first write, disarmed when it is flushed; one
    /// timer per connection, reset for each reply.
    timer: Pin<Box<Sleep>>,
    armed: bool,
}

impl<T> Deadline<T> {
    pub(crate) fn new(io: T, limit: Duration) -> Self {
        Deadline {
            io,
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
            armed: false,
        }
    }

    /// Errs once the armed deadline has passed; arms it if it was not.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let limit = self.limit;
        if !self.armed {
            self.armed = true;
            self.timer.as_mut().reset(Instant::now() + limit);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("reply not written within write_timeout ({limit:?})"),
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Deadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Deadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        ready!(Pin::new(&mut self.io).poll_flush(cx))?;
        self.armed = false;
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
