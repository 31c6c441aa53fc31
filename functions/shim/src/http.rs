//! Just enough HTTP/1.1 (RFC 9112) for the stand-in: read a request whole,
//! keeping its raw bytes so that a relayed request is the client's own, and
//! know where a response ends so that it can be relayed byte for byte on a
//! connection that stays open.

use std::io::{self, BufRead, Read, Write};

/// The longest line (request line, header, chunk size) accepted: a bound so
/// that a peer that never sends a newline cannot grow memory without end.
const MAX_LINE: u64 = 64 * 1024;
/// The most header lines in one message, for the same reason.
const MAX_HEADERS: usize = 256;

/// A parsed request, its decoded body and the exact bytes it came as.
#[derive(Debug, Default)]
pub struct Request {
    pub method: String,
    /// The request-target as sent (`/function/echo?x=1`).
    pub target: String,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub headers: Vec<(String, String)>,
    /// The body with any chunked coding removed.
    pub body: Vec<u8>,
    /// Whether the body came chunked.
    pub chunked: bool,
    /// Every byte of the request, head and body, as received.
    pub raw: Vec<u8>,
}

impl Request {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// Whether the client wants the connection kept open after the reply.
    pub fn keep_alive(&self) -> bool {
        keep_alive(self.minor, &self.headers)
    }
}

/// A response's status line and headers, with their exact bytes.
#[derive(Debug)]
pub struct ResponseHead {
    pub minor: u8,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub raw: Vec<u8>,
}

/// How a message's body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Empty,
    Length(u64),
    Chunked,
    /// Until the sender closes: a response only.
    UntilClose,
}

/// The first value of header `name` in `headers`, compared case-insensitively.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Whether any `name` header lists `token` (comma-separated, any case).
fn has_token(headers: &[(String, String)], name: &str, token: &str) -> bool {
    headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Persistence as RFC 9112 9.3 has it: HTTP/1.1 stays open unless
/// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
pub fn keep_alive(minor: u8, headers: &[(String, String)]) -> bool {
    if has_token(headers, "connection", "close") {
        return false;
    }
    minor >= 1 || has_token(headers, "connection", "keep-alive")
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

/// Reads one line into `raw` and returns it without its line ending; `None`
/// at end of stream before any byte.
fn read_line<R: BufRead>(r: &mut R, raw: &mut Vec<u8>) -> io::Result<Option<String>> {
    let start = raw.len();
    if r.by_ref().take(MAX_LINE).read_until(b'\n', raw)? == 0 {
        return Ok(None);
    }
    if raw.last() != Some(&b'\n') {
        return Err(invalid("line too long, or the peer closed mid-line"));
    }
    let mut line = &raw[start..raw.len() - 1];
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    Ok(Some(String::from_utf8_lossy(line).into_owned()))
}

/// A start line, its header fields and the bytes they came as.
type Head = (String, Vec<(String, String)>, Vec<u8>);

/// Reads a start line and header fields up to the empty line; `None` when the
/// stream ends cleanly first. Empty lines before the start line are skipped
/// (RFC 9112 2.2) but kept in the raw bytes.
fn read_head<R: BufRead>(r: &mut R) -> io::Result<Option<Head>> {
    let mut raw = Vec::new();
    let start = loop {
        match read_line(r, &mut raw)? {
            None if raw.is_empty() => return Ok(None),
            None => return Err(io::ErrorKind::UnexpectedEof.into()),
            Some(line) if line.is_empty() => continue,
            Some(line) => break line,
        }
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    loop {
        let line = read_line(r, &mut raw)?.ok_or(io::ErrorKind::UnexpectedEof)?;
        if line.is_empty() {
            return Ok(Some((start, headers, raw)));
        }
        if line.starts_with([' ', '\t']) {
            // obs-fold (RFC 9112 5.2): a continuation of the previous value.
            let last = headers
                .last_mut()
                .ok_or_else(|| invalid("folded first header"))?;
            last.1.push(' ');
            last.1.push_str(line.trim());
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid("header without ':'"))?;
        if name.is_empty() || name.ends_with([' ', '\t']) {
            return Err(invalid("malformed header name"));
        }
        if headers.len() == MAX_HEADERS {
            return Err(invalid("too many headers"));
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
}

fn parse_minor(version: &str) -> io::Result<u8> {
    match version {
        "HTTP/1.1" => Ok(1),
        "HTTP/1.0" => Ok(0),
        _ => Err(invalid("not HTTP/1.0 or HTTP/1.1")),
    }
}

/// `Content-Length`, allowing a list of identical values (RFC 9110 8.6).
fn content_length(headers: &[(String, String)]) -> io::Result<Option<u64>> {
    let mut found = None;
    for (_, v) in headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        for part in v.split(',') {
            let n: u64 = part
                .trim()
                .parse()
                .map_err(|_| invalid("bad Content-Length"))?;
            if found.is_some_and(|f| f != n) {
                return Err(invalid("conflicting Content-Length values"));
            }
            found = Some(n);
        }
    }
    Ok(found)
}

/// Whether the last transfer coding is chunked, and whether there is any.
fn transfer_coding(headers: &[(String, String)]) -> (bool, bool) {
    let codings: Vec<&str> = headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("transfer-encoding"))
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let chunked = codings
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"));
    (chunked, !codings.is_empty())
}

/// Reads one request; `None` when the client closed between requests. A
/// request that expects `100-continue` is answered on `interim` before its
/// body is read, as a client waits for that before sending it.
pub fn read_request<R: BufRead, W: Write>(
    r: &mut R,
    interim: &mut W,
) -> io::Result<Option<Request>> {
    let Some((start, headers, raw)) = read_head(r)? else {
        return Ok(None);
    };
    let mut parts = start.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("malformed request line"));
    };
    let minor = parse_minor(version)?;
    let (chunked, coded) = transfer_coding(&headers);
    let framing = if chunked {
        Framing::Chunked
    } else if coded {
        // RFC 9112 6.3: a request whose length cannot be known is refused.
        return Err(invalid("transfer coding other than chunked"));
    } else {
        match content_length(&headers)? {
            Some(0) | None => Framing::Empty,
            Some(n) => Framing::Length(n),
        }
    };
    let mut req = Request {
        method: method.to_string(),
        target: target.to_string(),
        minor,
        headers,
        chunked,
        raw,
        ..Request::default()
    };
    if minor >= 1 && framing != Framing::Empty && has_token(&req.headers, "expect", "100-continue")
    {
        interim.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        interim.flush()?;
    }
    read_body(r, framing, &mut req.raw, Some(&mut req.body))?;
    Ok(Some(req))
}

/// Reads a response's status line and headers; `None` if the stream ended
/// before any byte.
pub fn read_response_head<R: BufRead>(r: &mut R) -> io::Result<Option<ResponseHead>> {
    let Some((start, headers, raw)) = read_head(r)? else {
        return Ok(None);
    };
    let mut parts = start.splitn(3, ' ');
    let minor = parse_minor(parts.next().unwrap_or(""))?;
    let status = parts
        .next()
        .filter(|s| s.len() == 3)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid("malformed status line"))?;
    Ok(Some(ResponseHead {
        minor,
        status,
        headers,
        raw,
    }))
}

