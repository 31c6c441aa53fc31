//! Which runtime serves a connection. The front reads its first request
//! line: a probe (`/_/…`) is served on the front, so that health answers
//! however busy the handlers are; anything else is handed, with the bytes
//! read so far, to the handlers' runtime, where its requests are parsed and
//! run on one task (no thread hop per request).

use bytes::{Buf, Bytes, BytesMut};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A request line longer than this is handed on undecided; hyper refuses it.
const MAX_LINE: usize = 8 * 1024;

/// The start of a connection, read up to the end of its first request line.
pub(crate) struct FirstLine {
    pub read: Bytes,
    /// The line asks for a probe path.
    pub probe: bool,
}

impl FirstLine {
    /// The line's method, and with `log` its target (for the access log),
    /// for the record of a request whose headers are not read yet.
    pub(crate) fn method_and_target(
        &self,
        log: bool,
    ) -> (http::Method, Option<crate::request::LogLine>) {
        let mut words = self.read.split(|&b| b == b' ');
        let method = words
            .next()
            .and_then(|m| http::Method::from_bytes(m).ok())
            .unwrap_or_default();
        let target = log
            .then(|| words.next().and_then(|t| http::Uri::try_from(t).ok()))
            .flatten()
            .map(|uri| Box::new((uri, None)));
        (method, target)
    }
}

/// Reads up to the end of the first request line; `None` if the client
/// closed first.
pub(crate) async fn first_line(stream: &mut TcpStream) -> io::Result<Option<FirstLine>> {
    let mut read = BytesMut::with_capacity(1024);
    loop {
        if stream.read_buf(&mut read).await? == 0 {
            return Ok(None);
        }
        if let Some(end) = read.iter().position(|&b| b == b'\n') {
            let probe = read[..end]
                .split(|&b| b == b' ')
                .nth(1)
                .is_some_and(|target| target.starts_with(b"/_/"));
            return Ok(Some(FirstLine {
                read: read.freeze(),
                probe,
            }));
        }
        if read.len() >= MAX_LINE {
            return Ok(Some(FirstLine {
                read: read.freeze(),
                probe: false,
            }));
        }
    }
}

/// A stream that first yields bytes already read from it.
pub(crate) struct Replay<T> {
    read: Bytes,
    io: T,
}

impl<T> Replay<T> {
    pub(crate) fn new(read: Bytes, io: T) -> Self {
        Replay { read, io }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Replay<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read.has_remaining() {
            let n = self.read.len().min(buf.remaining());
            buf.put_slice(&self.read[..n]);
            self.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Replay<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn line_of(sent: &'static [u8]) -> Option<(bool, Vec<u8>)> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            // In two writes: the line may arrive in pieces.
            let (a, b) = sent.split_at(sent.len() / 2);
            c.write_all(a).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            c.write_all(b).await.unwrap();
        });
        let (mut s, _) = listener.accept().await.unwrap();
        let line = first_line(&mut s).await.unwrap();
        client.await.unwrap();
        let line = line?;
        let mut replay = Replay::new(line.read, s);
        let mut all = Vec::new();
        replay.read_to_end(&mut all).await.unwrap();
        Some((line.probe, all))
    }

    #[tokio::test]
    async fn a_probe_line_stays_on_the_front_and_every_byte_is_replayed() {
        let sent = b"GET /_/health HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(line_of(sent).await, Some((true, sent.to_vec())));
    }

    #[tokio::test]
    async fn a_function_request_is_handed_on_with_every_byte() {
        let sent = b"POST /compose?_/ HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
        assert_eq!(line_of(sent).await, Some((false, sent.to_vec())));
    }

    #[tokio::test]
    async fn a_client_that_closes_before_a_line_is_nothing() {
        assert_eq!(line_of(b"").await, None);
    }
}
