//! For the data-plane tests (drain, limits, timeouts, metrics): a raw
//! HTTP/1.1 exchange whose every byte the test controls, a server process
//! that can be sent signals, /proc figures, and the real of-watchdog.

mod proc;

pub use proc::{ResidentKib, cpu_ticks, rss_kib, ticks_per_second};

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One reply: status, headers (lower-case names) and body.
#[derive(Debug, Clone, PartialEq)]
pub struct RawResponse {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

/// Sends `method path` with `headers` and `body` to 127.0.0.1:`port` on a
/// new connection (`Connection: close`) and reads the whole reply.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<RawResponse, String> {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    stream
        .write_all(body)
        .map_err(|e| format!("send body: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    parse(&raw, method == "HEAD")
}

/// Parses a whole HTTP/1.1 reply (identity or chunked body).
pub fn parse(raw: &[u8], head_only: bool) -> Result<RawResponse, String> {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no complete reply: {text:?}"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let body = if head_only {
        String::new()
    } else if headers
        .get("transfer-encoding")
        .is_some_and(|t| t == "chunked")
    {
        let mut body = String::new();
        let mut rest = rest;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
            if size == 0 {
                break;
            }
            body.push_str(&after[..size]);
            rest = &after[size + 2..];
        }
        body
    } else {
        rest.to_string()
    };
    Ok(RawResponse {
        status,
        headers,
        body,
    })
}

/// How long until the server closes a connection on which `sent` was
/// written (and nothing more), or `None` if still open after `within`.
pub fn closed_after(port: u16, sent: &[u8], within: Duration) -> Option<Duration> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.write_all(sent).ok()?;
    let start = Instant::now();
    stream.set_read_timeout(Some(within)).ok()?;
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(start.elapsed());
            }
            Err(_) => return None,
        }
    }
}

/// A server process whose output goes to a temp file; it and its process
/// group are killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    log: tempfile::NamedTempFile,
}

