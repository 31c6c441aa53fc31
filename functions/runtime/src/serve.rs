//! The standalone server: the of-watchdog HTTP-mode contract, served by the
//! function itself (no proxy hop), with the same settings, health, drain on
//! SIGTERM, `max_inflight` and metrics, plus the bounds of-watchdog leaves
//! to the function: a body limit and budget, a connection cap, a write
//! deadline, and accept back-off.
//!
//! Two runtimes: the front (one thread: accept, probes, signals, the
//! [`backstop`]) and the handlers' (a worker per core), where function
//! requests are parsed and run on their connection's task (see
//! [`handoff`]). A handler that blocks its thread or never yields stalls
//! only the handlers' threads: the front still answers health, answers 504
//! at `exec_timeout`, and drains.

use crate::backstop::{self, Backstop};
use crate::deadline::{Deadline, ReadClock};
use crate::request::{self, Conn, Record};
use crate::server_settings::ServerSettings;
use crate::slots::{
    PROBE_CONNECTIONS, PROBE_HEADER_TIMEOUT, Slot, raise_fd_limit, refuse, take_slot, wait_for_slot,
};
use crate::{Entry, call, call_log, dispatch, error, function_config, handoff, metrics_port};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Semaphore, watch};

pub(crate) struct Server {
    pub name: &'static str,
    pub entry: Entry,
    pub settings: ServerSettings,
    /// Where handlers run (see the module doc).
    pub handlers: tokio::runtime::Handle,
    /// Set on SIGTERM/SIGINT: health and ready answer 503 from then on.
    pub draining: AtomicBool,
    pub in_flight: AtomicUsize,
    /// Bytes of request bodies held in memory now (`max_buffered_bytes`).
    pub buffered: Arc<Semaphore>,
    /// Open connections (`max_connections`).
    pub(crate) connections: Arc<Semaphore>,
    /// Connections whose request line came on a probe slot, waiting for a
    /// regular one without holding it (as many as `max_connections`).
    pub(crate) waiting: Arc<Semaphore>,
    /// The connections on the handlers' runtime, as the front sees them.
    backstop: Backstop,
}

/// Serves `entry` as the function `name` with the settings of the
/// environment (see [`ServerSettings`]) until SIGTERM or SIGINT, then drains and
/// exits 0. Exits 2 with a message naming the cause if a setting is invalid
/// or the port cannot be bound.
pub fn serve(name: &'static str, entry: Entry) {
    function_config::set_primary(name);
    let settings = ServerSettings::from_env().unwrap_or_else(|e| fail(name, &e));
    raise_fd_limit();
    if let Err(e) = dispatch::check_guards().and_then(|()| call::check_key()) {
        fail(name, &e);
    }
    let handlers = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(format!("{name}-handler"))
        .build()
        .unwrap_or_else(|e| fail(name, &format!("cannot start tokio: {e}")));
    let front = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(name, &format!("cannot start tokio: {e}")));
    let backstop = Backstop::new(
        handlers.metrics().num_workers(),
        settings.limits.exec_timeout,
        settings.access_log,
    );
    let server: &'static Server = Box::leak(Box::new(Server {
        name,
        entry,
        buffered: Arc::new(Semaphore::new(crate::body::budget_units(
            settings.max_buffered_bytes,
        ))),
        connections: Arc::new(Semaphore::new(settings.max_connections)),
        waiting: Arc::new(Semaphore::new(settings.max_connections)),
        settings,
        handlers: handlers.handle().clone(),
        backstop,
        draining: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
    }));
    dispatch::serve_home(name, entry, &server.settings, &server.in_flight);
    let mut served = dispatch::merged();
    served.push(name);
    crate::metrics::serving(&served);
    error::bound_panic_messages();
    front.block_on(run(server));
    // Handlers abandoned at exec_timeout or by the drain, blocked or not,
    // must not hold the exit.
    handlers.shutdown_timeout(Duration::from_millis(100));
    std::process::exit(0)
}

