//! The probes of issue 41 against both servers (see `conformance.rs`): the
//! real of-watchdog 0.11.6 in front of the probe function, and the runtime
//! serving it: bodies declared and not sent, or sent in tiny chunks, leave
//! room for the next request; probes answer while stalled clients hold
//! every connection and request lines queue behind them; a request that
//! waits for a handler thread gets its 504 at `exec_timeout`.
//!
//! Run: `cargo test --release -p fmerge-runtime --test conformance_overload`.

mod support;

use fmerge_testkit::dataplane::{self, request};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::servers::both_started;
use support::{answered_within, at_once, get, stalled};

#[test]
fn bodies_declared_and_not_sent_or_sent_in_one_byte_chunks_leave_room_for_the_next() {
    let env = [("max_buffered_bytes", "67108864")];
    both_started(&env, |serving, s| {
        let port = s.server.port;
        let head = format!(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
            32 << 20
        );
        let liars: Vec<TcpStream> = (0..2).map(|_| stalled(port, &head)).collect();
        std::thread::sleep(Duration::from_millis(300));
        let small = request(port, "POST", "/sleep?ms=0", &[], b"small").unwrap();
        assert_eq!(small.status, 200, "{serving:?}: {small:?}");
        drop(liars);
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut upload = b"POST /sleep?ms=0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        upload.extend_from_slice(&b"1\r\nx\r\n".repeat(70_000));
        upload.extend_from_slice(b"0\r\n\r\n");
        let _ = c.write_all(&upload);
        let mut reply = Vec::new();
        let _ = c.read_to_end(&mut reply);
        let reply = dataplane::parse(&reply, false);
        assert_eq!(reply.map(|r| r.status), Ok(200), "{serving:?}");
        let small = request(port, "POST", "/sleep?ms=0", &[], b"small").unwrap();
        assert_eq!(small.status, 200, "{serving:?}: {small:?}");
    });
}

#[test]
fn probes_answer_while_stalled_clients_hold_the_connections_and_request_lines_queue() {
    let env = [("max_connections", "2"), ("read_timeout", "60s")];
    both_started(&env, |serving, s| {
        let port = s.server.port;
        let mut held: Vec<TcpStream> = (0..2)
            .map(|_| stalled(port, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-"))
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        held.extend((0..16).map(|_| stalled(port, "POST /echo HTTP/1.1\r\n")));
        std::thread::sleep(Duration::from_millis(500));
        for path in ["/_/health", "/_/ready"] {
            let asked = Instant::now();
            let status = answered_within(port, path, Duration::from_secs(2));
            eprintln!("{serving:?}: {path} {status:?} after {:?}", asked.elapsed());
            assert_eq!(status, Ok(200), "{serving:?}: {path}");
        }
        drop(held);
    });
}

#[test]
fn a_request_waiting_for_a_handler_thread_is_answered_504_at_exec_timeout() {
    let env = [("exec_timeout", "1s"), ("TOKIO_WORKER_THREADS", "2")];
    both_started(&env, |serving, s| {
        let port = s.server.port;
        let blockers = at_once(2, port, "/block?ms=6000");
        std::thread::sleep(Duration::from_millis(300));
        let asked = Instant::now();
        let third = get(port, "/echo", &[]);
        let after = asked.elapsed();
        eprintln!(
            "{serving:?}: the third request: {} after {after:?}",
            third.status
        );
        assert_eq!(third.status, 504, "{serving:?}: after {after:?}: {third:?}");
        // Well before the blockers free a thread (6 s).
        assert!(
            after < Duration::from_secs(4),
            "{serving:?}: 504 after {after:?}"
        );
        for b in blockers {
            assert_eq!(b.join().unwrap().0.unwrap().status, 504, "{serving:?}");
        }
    });
}
