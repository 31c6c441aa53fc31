//! The in-pod gateway stand-in: an HTTP/1.1 server on 127.0.0.1, one thread
//! per connection, that the interposed `connect` sends gateway connections
//! to. A call to a member is run here; anything else is relayed to the real
//! gateway, so a partial merge keeps working.

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use crate::cgi::{self, Call};
use crate::http::{self, Request};
use crate::member::{self, Reply};
use crate::relay::{self, Upstream};
use crate::servers;

/// Finds where an accepted connection was originally headed.
pub type Origin = dyn Fn(&TcpStream) -> Option<SocketAddr> + Send + Sync;

/// What the server needs from its surroundings, so that tests can run it
/// with their own members and upstream.
pub struct Config {
    /// Whether `/function/<name>` is served here.
    pub is_member: Box<dyn Fn(&str) -> bool + Send + Sync>,
    /// Runs a call to a member.
    pub run: Box<dyn Fn(&Call) -> Reply + Send + Sync>,
    /// Where an accepted connection was originally headed.
    pub origin: Box<Origin>,
}

impl Config {
    /// This binary's: its table's members, run as processes, and the
    /// destinations the interposed `connect` noted.
    pub fn merged() -> Config {
        Config {
            is_member: Box::new(|name| crate::member_named(name).is_some()),
            run: Box::new(|call| match crate::member_named(&call.name) {
                Some(m) => member::run(m, call),
                None => reply(
                    502,
                    &format!("{} is not a member of this binary", call.name),
                ),
            }),
            origin: Box::new(|s| crate::gateway::state().take_origin(s.peer_addr().ok()?.port())),
        }
    }
}

/// Serves `listener` on a thread of its own.
pub fn spawn(listener: TcpListener, config: Arc<Config>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("fmerge-gateway".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let config = Arc::clone(&config);
                // A call to a member may run it on this thread.
                let _ = crate::inproc::thread().spawn(move || {
                    let _ = serve_connection(stream, &config);
                });
            }
        })?;
    Ok(())
}

/// The port of this binary's stand-in, started on first need; `None` if it
/// cannot be started (connections then go where they were addressed).
pub fn stand_in_port() -> Option<u16> {
    static PORT: OnceLock<Option<u16>> = OnceLock::new();
    *PORT.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").ok()?;
        let port = listener.local_addr().ok()?.port();
        spawn(listener, Arc::new(Config::merged())).ok()?;
        Some(port)
    })
}

/// A reply with a plain-text body.
fn reply(status: u16, text: &str) -> Reply {
    Reply {
        status,
        headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
        body: text.as_bytes().to_vec(),
    }
}

/// Writes `r` with a `Content-Length`, without its body for a HEAD request.
pub fn write_reply(w: &mut dyn Write, r: &Reply, method: &str, keep: bool) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", r.status, http::reason(r.status));
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n", r.body.len()));
    if !keep {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    if !method.eq_ignore_ascii_case("HEAD") {
        w.write_all(&r.body)?;
    }
    w.flush()
}

/// The call `req` makes to a member served here, if it is one.
pub fn member_call(req: &Request, is_member: &dyn Fn(&str) -> bool) -> Option<Call> {
    let (name, rest, query) = cgi::function_target(&req.target)?;
    if !is_member(name) {
        return None;
    }
    Some(Call {
        name: name.to_string(),
        method: req.method.clone(),
        path: if rest.is_empty() {
            "/".to_string()
        } else {
            cgi::decode_path(rest)
        },
        query: query.map(str::to_string),
        headers: req.headers.clone(),
        body: req.body.clone(),
        chunked: req.chunked,
    })
}

/// The member `req` calls, if it serves HTTP itself ([`servers`]).
fn serving_member(req: &Request, config: &Config) -> Option<&'static crate::Member> {
    let (name, _, _) = cgi::function_target(&req.target)?;
    let member = crate::member_named(name)?;
    (member.mode == crate::Mode::Http && (config.is_member)(name)).then_some(member)
}

/// Serves one client connection until either side ends it.
pub fn serve_connection(stream: TcpStream, config: &Config) -> io::Result<()> {
    let origin = (config.origin)(&stream);
    stream.set_nodelay(true)?;
    serve_stream(stream.try_clone()?, stream, origin, config)
}

/// Serves the client at the other end of `stream`, a socket pair the
/// interposed `connect` made in place of a connection to the gateway
/// `origin`, on a thread of its own, `read` being what was already read
/// from it; `false` if none could be started.
pub fn serve_pair(stream: UnixStream, origin: SocketAddr, read: Vec<u8>) -> bool {
    on_stand_in(Box::new(move || serve_paired(stream, origin, read)))
}