async fn run(server: &'static Server) {
    let name = server.name;
    let s = &server.settings;
    let addr = SocketAddr::new(s.listen_address, s.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| {
            fail(
                name,
                &format!("cannot listen on {addr}: {e} (settings listen_address, port)"),
            )
        });
    // Installed before the first accept, explicitly: as PID 1 (a container's
    // init) the default dispositions would ignore SIGTERM and SIGINT.
    let mut term = signal(SignalKind::terminate())
        .unwrap_or_else(|e| fail(name, &format!("cannot handle SIGTERM: {e}")));
    let mut int = signal(SignalKind::interrupt())
        .unwrap_or_else(|e| fail(name, &format!("cannot handle SIGINT: {e}")));
    if s.call_log > 0 {
        call_log::enable(s.call_log);
    }
    if s.metrics_port != 0 {
        metrics_port::start(name, SocketAddr::new(s.listen_address, s.metrics_port));
    }
    let merged = dispatch::merged();
    dispatch::start_isolated();
    eprintln!(
        "{name}: listening on {addr}{}; {}",
        if merged.is_empty() {
            String::new()
        } else {
            format!(", with {} merged in-process", merged.join(", "))
        },
        s.listed(),
    );

    // After the signal: unhealthy at once, no new connections after
    // healthcheck_interval (so that the load balancer sees the 503 first).
    let (stop_tx, mut stop) = watch::channel(false);
    tokio::spawn(async move {
        let reason = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        server.draining.store(true, Ordering::SeqCst);
        eprintln!(
            "{name}: {reason}: health answers 503; no new connections in {:?}",
            server.settings.healthcheck_interval
        );
        tokio::time::sleep(server.settings.healthcheck_interval).await;
        let _ = stop_tx.send(true);
    });

    let graceful = GracefulShutdown::new();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(backstop::TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            server.backstop.check(std::time::Instant::now());
        }
    });
    let reserve = Arc::new(Semaphore::new(PROBE_CONNECTIONS));
    let mut accept_errors = 0u64;
    let mut backoff = Duration::from_millis(10);
    loop {
        let slot = tokio::select! {
            _ = stop.changed() => break,
            slot = take_slot(server, &reserve) => slot,
        };
        let stream = tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors (EMFILE/ENFILE) or memory: the
                    // connection stays queued; retrying at once would spin.
                    if accept_errors == 0 {
                        eprintln!("{name}: accept failed: {e}; backing off up to 1s (further failures of this burst are counted, not logged)");
                    }
                    accept_errors += 1;
                    drop(slot);
                    tokio::select! {
                        _ = stop.changed() => break,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
        };
        let accepted = tokio::time::Instant::now();
        if accept_errors > 0 {
            eprintln!("{name}: accepting again after {accept_errors} failed accepts");
            accept_errors = 0;
            backoff = Duration::from_millis(10);
        }
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            server,
            stream,
            slot,
            graceful.watcher(),
            accepted,
        ));
    }
    drop(listener);
    let left = server.in_flight.load(Ordering::SeqCst);
    eprintln!(
        "{name}: no new connections; draining {left} requests in flight (up to write_timeout {:?})",
        s.write_timeout
    );
    // Connections whose handler the backstop answered stay open until that
    // handler returns, if ever: the drain does not wait for them.
    let drained = async {
        tokio::select! {
            () = graceful.shutdown() => {}
            () = async {
                loop {
                    tokio::time::sleep(backstop::TICK).await;
                    if server.backstop.only_abandoned() {
                        break;
                    }
                }
            } => {}
        }
    };
    match tokio::time::timeout(s.write_timeout, drained).await {
        Ok(()) => eprintln!("{name}: drained; exiting"),
        Err(_) => eprintln!(
            "{name}: write_timeout reached with {} requests still in flight; exiting",
            server.in_flight.load(Ordering::SeqCst)
        ),
    }
}

/// One connection, from its first request line (see [`handoff`]): a probe
/// is answered here, on a connection that then closes; anything else is
/// served on the handlers' runtime, watched by the backstop, once it holds
/// a regular slot. Its first request must be read by `accepted` plus
/// `read_timeout`, line, headers and body together.
async fn connection(
    server: &'static Server,
    mut stream: TcpStream,
    slot: Slot,
    watcher: Watcher,
    accepted: tokio::time::Instant,
) {
    let s = &server.settings;
    let read_deadline = (!s.read_timeout.is_zero()).then(|| accepted + s.read_timeout);
    let line_deadline = match &slot {
        Slot::Probe(_) => {
            let probe = accepted + PROBE_HEADER_TIMEOUT;
            Some(read_deadline.map_or(probe, |d| d.min(probe)))
        }
        Slot::Regular(_) => read_deadline,
    };
    let read = handoff::first_line(&mut stream);
    let line = match line_deadline {
        Some(t) => tokio::time::timeout_at(t, read).await.unwrap_or(Ok(None)),
        None => read.await,
    };
    let Ok(Some(line)) = line else { return };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new());
    if line.probe {
        let left = line_deadline.map_or(PROBE_HEADER_TIMEOUT, |d| {
            d.saturating_duration_since(tokio::time::Instant::now())
        });
        builder.header_read_timeout(left).keep_alive(false);
        let io = TokioIo::new(Deadline::new(
            handoff::Replay::new(line.read, stream),
            s.write_timeout,
        ));
        let service = hyper::service::service_fn(move |req| request::handle(server, req, None));
        let _ = watcher.watch(builder.serve_connection(io, service)).await;
        drop(slot);
        return;
    }
    let permit = match slot {
        Slot::Regular(permit) => permit,
        Slot::Probe(reserve) => {
            drop(reserve);
            match wait_for_slot(server, read_deadline).await {
                Some(permit) => permit,
                None => return refuse(server, stream).await,
            }
        }
    };
    let handed = tokio::time::Instant::now();
    let Ok(stream) = stream.into_std() else {
        return;
    };
    let Ok(socket) = stream.try_clone() else {
        return;
    };
    let waiting = (!s.limits.exec_timeout.is_zero()).then(|| {
        let (method, log) = line.method_and_target(s.access_log);
        let record = Record::start(server.name, crate::call::UNVERIFIED, method, log);
        (s.limits.exec_timeout, record)
    });
    let clock = ReadClock::new(accepted, s.read_timeout);
    let watched = server.backstop.watch(server.name, socket, clock, waiting);
    // hyper's header timer also runs while a keep-alive connection waits
    // for its next request: it is the idle timeout too (Go's IdleTimeout
    // defaults to ReadTimeout).
    builder.header_read_timeout((!s.read_timeout.is_zero()).then_some(s.read_timeout));
    server.handlers.spawn(async move {
        if !watched.take_up() {
            return;
        }
        let Ok(stream) = TcpStream::from_std(stream) else {
            return;
        };
        let io = TokioIo::new(
            Deadline::new(
                handoff::Replay::new(line.read, stream),
                server.settings.write_timeout,
            )
            .reading(watched.clone()),
        );
        let first = Cell::new(Some(handed));
        let service = hyper::service::service_fn(move |req| {
            let watched = watched.clone();
            let handed = first.take();
            async move {
                let conn = Conn {
                    watched: &watched,
                    handed,
                };
                request::handle(server, req, Some(conn)).await
            }
        });
        let _ = watcher.watch(builder.serve_connection(io, service)).await;
        drop(permit);
    });
}

fn fail(name: &str, why: &str) -> ! {
    eprintln!("{name}: {why}");
    std::process::exit(2)
}
