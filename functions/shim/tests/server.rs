//! The stand-in over real loopback sockets: member calls go to the runner it
//! is given, everything else reaches a real upstream listener, and the
//! client receives the upstream's bytes exactly, on one kept-alive
//! connection that the relay reuses upstream too.

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use fmerge_shim::http;
use fmerge_shim::member::Reply;
use fmerge_shim::server::{self, Config};

/// The upstream's reply to each path: every framing a response can have.
fn canned(path: &str) -> &'static [u8] {
    match path {
        "/cl" => b"HTTP/1.1 200 OK\r\nX-A: b\r\nContent-Length: 5\r\n\r\nhello",
        "/chunked" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nTrailer: z\r\n\r\n",
        "/head" => b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
        "/nocontent" => b"HTTP/1.1 204 No Content\r\nX-B: c\r\n\r\n",
        "/notmod" => b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 99\r\n\r\n",
        "/continue" => b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        "/close" => b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end",
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope",
    }
}

struct Upstream {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
}

fn upstream() -> Upstream {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (c, s) = (Arc::clone(&connections), Arc::clone(&seen));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            c.fetch_add(1, Ordering::SeqCst);
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let mut r = BufReader::new(stream.try_clone().unwrap());
                while let Ok(Some(req)) = http::read_request(&mut r, &mut std::io::sink()) {
                    let path = req.target.rsplit('/').next().unwrap_or("").to_string();
                    s.lock().unwrap().push(req.raw.clone());
                    stream.write_all(canned(&format!("/{path}"))).unwrap();
                    if path == "close" {
                        return;
                    }
                }
            });
        }
    });
    Upstream {
        addr,
        connections,
        seen,
    }
}

fn stand_in(origin: Option<SocketAddr>) -> SocketAddr {
    let config = Config {
        is_member: Box::new(|name| name == "echo"),
        run: Box::new(|call| Reply {
            status: 200,
            headers: vec![
                ("Content-Type".into(), "text/plain".into()),
                (
                    "X-Path".into(),
                    format!("{}?{}", call.path, call.query.clone().unwrap_or_default()),
                ),
            ],
            body: call.body.to_ascii_uppercase(),
        }),
        origin: Box::new(move |_| origin),
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    server::spawn(listener, Arc::new(config)).unwrap();
    addr
}

fn exchange(client: &mut TcpStream, request: &[u8], reply_len: usize) -> Vec<u8> {
    client.write_all(request).unwrap();
    let mut reply = vec![0; reply_len];
    client.read_exact(&mut reply).unwrap();
    reply
}

/// `request` on a new connection to `addr`: all the answer until the
/// stand-in closes the connection.
fn until_closed(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut client = TcpStream::connect(addr).unwrap();
    client.write_all(request).unwrap();
    let mut reply = Vec::new();
    client.read_to_end(&mut reply).unwrap();
    reply
}

#[test]
fn members_run_here_and_the_rest_is_relayed_byte_for_byte_on_one_connection() {
    let up = upstream();
    let mut client = TcpStream::connect(stand_in(Some(up.addr))).unwrap();
    let member_reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Path: /p?q=1\r\nContent-Length: 5\r\n\r\nHELLO";
    let call = b"POST /function/echo/p?q=1 HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello";
    let mut want = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
    want.extend_from_slice(member_reply);
    assert_eq!(exchange(&mut client, call, want.len()), want);

    let mut relayed = Vec::new();
    for (method, path) in [
        ("GET", "/cl"),
        ("POST", "/chunked"),
        ("HEAD", "/head"),
        ("GET", "/nocontent"),
        ("GET", "/notmod"),
        ("GET", "/continue"),
        ("GET", "/function/echo.other-ns/cl"),
    ] {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
        );
        let expected = canned(&format!("/{}", path.rsplit('/').next().unwrap()));
        assert_eq!(
            exchange(&mut client, request.as_bytes(), expected.len()),
            expected,
            "{path}"
        );
        relayed.push(request.into_bytes());
    }
    // A member call after relays, on the same connection.
    let want =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Path: /?\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(
        exchange(
            &mut client,
            b"GET /function/echo HTTP/1.1\r\n\r\n",
            want.len()
        ),
        want
    );

    // Until close: the client connection ends with the upstream's.
    let request = b"GET /close HTTP/1.1\r\nHost: gateway\r\n\r\n";
    client.write_all(request).unwrap();
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, canned("/close"));
    relayed.push(request.to_vec());

    assert_eq!(*up.seen.lock().unwrap(), relayed);
    assert_eq!(
        up.connections.load(Ordering::SeqCst),
        1,
        "the upstream connection was not reused"
    );
}

#[test]
fn connection_close_and_http_1_0_end_the_connection() {
    let up = upstream();
    let addr = stand_in(Some(up.addr));
    let reply = until_closed(addr, b"GET /function/echo HTTP/1.0\r\n\r\n");
    assert!(
        reply.ends_with(b"Content-Length: 0\r\nConnection: close\r\n\r\n"),
        "{}",
        String::from_utf8_lossy(&reply)
    );

    let reply = until_closed(addr, b"GET /cl HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(reply, canned("/cl"));
}

#[test]
fn unreachable_upstream_and_unknown_origin_answer_502() {
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    for origin in [Some(dead), None] {
        let reply = until_closed(stand_in(origin), b"GET /function/other HTTP/1.1\r\n\r\n");
        let reply = String::from_utf8(reply).unwrap();
        assert!(
            reply.starts_with("HTTP/1.1 502 Bad Gateway\r\n") && reply.contains("\nfix: "),
            "{reply}"
        );
    }
}

#[test]
fn a_malformed_request_gets_400() {
    let reply = String::from_utf8(until_closed(stand_in(None), b"NONSENSE\r\n\r\n")).unwrap();
    assert!(reply.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{reply}");
}
