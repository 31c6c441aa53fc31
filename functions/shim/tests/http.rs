//! The HTTP parsing and framing the stand-in relies on to read requests and
//! to relay responses on connections that stay open.

use std::io::{BufReader, Cursor};

use fmerge_shim::http::{self, Framing};

fn request(bytes: &[u8]) -> (http::Request, Vec<u8>, Vec<u8>) {
    let mut r = BufReader::new(Cursor::new(bytes.to_vec()));
    let mut interim = Vec::new();
    let req = http::read_request(&mut r, &mut interim).unwrap().unwrap();
    let pos = r.get_ref().position() as usize - r.buffer().len();
    (req, interim, bytes[pos..].to_vec())
}

#[test]
fn content_length_body_and_the_next_request_stay_apart() {
    let raw = b"POST /function/echo?x=1 HTTP/1.1\r\nHost: gw\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n";
    let (req, interim, rest) = request(raw);
    assert_eq!(
        (req.method.as_str(), req.target.as_str(), req.minor),
        ("POST", "/function/echo?x=1", 1)
    );
    assert_eq!(req.body, b"hello");
    assert_eq!(req.raw, &raw[..raw.len() - 18]);
    assert!(interim.is_empty() && req.keep_alive() && !req.chunked);
    assert_eq!(rest, b"GET / HTTP/1.1\r\n\r\n");
}

#[test]
fn chunked_body_with_extensions_and_trailers_is_decoded_and_kept_raw() {
    let raw = b"POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;ext=1\r\nhello\r\nB\r\n 0123456789\r\n0;last\r\nX-Trailer: t\r\n\r\nNEXT";
    let (req, _, rest) = request(raw);
    assert!(req.chunked);
    assert_eq!(req.body, b"hello 0123456789");
    assert_eq!(req.raw, &raw[..raw.len() - 4]);
    assert_eq!(rest, b"NEXT");
}

#[test]
fn expect_continue_is_answered_before_the_body_and_only_with_one() {
    let (req, interim, _) =
        request(b"PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    assert_eq!(req.body, b"ok");
    let (_, interim, _) = request(b"GET /x HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
    assert!(interim.is_empty());
}

#[test]
fn persistence_follows_version_and_connection() {
    assert!(
        !request(b"GET / HTTP/1.1\r\nConnection: Close\r\n\r\n")
            .0
            .keep_alive()
    );
    assert!(!request(b"GET / HTTP/1.0\r\n\r\n").0.keep_alive());
    assert!(
        request(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .0
            .keep_alive()
    );
    assert!(
        request(b"GET / HTTP/1.1\r\nConnection: te, foo\r\n\r\n")
            .0
            .keep_alive()
    );
}

#[test]
fn clean_end_malformed_and_truncated_requests() {
    let mut interim = Vec::new();
    assert!(
        http::read_request(&mut Cursor::new(b""), &mut interim)
            .unwrap()
            .is_none()
    );
    for bad in [
        &b"GET /\r\n\r\n"[..],
        b"GET / HTTP/2\r\n\r\n",
        b"GET / HTTP/1.1\r\nbad header\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\n",
    ] {
        let e = http::read_request(&mut Cursor::new(bad), &mut interim).unwrap_err();
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::InvalidData,
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    let e = http::read_request(
        &mut Cursor::new(&b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nshort"[..]),
        &mut interim,
    )
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
}

fn framing(method: &str, head: &[u8]) -> (Framing, bool) {
    let head = http::read_response_head(&mut Cursor::new(head))
        .unwrap()
        .unwrap();
    let f = http::response_framing(method, &head).unwrap();
    (f, http::response_keeps_alive(&head, f))
}

#[test]
fn response_framing_follows_rfc_9112() {
    // (request method, response head without its blank line, its framing,
    // whether the connection stays open after it)
    let cases = [
        (
            "GET",
            "HTTP/1.1 200 OK\r\nContent-Length: 7",
            Framing::Length(7),
            true,
        ),
        (
            "GET",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 7",
            Framing::Chunked,
            true,
        ),
        ("GET", "HTTP/1.1 200 OK", Framing::UntilClose, false),
        (
            "HEAD",
            "HTTP/1.1 200 OK\r\nContent-Length: 7",
            Framing::Empty,
            true,
        ),
        ("GET", "HTTP/1.1 204 No Content", Framing::Empty, true),
        (
            "GET",
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 7",
            Framing::Empty,
            true,
        ),
        ("GET", "HTTP/1.1 100 Continue", Framing::Empty, true),
        (
            "GET",
            "HTTP/1.0 200 OK\r\nContent-Length: 1",
            Framing::Length(1),
            false,
        ),
        (
            "GET",
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1",
            Framing::Length(1),
            false,
        ),
    ];
    for (method, head, framed, kept) in cases {
        let head = format!("{head}\r\n\r\n");
        assert_eq!(
            framing(method, head.as_bytes()),
            (framed, kept),
            "{method} {head:?}"
        );
    }
}

#[test]
fn response_bodies_are_copied_exactly_and_no_further() {
    let body = b"4\r\nwiki\r\n0\r\nT: 1\r\n\r\nHTTP/1.1 next";
    let mut r = Cursor::new(&body[..]);
    let mut out = Vec::new();
    http::read_body(&mut r, Framing::Chunked, &mut out, None).unwrap();
    assert_eq!(out, &body[..body.len() - 13]);
    let mut r = Cursor::new(&b"abcdef"[..]);
    let mut out = Vec::new();
    http::read_body(&mut r, Framing::Length(4), &mut out, None).unwrap();
    assert_eq!(out, b"abcd");
    let mut out = Vec::new();
    http::read_body(&mut r, Framing::UntilClose, &mut out, None).unwrap();
    assert_eq!(out, b"ef");
}

#[test]
fn dates_are_written_as_servers_write_them() {
    // Each against what Python's `email.utils.formatdate(t, usegmt=True)`
    // gives: the epoch, RFC 9110's example, a leap day, the last second
    // before 2100's (no) leap day, a day this year.
    for (secs, text) in [
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (4_107_542_399, "Sun, 28 Feb 2100 23:59:59 GMT"),
        (1_796_296_500, "Thu, 03 Dec 2026 11:15:00 GMT"),
    ] {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        assert_eq!(http::date(at), text, "{secs}");
    }
}