/// How the body of `head`, the response to a `method` request, is delimited
/// (RFC 9112 6.3).
pub fn response_framing(method: &str, head: &ResponseHead) -> io::Result<Framing> {
    if method.eq_ignore_ascii_case("HEAD")
        || head.status < 200
        || head.status == 204
        || head.status == 304
    {
        return Ok(Framing::Empty);
    }
    let (chunked, coded) = transfer_coding(&head.headers);
    if chunked {
        return Ok(Framing::Chunked);
    }
    if coded {
        return Ok(Framing::UntilClose);
    }
    Ok(match content_length(&head.headers)? {
        Some(n) => Framing::Length(n),
        None => Framing::UntilClose,
    })
}

/// Whether the connection a response came on can carry another request.
pub fn response_keeps_alive(head: &ResponseHead, framing: Framing) -> bool {
    framing != Framing::UntilClose && keep_alive(head.minor, &head.headers)
}

/// Copies exactly `n` bytes from `r` to `raw`, and to `decoded` if given.
fn copy_exact<R: BufRead>(
    r: &mut R,
    mut n: u64,
    raw: &mut dyn Write,
    mut decoded: Option<&mut Vec<u8>>,
) -> io::Result<()> {
    while n > 0 {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let take = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        raw.write_all(&buf[..take])?;
        if let Some(d) = decoded.as_mut() {
            d.extend_from_slice(&buf[..take]);
        }
        r.consume(take);
        n -= take as u64;
    }
    Ok(())
}

/// Reads a body framed as `framing`, writing its bytes as received to `raw`
/// and, if given, its content without chunked coding to `decoded`.
pub fn read_body<R: BufRead>(
    r: &mut R,
    framing: Framing,
    raw: &mut dyn Write,
    mut decoded: Option<&mut Vec<u8>>,
) -> io::Result<()> {
    match framing {
        Framing::Empty => Ok(()),
        Framing::Length(n) => copy_exact(r, n, raw, decoded),
        Framing::UntilClose => loop {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                return raw.flush();
            }
            raw.write_all(buf)?;
            if let Some(d) = decoded.as_mut() {
                d.extend_from_slice(buf);
            }
            let n = buf.len();
            r.consume(n);
        },
        Framing::Chunked => {
            let mut line = Vec::new();
            loop {
                line.clear();
                let size = read_line(r, &mut line)?.ok_or(io::ErrorKind::UnexpectedEof)?;
                raw.write_all(&line)?;
                // A chunk extension follows ';' and means nothing to us.
                let size = size.split(';').next().unwrap_or("").trim();
                let size = u64::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
                if size == 0 {
                    break;
                }
                copy_exact(r, size, raw, decoded.as_deref_mut())?;
                line.clear();
                let end = read_line(r, &mut line)?.ok_or(io::ErrorKind::UnexpectedEof)?;
                raw.write_all(&line)?;
                if !end.is_empty() {
                    return Err(invalid("chunk not followed by CRLF"));
                }
            }
            // Trailer fields, up to the empty line.
            loop {
                line.clear();
                let trailer = read_line(r, &mut line)?.ok_or(io::ErrorKind::UnexpectedEof)?;
                raw.write_all(&line)?;
                if trailer.is_empty() {
                    return Ok(());
                }
            }
        }
    }
}

/// The reason phrase of `status`, as Go's `http.StatusText` (which
/// of-watchdog writes) has it; empty for a status it does not know.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Request Entity Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// `at` as an HTTP date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`), as
/// a server writes in its `Date` header.
pub fn date(at: std::time::SystemTime) -> String {
    let secs = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let (hour, minute, second) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    // The civil date of a day count (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {day:02} {} {year} {hour:02}:{minute:02}:{second:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize]
    )
}
