//! The probes of issue 52 against both servers (see `conformance.rs`): the
//! real of-watchdog 0.11.6 in front of the probe function, and the runtime
//! serving it. Health, ready and metrics answer within a second while
//! clients hold every connection idle, send their headers slowly, sit idle
//! on keep-alive connections or flood the port, and while those clients
//! still hold their connections; an idle keep-alive connection makes room
//! for a new client; nothing but its own bytes is written into a reply;
//! unfinished request heads are held within the memory budget.
//!
//! Run: `cargo test --release -p fmerge-runtime --test conformance_connections`.

mod support;

use fmerge_testkit::dataplane::{ResidentKib, rss_kib};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::answered_within;
use support::servers::{Serving, answers_ok_within, both, both_started, start_with_metrics};

/// The bound every probe answer is held to.
const WITHIN: Duration = Duration::from_secs(1);

/// Clients that each keep a connection to a port open, reopening it as
/// soon as the server closes it, until dropped.
struct Holders {
    stop: Arc<AtomicBool>,
    /// Connections opened so far, reopenings included.
    opened: Arc<AtomicUsize>,
    threads: Vec<JoinHandle<()>>,
}

/// What each holder sends on its connection.
#[derive(Clone, Copy)]
enum Sends {
    /// Nothing at all.
    Nothing,
    /// The start of a request line, then one more byte of it every 200 ms,
    /// never ending it.
    SlowHeaders,
    /// One whole request, then nothing (an idle keep-alive connection).
    OneRequest,
    /// The start of a request line, closing after 500 ms and opening the
    /// next at once.
    Churn,
}

impl Holders {
    fn start(port: u16, n: usize, sends: Sends) -> Holders {
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicUsize::new(0));
        let threads = (0..n)
            .map(|_| {
                let (stop, opened) = (stop.clone(), opened.clone());
                std::thread::spawn(move || hold(port, sends, &stop, &opened))
            })
            .collect();
        Holders {
            stop,
            opened,
            threads,
        }
    }

    /// Waits until `n` connections have been opened (or 5 s).
    fn opened(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.opened.load(Ordering::Relaxed) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn hold(port: u16, sends: Sends, stop: &AtomicBool, opened: &AtomicUsize) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        opened.fetch_add(1, Ordering::Relaxed);
        let first: &[u8] = match sends {
            Sends::Nothing => b"",
            Sends::SlowHeaders | Sends::Churn => b"GET /echo?slow=",
            Sends::OneRequest => b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n",
        };
        if c.write_all(first).is_err() {
            continue;
        }
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let opened_at = Instant::now();
        let mut buf = [0u8; 4096];
        while !stop.load(Ordering::Relaxed) {
            if matches!(sends, Sends::Churn) && opened_at.elapsed() > Duration::from_millis(500) {
                break;
            }
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
            if matches!(sends, Sends::SlowHeaders) && c.write_all(b"a").is_err() {
                break;
            }
        }
    }
}

/// Asks each of `paths` on `port` `times` times, 100 ms apart: each must be
/// answered 200 within [`WITHIN`]. Returns the slowest answer.
fn every_probe_answers(serving: Serving, port: u16, paths: &[&str], times: usize) -> Duration {
    let mut slowest = Duration::ZERO;
    for _ in 0..times {
        for path in paths {
            slowest = slowest.max(answers_ok_within(serving, port, path, WITHIN));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    slowest
}

/// The runtime's connection cap, small so that the clients below exceed
/// it (of-watchdog has none).
const CAP: &str = "8";

/// Under [`CAP`], 64 clients that each do as `sends` says, held until
/// `opened` connections were opened (then `settle` waited): health and
/// ready each answer within [`WITHIN`], five times over.
fn probes_answer_while(sends: Sends, opened: usize, settle: Duration) {
    both_started(&[("max_connections", CAP)], |serving, s| {
        let port = s.server.port;
        let holders = Holders::start(port, 64, sends);
        holders.opened(opened);
        std::thread::sleep(settle);
        let slowest = every_probe_answers(serving, port, &["/_/health", "/_/ready"], 5);
        let opened = holders.opened.load(Ordering::Relaxed);
        eprintln!("{serving:?}: with {opened} connections opened, slowest probe {slowest:?}");
        drop(holders);
    });
}

#[test]
fn health_and_ready_answer_while_idle_clients_hold_every_connection_and_reopen() {
    // The cap, the old probe reserve and more, all idle, each reopened as
    // soon as it is closed.
    probes_answer_while(Sends::Nothing, 64, Duration::from_millis(300));
}

#[test]
fn health_and_ready_answer_while_clients_send_their_headers_slowly() {
    probes_answer_while(Sends::SlowHeaders, 64, Duration::from_millis(300));
}

#[test]
fn health_and_ready_answer_while_clients_flood_the_port_with_connections() {
    probes_answer_while(Sends::Churn, 200, Duration::ZERO);
}

#[test]
fn an_idle_keep_alive_connection_makes_room_for_a_new_client() {
    both_started(&[("max_connections", CAP)], |serving, s| {
        let port = s.server.port;
        // As many keep-alive clients as the cap, each answered once and
        // now idle until the server closes it.
        let holders = Holders::start(port, 8, Sends::OneRequest);
        holders.opened(8);
        std::thread::sleep(Duration::from_millis(500));
        for _ in 0..3 {
            let asked = Instant::now();
            let status = answered_within(port, "/echo", WITHIN);
            assert_eq!(
                status,
                Ok(200),
                "{serving:?}: a new client, after {:?}",
                asked.elapsed()
            );
        }
        every_probe_answers(serving, port, &["/_/health"], 2);
        drop(holders);
    });
}

#[test]
fn metrics_answer_while_idle_clients_hold_the_metrics_port_and_reopen() {
    both(|serving| {
        let Some((_s, metrics)) = start_with_metrics(serving, &[]) else {
            return;
        };
        let holders = Holders::start(metrics, 160, Sends::Nothing);
        holders.opened(160);
        std::thread::sleep(Duration::from_millis(300));
        let slowest = every_probe_answers(serving, metrics, &["/metrics"], 5);
        eprintln!("{serving:?}: /metrics with 160 idle clients, slowest {slowest:?}");
        drop(holders);
    });
}

/// Reads a reply head off `c`: its status and `Content-Length`.
fn read_head(c: &mut TcpStream) -> Result<(u16, Option<usize>), String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match c.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            other => return Err(format!("no whole head ({other:?}): {head:?}")),
        }
    }
    let text = String::from_utf8_lossy(&head).to_lowercase();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not a reply head: {text:?}"))?;
    let length = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok());
    Ok((status, length))
}

