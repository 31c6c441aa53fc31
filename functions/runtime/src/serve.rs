//! The standalone server: the of-watchdog HTTP-mode contract, served by the
//! function itself (no proxy hop), with the same settings, health, drain on
//! SIGTERM, `max_inflight` and metrics, plus the bounds of-watchdog leaves
//! to the function: a body limit and budget, a connection cap, a write
//! deadline, and accept back-off.
//!
//! Two runtimes: the I/O runtime (one thread: accept, every connection's
//! I/O and HTTP, probes, signals; the connection layer,
//! [`crate::connections`]) and the handlers' (a worker per core), where
//! each request's handler is spawned and awaited by the connection layer
//! with its deadline. A handler that blocks its thread or never yields
//! stalls only the handlers' threads: the connection layer still answers
//! health, answers 504 at `exec_timeout`, and drains.

use crate::connections::{self, Connections, InRequest, Limits};
use crate::request::{self, Server};
use crate::server_settings::ServerSettings;
use crate::{Entry, call, call_log, dispatch, error, function_config, isolation, metrics_port};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Semaphore, watch};

/// Serves `entry` as the function `name` with the settings of the
/// environment (see [`ServerSettings`]) until SIGTERM or SIGINT, then drains and
/// exits 0. Exits 2 with a message naming the cause if a setting is invalid
/// or the port cannot be bound.
pub fn serve(name: &'static str, entry: Entry) {
    function_config::set_group_caller(name);
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
    let io = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(name, &format!("cannot start tokio: {e}")));
    let server: &'static Server = Box::leak(Box::new(Server {
        name,
        entry,
        buffered: Arc::new(Semaphore::new(crate::body::budget_units(
            settings.max_buffered_bytes,
        ))),
        slots: Arc::new(Semaphore::new(settings.max_connections)),
        waiting: Arc::new(Semaphore::new(settings.max_connections)),
        settings,
        handlers: handlers.handle().clone(),
        draining: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
        abandoned: AtomicUsize::new(0),
    }));
    dispatch::serve_group_caller(name, entry, &server.settings, &server.in_flight);
    let mut served = dispatch::merged();
    served.push(name);
    crate::metrics::serving(&served);
    error::bound_panic_messages();
    io.block_on(run(server));
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
    isolation::start();
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
    let (stop_tx, stop) = watch::channel(false);
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

    let budget = (s.max_buffered_bytes > 0).then(|| server.buffered.clone());
    let connections: &'static Connections = Box::leak(Box::new(Connections::new(Limits {
        max_connections: s.max_connections,
        header_timeout: (!s.read_timeout.is_zero()).then_some(s.read_timeout),
        write_timeout: s.write_timeout,
        budget,
    })));
    let mut draining = connections::serve(connections, listener, stop, name, move |conn| {
        move |req| {
            // Taken up as hyper reads the head, before it reads on.
            let entered = InRequest::enter(&conn);
            request::handle(server, req, conn.clone(), entered)
        }
    })
    .await;
    let left = server.in_flight.load(Ordering::SeqCst);
    eprintln!(
        "{name}: no new connections; draining {left} requests in flight (up to write_timeout {:?})",
        s.write_timeout
    );
    let drained = async { while draining.recv().await.is_some() {} };
    match tokio::time::timeout(s.write_timeout, drained).await {
        Ok(()) => eprintln!("{name}: drained; exiting"),
        Err(_) => eprintln!(
            "{name}: write_timeout reached with {} requests still in flight; exiting",
            server.in_flight.load(Ordering::SeqCst)
        ),
    }
}

/// Raises the soft limit on open files to the hard one, as Go's runtime
/// does at start: each connection takes one.
fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `limit`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

fn fail(name: &str, why: &str) -> ! {
    eprintln!("{name}: {why}");
    std::process::exit(2)
}
