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

/// A stream whose replies must be written within `limit`, counted from the
/// first write the socket could not take at once; hyper flushes once a
/// reply is wholly written, which ends it. A reply the socket takes without
/// pushing back never touches the timer (the common case costs nothing).
pub(crate) struct Deadline<T> {
    io: T,
    limit: Duration,
    /// Armed when a write would block, disarmed when the reply is flushed;
    /// made at the first push-back, then reset for each later one.
    timer: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl<T> Deadline<T> {
    pub(crate) fn new(io: T, limit: Duration) -> Self {
        Deadline {
            io,
            limit,
            timer: None,
            armed: false,
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
        Pin::new(&mut self.io).poll_read(cx, buf)
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