#[test]
fn a_large_reply_read_slowly_holds_only_its_own_bytes_while_every_handler_thread_blocks() {
    const KIB: usize = 64 << 10;
    let env = [
        ("exec_timeout", "2s"),
        ("write_timeout", "60s"),
        ("TOKIO_WORKER_THREADS", "2"),
    ];
    both_started(&env, |serving, s| {
        let port = s.server.port;
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c.write_all(format!("GET /big?kb={KIB} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        let (status, length) = read_head(&mut c).unwrap();
        assert_eq!(status, 200, "{serving:?}");
        let length = length.unwrap_or_else(|| panic!("{serving:?}: no Content-Length"));
        assert_eq!(length, KIB << 10, "{serving:?}");
        // Every handler thread blocks; then a request pipelined behind the
        // reply, which is read slowly (several times exec_timeout).
        let blockers = support::at_once(2, port, "/block?ms=10000");
        std::thread::sleep(Duration::from_millis(300));
        c.write_all(b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut body = 0usize;
        let mut buf = vec![0u8; 256 << 10];
        while body < length {
            let want = buf.len().min(length - body);
            match c.read(&mut buf[..want]) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(at) = buf[..n].iter().position(|&b| b != b'b') {
                        let around = String::from_utf8_lossy(&buf[at..n.min(at + 80)]);
                        panic!(
                            "{serving:?}: a foreign byte inside the 200 body at offset {}: {around:?}",
                            body + at
                        );
                    }
                    body += n;
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        eprintln!("{serving:?}: {body} of {length} body bytes, all the reply's own");
        if serving == Serving::Runtime {
            assert_eq!(body, length, "the reply was cut");
            // The pipelined request gets a reply of its own, after.
            let next = read_head(&mut c);
            assert!(
                matches!(next, Ok((200 | 504, _))),
                "the pipelined request: {next:?}"
            );
        }
        for b in blockers {
            let _ = b.join();
        }
    });
}

#[test]
fn a_thousand_unfinished_400_kb_request_heads_stay_within_the_memory_budget() {
    const BUDGET_MIB: u64 = 64;
    support::raise_fd_limit();
    let budget = (BUDGET_MIB << 20).to_string();
    let env = [("max_buffered_bytes", budget.as_str())];
    both_started(&env, |serving, s| {
        let port = s.server.port;
        let pid = s.server.pid();
        let base = rss_kib(pid).now;
        let mut clients: Vec<(TcpStream, usize)> = (0..1000)
            .filter_map(|_| {
                let c = TcpStream::connect(("127.0.0.1", port)).ok()?;
                c.set_nonblocking(true).unwrap();
                let mut c = (c, 0);
                let _ = c.0.write(b"GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: ");
                Some(c)
            })
            .collect();
        // Each client sends 400 KB of a header that never ends, as fast
        // as the server reads it, for up to 10 s.
        let chunk = vec![b'a'; 16 << 10];
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            let mut moved = false;
            clients.retain_mut(|(c, sent)| {
                if *sent >= 400_000 {
                    return true;
                }
                match c.write(&chunk) {
                    Ok(n) => {
                        *sent += n;
                        moved = true;
                        true
                    }
                    Err(e) => e.kind() == ErrorKind::WouldBlock,
                }
            });
            if !moved {
                std::thread::sleep(Duration::from_millis(50));
                if clients.iter().all(|(_, sent)| *sent >= 400_000) {
                    break;
                }
            }
        }
        // Health still answers while they hold their connections.
        let health = answered_within(port, "/_/health", WITHIN);
        let ResidentKib { peak, .. } = rss_kib(pid);
        let grew = peak.saturating_sub(base) >> 10;
        eprintln!(
            "{serving:?}: 1000 unfinished heads: peak RSS grew {grew} MiB (budget {BUDGET_MIB} MiB); {} clients still connected; health {health:?}",
            clients.len()
        );
        // of-watchdog holds every head whole, and is slow to answer
        // meanwhile: only the runtime is held to the bound.
        if serving == Serving::Runtime {
            assert_eq!(health, Ok(200), "{serving:?}");
            assert!(
                grew < BUDGET_MIB + 48,
                "peak RSS grew {grew} MiB past a {BUDGET_MIB} MiB budget\n{}",
                s.server.output()
            );
        }
        drop(clients);
    });
}
