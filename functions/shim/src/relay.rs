//! Relays a request the stand-in does not serve to where the client meant to
//! send it (the real gateway), and the response back byte for byte. The
//! upstream connection is kept for the client connection's next requests, as
//! the client would have kept its own; a streamed response stays streamed
//! ([`copy_body`]).

use std::cell::RefCell;
use std::io::{self, BufReader, Write};
use std::net::{SocketAddr, TcpStream};

use crate::gateway;
use crate::http::{self, Framing, Request, ResponseHead};

/// A connection to the original destination.
pub struct Upstream {
    pub reader: BufReader<TcpStream>,
    pub writer: TcpStream,
}

impl Upstream {
    /// Connects to `dest` itself: the bypass keeps the interposed `connect`
    /// from sending the stand-in back to itself.
    pub fn connect(dest: SocketAddr) -> io::Result<Upstream> {
        let stream = gateway::with_bypass(|| TcpStream::connect(dest))?;
        stream.set_nodelay(true)?;
        Ok(Upstream {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Whether a kept connection may carry another request: open, and
    /// nothing unasked for waiting on it. Checked before a request is sent,
    /// never by sending it twice: a request the upstream may have acted on
    /// (a POST) is not repeated, as Go's client (of-watchdog's, the
    /// gateway's) does not repeat it.
    pub fn reusable(&mut self) -> bool {
        if !self.reader.buffer().is_empty() || self.writer.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let open =
            matches!(self.writer.peek(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        open && self.writer.set_nonblocking(false).is_ok()
    }
}

/// The connection in `slot` if it may carry another request, else a new
/// one to `dest`.
pub fn connection(slot: &mut Option<Upstream>, dest: SocketAddr) -> io::Result<&mut Upstream> {
    if slot.as_mut().is_some_and(|up| !up.reusable()) {
        *slot = None;
    }
    if slot.is_none() {
        *slot = Some(Upstream::connect(dest)?);
    }
    Ok(slot.as_mut().expect("connected just above"))
}

/// Sends `req` on the connection in `slot` (a new one unless it may be
/// reused) and reads the response's head; `None` if the upstream closed
/// first.
fn send(
    slot: &mut Option<Upstream>,
    dest: SocketAddr,
    req: &Request,
) -> io::Result<Option<ResponseHead>> {
    let up = connection(slot, dest)?;
    up.writer.write_all(&req.raw)?;
    http::read_response_head(&mut up.reader)
}

/// Relays `req` to `dest` and its response to `client`. Returns whether the
/// client connection can stay open: an error before any byte of the response
/// reached the client comes back as `Err` with nothing written, so the
/// caller can still answer 502.
pub fn forward(
    slot: &mut Option<Upstream>,
    dest: SocketAddr,
    req: &Request,
    client: &mut dyn Write,
) -> io::Result<bool> {
    let head = match send(slot, dest, req) {
        Ok(Some(head)) => head,
        Ok(None) => {
            *slot = None;
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Err(e) => {
            *slot = None;
            return Err(e);
        }
    };
    match relay_response(slot, head, req, client) {
        Ok(keep) => Ok(keep),
        Err(e) => {
            *slot = None;
            // Part of the response is out: the client can only learn of the
            // failure by the connection closing.
            let _ = client.flush();
            Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                format!("relay broke mid-response: {e}"),
            ))
        }
    }
}

fn relay_response(
    slot: &mut Option<Upstream>,
    mut head: ResponseHead,
    req: &Request,
    client: &mut dyn Write,
) -> io::Result<bool> {
    let up = slot.as_mut().expect("the response came on it");
    // Interim responses (100 Continue, 103 Early Hints) pass through; the
    // final one follows on the same connection.
    while head.status < 200 && head.status != 101 {
        client.write_all(&head.raw)?;
        client.flush()?;
        head = http::read_response_head(&mut up.reader)?.ok_or(io::ErrorKind::UnexpectedEof)?;
    }
    client.write_all(&head.raw)?;
    let framing = if head.status == 101 {
        Framing::UntilClose
    } else {
        http::response_framing(&req.method, &head)?
    };
    copy_body(up, framing, client)?;
    client.flush()?;
    let keep = http::response_keeps_alive(&head, framing);
    if !keep {
        *slot = None;
    }
    Ok(keep)
}

/// Copies a reply's body from `up` to `client` as it comes (a streamed
/// reply stays streamed): what has come is written to the client before
/// the next wait for the server, in one write however many pieces (a
/// chunk's size line, its data, its end) it holds.
pub fn copy_body(up: &mut Upstream, framing: Framing, client: &mut dyn Write) -> io::Result<()> {
    let client = RefCell::new(client);
    let mut server = FlushFirst {
        server: &mut up.reader,
        client: &client,
    };
    http::read_body(&mut server, framing, &mut Shared(&client), None)
}

/// The server's side of a reply, which flushes the client's side before it
/// waits for more from the server.
struct FlushFirst<'a, 'c> {
    server: &'a mut BufReader<TcpStream>,
    client: &'a RefCell<&'c mut dyn Write>,
}

impl FlushFirst<'_, '_> {
    fn before_a_wait(&mut self) -> io::Result<()> {
        match self.server.buffer().is_empty() {
            true => self.client.borrow_mut().flush(),
            false => Ok(()),
        }
    }
}

impl io::Read for FlushFirst<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.before_a_wait()?;
        self.server.read(buf)
    }
}

impl io::BufRead for FlushFirst<'_, '_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.before_a_wait()?;
        self.server.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.server.consume(n)
    }
}

/// The client's side, written through the cell [`FlushFirst`] flushes.
struct Shared<'a, 'c>(&'a RefCell<&'c mut dyn Write>);

impl Write for Shared<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.borrow_mut().flush()
    }
}
