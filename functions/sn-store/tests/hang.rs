//! A Redis that stops answering without closing its sockets (a lost node, a
//! partition; here `SIGSTOP`), and one that moved behind the same address:
//! requests fail within the response timeout instead of waiting on a dead
//! socket, and find Redis again within seconds of it answering.
//!
//! Run: `cargo test --release -p sn-store --test hang`.

use fmerge_testkit::Redis;
use sn_store::redis::AsyncCommands;
use sn_store::{RESPONSE_TIMEOUT, Store};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One `GET where` through `store`: its reply or error, and how long it took.
async fn get(store: &'static Store, url: &str) -> (Result<Option<String>, String>, Duration) {
    let asked = Instant::now();
    let result = async {
        let mut conn = store
            .conn(|| url.to_string())
            .await
            .map_err(|e| e.to_string())?;
        conn.get::<_, Option<String>>("where")
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    (result, asked.elapsed())
}

/// Asks until `want` comes back (at most `within`); how long that took.
async fn until(store: &'static Store, url: &str, want: &str, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (reply, _) = get(store, url).await;
        if reply.as_ref().is_ok_and(|r| r.as_deref() == Some(want)) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "no {want:?} within {within:?}: last {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_stops_answering_fails_requests_in_about_the_timeout_and_is_found_again() {
    static STORE: Store = Store::new();
    let redis = Redis::start();
    redis::cmd("SET")
        .arg("where")
        .arg("here")
        .exec(&mut redis.conn())
        .unwrap();
    let url = redis.url();
    assert_eq!(get(&STORE, &url).await.0, Ok(Some("here".into())));

    redis.pause();
    // Every request fails, each in about the timeout (plus a reconnect's
    // attempts once the connection was replaced), never the ~16 s of a
    // reconnect round nor the minutes of a dead socket.
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let (reply, took) = get(&STORE, &url).await;
        assert!(reply.is_err(), "an answer from a stopped Redis: {reply:?}");
        slowest = slowest.max(took);
    }
    eprintln!(
        "while Redis is stopped: 5 requests failed, the slowest in {slowest:?} (response timeout {RESPONSE_TIMEOUT:?})"
    );
    assert!(
        slowest < Duration::from_secs(10),
        "a request took {slowest:?}"
    );

    redis.resume();
    let back = until(&STORE, &url, "here", Duration::from_secs(30)).await;
    eprintln!("answering again {back:?} after SIGCONT");
}

/// A TCP forwarder on 127.0.0.1 that sends each new connection to the
/// current target; [`Forwarder::move_to`] points new connections elsewhere
/// and leaves the old ones open and silent, as a vanished host does.
struct Forwarder {
    port: u16,
    target: Arc<AtomicU64>,
    /// Sockets of silenced connections, kept open until the test ends.
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Forwarder {
    fn start(target: u16) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let target = Arc::new(AtomicU64::new(target as u64));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (to, keep) = (target.clone(), held.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let port = to.load(Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(("127.0.0.1", port as u16)) else {
                    continue;
                };
                for (from, into) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let (to, keep) = (to.clone(), keep.clone());
                    std::thread::spawn(move || pipe(from, into, port, &to, &keep));
                }
            }
        });
        Forwarder { port, target, held }
    }

    fn move_to(&self, port: u16) {
        self.target.store(port as u64, Ordering::SeqCst);
    }
}

/// Copies `from` into `into` while the forwarder still points at `port`;
/// then keeps both open and silent.
fn pipe(
    mut from: TcpStream,
    mut into: TcpStream,
    port: u64,
    to: &AtomicU64,
    held: &Mutex<Vec<TcpStream>>,
) {
    from.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = [0u8; 16 << 10];
    while to.load(Ordering::SeqCst) == port {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if into.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
    held.lock().unwrap().extend([from, into]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_moved_behind_the_same_address_is_reached_within_seconds() {
    static STORE: Store = Store::new();
    let (old, new) = (Redis::start(), Redis::start());
    for (redis, name) in [(&old, "old"), (&new, "new")] {
        redis::cmd("SET")
            .arg("where")
            .arg(name)
            .exec(&mut redis.conn())
            .unwrap();
    }
    let forwarder = Forwarder::start(old.port());
    let url = format!("redis://127.0.0.1:{}/", forwarder.port);
    assert_eq!(get(&STORE, &url).await.0, Ok(Some("old".into())));

    forwarder.move_to(new.port());
    let moved = until(&STORE, &url, "new", Duration::from_secs(30)).await;
    eprintln!(
        "reached the moved Redis {moved:?} after the move ({} silenced sockets held open)",
        forwarder.held.lock().unwrap().len()
    );
}