impl Server {
    /// Spawns `command` and waits (up to 20 s) until GET /_/health on
    /// `port` answers 200.
    pub fn start(mut command: Command, port: u16) -> Server {
        let log = tempfile::Builder::new()
            .prefix("fmerge-dataplane-")
            .suffix(".log")
            .tempfile()
            .expect("log");
        // Its own process group, so that drop also ends what it forked (the
        // function behind of-watchdog).
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command
            .stdin(Stdio::null())
            .stdout(log.reopen().expect("log"))
            .stderr(log.reopen().expect("log"));
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {command:?}: {e}"));
        let mut server = Server { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if request(port, "GET", "/_/health", &[], b"").is_ok_and(|r| r.status == 200) {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{command:?} exited ({status}):\n{}", server.output());
            }
            assert!(
                Instant::now() < deadline,
                "{command:?} did not answer health within 20 s:\n{}",
                server.output()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn server_port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (e.g. "TERM") to the process.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{signal} {} failed", self.pid());
    }

    /// Waits up to `within` for the process to exit.
    pub fn wait_exit(&mut self, within: Duration) -> Option<Exited> {
        let start = Instant::now();
        while start.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(Exited {
                    code: status.code(),
                    after: start.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    pub fn output(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

/// How a process exited: its exit code (none if a signal ended it), and
/// how long after the wait began.
#[derive(Debug, Clone, Copy)]
pub struct Exited {
    pub code: Option<i32>,
    pub after: Duration,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.pid())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The real of-watchdog 0.11.6: `$FMERGE_OF_WATCHDOG`, or built by
/// `../shared/tools/of-watchdog/build.sh` (next to the workspace). `Err`
/// says why not; callers fail on it when `FMERGE_REQUIRE_TOOLS=1` (CI).
pub fn of_watchdog() -> Result<PathBuf, String> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("FMERGE_OF_WATCHDOG") {
                let path = PathBuf::from(path);
                return if path.is_file() {
                    Ok(path)
                } else {
                    Err(format!(
                        "FMERGE_OF_WATCHDOG={} is not a file",
                        path.display()
                    ))
                };
            }
            // `shared/` sits beside the main checkout (and above worktrees).
            let script = crate::workspace_root()
                .ancestors()
                .map(|d| d.join("shared/tools/of-watchdog/build.sh"))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!(
                        "no shared/tools/of-watchdog/build.sh above {}; set FMERGE_OF_WATCHDOG to an of-watchdog binary",
                        crate::workspace_root().display()
                    )
                })?;
            let out = Command::new("bash")
                .arg(&script)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} failed:\n{}",
                    script.display(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
            if path.is_file() {
                Ok(path)
            } else {
                Err(format!(
                    "{} printed {path:?}, which is not a file",
                    script.display()
                ))
            }
        })
        .clone()
}

/// Whether a missing tool must fail the test (CI sets `FMERGE_REQUIRE_TOOLS=1`).
fn tools_required() -> bool {
    std::env::var("FMERGE_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

/// Whether a tool a test needs is here, given `missing`, why it is not
/// (`None`: it is). Without it the test says it was skipped and returns;
/// where the tools are required (CI) that fails the test, never skips it.
pub fn tool_present(missing: Option<String>) -> bool {
    let Some(why) = missing else { return true };
    assert!(!tools_required(), "FMERGE_REQUIRE_TOOLS=1 and {why}");
    eprintln!("SKIPPED: {why}");
    false
}

/// The example binary `name` of `package`, built (`cargo build --example`,
/// the test's own profile and target dir) once per test process: `cargo
/// test --test X` does not build examples by itself.
///
/// Built with `--workspace`, not `-p package`: cargo unifies features over
/// the packages a command selects, so `-p` alone resolves another feature
/// set than `cargo test --workspace` and compiles the package and the
/// example again (in CI, beside the other lane's builds); over the whole
/// workspace the example `cargo test --workspace` built is fresh.
pub fn example_binary(package: &str, name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    // The test binary is <target>/<profile>/deps/<test>-<hash>.
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let target_dir = profile_dir.parent().expect("target");
    let profile = profile_dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(crate::workspace_root())
        .args(["build", "--workspace", "--example", name, "--target-dir"])
        .arg(target_dir);
    if profile == "release" {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.is_file(),
        "{}, {package}'s example, is missing after {cmd:?}",
        path.display()
    );
    built.push((name.to_string(), path.clone()));
    path
}

/// The runtime's probe function (`fmerge-runtime`'s `examples/probe.rs`) on
/// 127.0.0.1 with a metrics port, the tests' caller key and `env`.
pub fn probe(env: &[(&str, &str)]) -> ProbeServer {
    let (port, metrics) = (crate::free_port(), crate::free_port());
    let mut cmd = Command::new(example_binary("fmerge-runtime", "probe"));
    cmd.env("port", port.to_string())
        .env("metrics_port", metrics.to_string())
        .env("listen_address", "127.0.0.1")
        .env(fmerge_contract::CALLER_KEY_VAR, crate::CALLER_KEY)
        .envs(env.iter().copied());
    ProbeServer {
        server: Server::start(cmd, port),
        metrics,
    }
}

/// A [`probe`] server, and its metrics port.
pub struct ProbeServer {
    pub server: Server,
    pub metrics: u16,
}

/// Sends `n` requests to `/echo` on one connection, each with a made-up
/// method (`M0`, `M1`, …), then one GET that closes it; the statuses of the
/// replies, in order.
pub fn method_flood(port: u16, n: usize) -> Vec<u16> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let flood: String = (0..n)
        .map(|i| format!("M{i} /echo HTTP/1.1\r\nHost: x\r\n\r\n"))
        .collect();
    c.write_all(flood.as_bytes()).expect("send");
    c.write_all(b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut replies = Vec::new();
    c.read_to_end(&mut replies).expect("read");
    replies
        .windows(12)
        .filter_map(|w| w.strip_prefix(b"HTTP/1.1 "))
        .filter_map(|code| std::str::from_utf8(code).ok()?.parse().ok())
        .collect()
}

/// The runtime's probe function (`examples/probe.rs`) alone on a free
/// loopback port, with the application's caller key, no metrics port, and
/// `env`.
pub fn keyed_probe(env: &[(&str, &str)]) -> Server {
    let port = crate::free_port();
    let mut cmd = Command::new(example_binary("fmerge-runtime", "probe"));
    cmd.env("port", port.to_string())
        .env("metrics_port", "0")
        .env("listen_address", "127.0.0.1")
        .env(fmerge_contract::CALLER_KEY_VAR, crate::CALLER_KEY)
        .envs(env.iter().copied());
    Server::start(cmd, port)
}
