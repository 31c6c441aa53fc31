//! Function processes, stub functions, and waiting for things to come up.

use crate::http::agent;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long to wait for a process to come up.
pub(crate) const STARTUP: Duration = Duration::from_secs(20);

/// The path of `program` (on PATH, or in /usr/sbin or /usr/bin), or a panic
/// naming the Debian package to install: the tests need the real thing and
/// never skip.
pub fn need(program: &str, package: &str) -> std::path::PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([
            Path::new("/usr/sbin").to_path_buf(),
            Path::new("/usr/bin").to_path_buf(),
        ])
        .map(|d| d.join(program))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!(
            "`{program}` is not installed, and the fmerge tests need a real one. \
             `bash .ci/run` installs it (Debian package `{package}`: apt-get install -y {package})."
        )
    })
}

/// Waits until `ready()` holds, or panics after `STARTUP`. `exited()` is
/// checked on each round so that a process that died is reported at once.
pub fn wait_for(
    what: &str,
    mut exited: impl FnMut() -> Option<String>,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP;
    loop {
        if ready() {
            return Ok(());
        }
        if let Some(why) = exited() {
            return Err(why);
        }
        if Instant::now() > deadline {
            return Err(format!("{what} did not come up within {STARTUP:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts a server (`what`, to name it) up to three times, each in a new
/// temp dir `<prefix>…` at a free port: `start` spawns it there and waits
/// until it answers. A failed start is most likely a port taken after all
/// between [`free_port`](crate::free_port) and the server's bind: retry.
pub(crate) fn start_fresh<T>(
    what: &str,
    prefix: &str,
    mut start: impl FnMut(tempfile::TempDir, u16) -> Result<T, String>,
) -> T {
    let mut last = String::new();
    for _ in 0..3 {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("temp dir");
        match start(dir, crate::free_port()) {
            Ok(server) => return server,
            Err(why) => last = why,
        }
    }
    panic!("cannot start {what}: {last}");
}

/// Runs `cmd` to its end and returns its output, or panics naming the
/// command and its stderr when it cannot run or fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// How `child` exited, or `None` when it still runs after `limit` (then
/// it is killed): for a start that must stop on its own.
pub fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            kill(child);
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// One function process (unmerged or merged binary). Killed on drop; its
/// stdout and stderr go to a temp file (see [`Function::output`]).
pub struct Function {
    child: Child,
    name: String,
    port: u16,
    log: tempfile::NamedTempFile,
}

/// The caller key the tests' function processes share (in
/// [`fmerge_contract::CALLER_KEY_VAR`]), as an application's functions
/// share one OpenFaaS secret.
pub const CALLER_KEY: &str = "fmerge-tests-caller-key-0123456789";

impl Function {
    /// Spawns `binary` as function `name` on 127.0.0.1:`port`, with env
    /// `port`, `GATEWAY_URL` (`http://127.0.0.1:9`, a closed port, unless
    /// `envs` sets it), `metrics_port` 0 (no metrics server, unless `envs`
    /// sets one: the default, 8081, is of-watchdog's fixed port, which the
    /// conformance tests' real of-watchdog must find free while other test
    /// binaries run beside them), the application's caller key
    /// ([`CALLER_KEY`], as every function of a deployment shares it) and
    /// `envs`, and waits until `GET /_/health` answers 200.
    /// Panics, with the process's output, if it exits or does not come up.
    pub fn start<I, K, V>(binary: impl AsRef<Path>, name: &str, port: u16, envs: I) -> Function
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let binary = binary.as_ref();
        let log = tempfile::Builder::new()
            .prefix(&format!("fmerge-{name}-"))
            .suffix(".log")
            .tempfile()
            .expect("log");
        let child = Command::new(binary)
            .env("port", port.to_string())
            .env("GATEWAY_URL", "http://127.0.0.1:9")
            .env("metrics_port", "0")
            .env(fmerge_contract::CALLER_KEY_VAR, CALLER_KEY)
            .envs(envs)
            .stdin(Stdio::null())
            .stdout(log.reopen().expect("log"))
            .stderr(log.reopen().expect("log"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", binary.display()));
        let mut function = Function {
            child,
            name: name.to_string(),
            port,
            log,
        };
        let health = format!("{}/_/health", function.url());
        let log = function.log.path().to_path_buf();
        let started = wait_for(
            name,
            || {
                function
                    .child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map(|s| format!("{name} exited ({s}):\n{}", read(&log)))
            },
            || {
                agent()
                    .get(&health)
                    .call()
                    .is_ok_and(|r| r.status().as_u16() == 200)
            },
        );
        if let Err(why) = started {
            panic!(
                "cannot start function {name} ({}) on port {port}: {why}\n{}",
                binary.display(),
                read(&log)
            );
        }
        function
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>`: the function itself, bypassing the gateway.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Everything the process wrote to stdout and stderr so far.
    pub fn output(&self) -> String {
        read(self.log.path())
    }

    /// Whether the process is still alive.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process now (e.g. to take a callee down mid-test).
    pub fn kill(&mut self) {
        kill(&mut self.child);
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        kill(&mut self.child);
    }
}

/// A fake function: an HTTP/1.1 server on 127.0.0.1 that answers every
/// request, after `delay`, with `status` and the JSON `body`, and records the
/// request bodies. Keep-alive, one thread per connection. Stops accepting on drop.
pub struct Stub {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Stub {
    pub fn start(status: u16, body: &str, delay: Duration) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("stub listener");
        let port = listener.local_addr().expect("stub address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped, body) = (requests.clone(), stop.clone(), body.to_string());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (seen, body) = (seen.clone(), body.clone());
                std::thread::spawn(move || serve_stub(conn, status, &body, delay, &seen));
            }
        });
        Stub {
            port,
            requests,
            stop,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The bodies of the requests answered or being answered, in arrival order.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(
            &SocketAddr::from(([127, 0, 0, 1], self.port)),
            Duration::from_secs(1),
        );
    }
}

fn serve_stub(
    conn: TcpStream,
    status: u16,
    body: &str,
    delay: Duration,
    seen: &Mutex<Vec<String>>,
) {
    let mut reader = BufReader::new(conn.try_clone().expect("stub stream"));
    let mut writer = conn;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        let mut first = true;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return, // Closed by the peer.
                Ok(_) => {}
            }
            if line == "\r\n" && !first {
                break;
            }
            first = false;
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut request = vec![0; length];
        if reader.read_exact(&mut request).is_err() {
            return;
        }
        seen.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(String::from_utf8_lossy(&request).into_owned());
        std::thread::sleep(delay);
        let head = format!(
            "HTTP/1.1 {status} Stub\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(body.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}