/// Runs `job` on a thread of the stand-in's (which acts for no one): an
/// idle one, else a new one; `false` if none could be started.
pub fn on_stand_in(mut job: Job) -> bool {
    // An idle thread takes it, else a new one: a thread's start costs
    // about as much as the rest of a call in the caller's process.
    while let Some(idle) = lock(&IDLE).pop() {
        match idle.send(job) {
            Ok(()) => return true,
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    crate::inproc::thread()
        .spawn(move || {
            // A thread started while acting for a member inherits it
            // (`pthread_create`); the stand-in acts for no one.
            crate::inproc::act_for_no_one();
            job();
            // Then wait for more, a while, as one of the idle threads.
            loop {
                let (give, take) = mpsc::channel();
                {
                    let mut idle = lock(&IDLE);
                    if idle.len() >= MAX_IDLE {
                        return;
                    }
                    idle.push(give);
                }
                match take.recv_timeout(IDLE_FOR) {
                    Ok(job) => job(),
                    // Its sender is dropped when it leaves the list.
                    Err(_) => return,
                }
            }
        })
        .is_ok()
}

/// Work for a thread of the stand-in's.
pub type Job = Box<dyn FnOnce() + Send>;

/// Threads waiting for a job ([`on_stand_in`]).
static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());
/// At most this many wait; more end when their job does. As tokio's
/// blocking pool keeps its threads (its cap, its keep-alive): under load as
/// many wait as were busy at the peak, and they end once idle for
/// [`IDLE_FOR`]. With a cap below the calls in flight, each call past it
/// starts a thread that ends with its job, a start and an end as costly as
/// the call, which slows calls and puts more in flight.
const MAX_IDLE: usize = 512;
/// How long an idle thread waits before it ends.
const IDLE_FOR: Duration = Duration::from_secs(10);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// This binary's [`Config`], for the connections the interposed `connect`
/// paired.
pub fn merged_config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(Config::merged)
}

fn serve_paired(stream: UnixStream, origin: SocketAddr, read: Vec<u8>) {
    if let Ok(reader) = stream.try_clone() {
        let reader = io::Cursor::new(read).chain(reader);
        let _ = serve_stream(reader, stream, Some(origin), merged_config());
    }
}

/// The connections a client's connection keeps between its requests: to a
/// member's own server, to the gateway.
#[derive(Default)]
pub struct Kept {
    server: Option<Upstream>,
    upstream: Option<Upstream>,
}

/// Serves one client connection, read from `read` and answered on `write`
/// (two handles of one socket), `origin` being where it was headed.
fn serve_stream(
    read: impl Read,
    write: impl Write,
    origin: Option<SocketAddr>,
    config: &Config,
) -> io::Result<()> {
    let mut reader = BufReader::new(read);
    let mut writer = BufWriter::new(write);
    let mut kept = Kept::default();
    loop {
        let req = match http::read_request(&mut reader, &mut writer) {
            Ok(Some(req)) => req,
            Ok(None) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return write_reply(&mut writer, &reply(400, &e.to_string()), "GET", false);
            }
            Err(e) => return Err(e),
        };
        if !answer(&req, origin, config, &mut kept, &mut writer)? {
            return writer.flush();
        }
    }
}

/// Answers `req`, a request on a client's connection headed for the
/// gateway `origin`, on `writer`: a member's own server or its `handle`, a
/// member run here, else the gateway. Whether the connection goes on.
pub fn answer(
    req: &Request,
    origin: Option<SocketAddr>,
    config: &Config,
    kept: &mut Kept,
    writer: &mut dyn Write,
) -> io::Result<bool> {
    let keep = req.keep_alive();
    if let Some(member) = serving_member(req, config) {
        let went_on = match crate::handles::handled(member) {
            Some(handle) => crate::handles::answer(member, handle, req, writer)?,
            None => servers::forward(&mut kept.server, member, req, writer)?,
        };
        return Ok(keep && went_on);
    }
    if let Some(call) = member_call(req, &*config.is_member) {
        write_reply(writer, &(config.run)(&call), &req.method, keep)?;
        return Ok(keep);
    }
    let Some(dest) = origin else {
        let text = "error: this connection was not redirected from a gateway address, so there is nowhere to relay to\nfix: call /function/<member> or connect through the gateway URL";
        write_reply(writer, &reply(502, text), &req.method, false)?;
        return Ok(false);
    };
    match relay::forward(&mut kept.upstream, dest, req, writer) {
        Ok(up_keep) => Ok(keep && up_keep),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(e),
        Err(e) => {
            let text = format!(
                "error: the gateway {dest} did not answer: {e}\nfix: check that it runs and is reachable from this pod"
            );
            write_reply(writer, &reply(502, &text), &req.method, false)?;
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::time::Instant;

    #[test]
    fn as_many_threads_wait_for_calls_as_were_busy_with_them() {
        // More calls in flight at once than a small cap would keep.
        const BUSY: usize = 20;
        let all_in = Arc::new(Barrier::new(BUSY + 1));
        for _ in 0..BUSY {
            let all_in = Arc::clone(&all_in);
            assert!(on_stand_in(Box::new(move || {
                all_in.wait();
            })));
        }
        // Each job holds its thread until all of them run at once.
        all_in.wait();
        let t0 = Instant::now();
        while lock(&IDLE).len() < BUSY {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{} of the {BUSY} threads wait for the next calls",
                lock(&IDLE).len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
