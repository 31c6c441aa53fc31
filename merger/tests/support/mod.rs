//! The test harness shared by every integration test of fmerge (`mod support;`).
//!
//! It runs the real thing on 127.0.0.1 only: a `redis-server`, an `nginx`
//! standing in for the OpenFaaS gateway, and each function as its own
//! process, built once per test process with the same flags as the merger
//! uses. Every process is killed and every temp dir removed on `Drop`.
//!
//! - [`free_port`], [`post`], [`get`]: ports and a blocking HTTP client.
//! - [`Redis`]: a throwaway redis-server; [`Redis::dump`] snapshots it.
//! - [`Gateway`]: nginx routing `/function/<name>` to a port, counting calls.
//! - [`Function`]: one function process; [`Stub`]: a fake function.
//! - [`function_binary`]: the unmerged binaries, built once.
//! - [`Deployment`]: socialNetwork behind one gateway, unmerged or with any
//!   set of (merged) binaries.
//! - [`seed_social_network`], [`SAMPLE_POSTS`]: a standard data set.
//!
//! Needs `redis-server` and `nginx` on PATH (Debian: packages `redis-server`
//! and `nginx`); `bash .ci/run` installs them. Without them the tests panic,
//! they never skip.

#![allow(dead_code)]

pub mod registry;

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The function crates of the workspace, in call-tree order (the root first).
pub const FUNCTIONS: &[&str] = &[
    "compose-post",
    "unique-id",
    "text-service",
    "url-shorten",
    "user-mention",
    "store-post",
    "write-home-timeline",
    "social-graph-get-followers",
];

/// The target every function is built for.
pub const TARGET: &str = "x86_64-unknown-linux-gnu";

/// RUSTFLAGS for building the functions. They MUST equal the merger's: the
/// merger builds into the same target dir ([`build_dir`]), so with the same
/// flags the functions compile once and both share them; with different
/// flags each build would invalidate the other's.
pub const FUNCTION_RUSTFLAGS: &str = "--emit=llvm-bc,link";

/// How long to wait for a process to come up.
const STARTUP: Duration = Duration::from_secs(20);

/// The address the Redis URL defaults to inside every function: never let a
/// test fall back to it (see [`redis_env`]).
pub const CLUSTER_REDIS_URL: &str = "redis://sn-redis-master.openfaas-fn.svc.cluster.local:6379";

// ---------------------------------------------------------------- paths, build

/// The workspace root (the parent of `merger/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("merger/ has a parent").to_path_buf()
}

/// `CARGO_TARGET_DIR` of the function builds: `<workspace>/target/fmerge/build`.
pub fn build_dir() -> PathBuf {
    workspace_root().join("target/fmerge/build")
}

/// Builds every crate of [`FUNCTIONS`] (unmerged, release, [`TARGET`],
/// [`FUNCTION_RUSTFLAGS`]) once per test process, and returns the directory
/// that holds the binaries. Panics with cargo's output if the build fails.
pub fn function_binaries() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace_root())
            .args(["build", "--release", "--target", TARGET])
            .env("CARGO_TARGET_DIR", build_dir())
            .env("RUSTFLAGS", FUNCTION_RUSTFLAGS)
            // It would take precedence over RUSTFLAGS.
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS");
        for f in FUNCTIONS {
            cmd.args(["-p", f]);
        }
        let out = cmd.output().expect("cannot run cargo to build the functions");
        if !out.status.success() {
            panic!("building the functions failed ({:?}):\n{}", cmd, String::from_utf8_lossy(&out.stderr));
        }
        build_dir().join(TARGET).join("release")
    })
}

/// The unmerged binary of function `name` (built on first use).
pub fn function_binary(name: &str) -> PathBuf {
    let path = function_binaries().join(name);
    assert!(path.is_file(), "no binary {} after the build", path.display());
    path
}

/// The unmerged binary `bin` from fmerge's own build (the same build as a
/// merge, so its units are the ones merged).
pub fn built_binary(bin: &str) -> PathBuf {
    let path = build_dir().join(TARGET).join("release").join(bin);
    assert!(path.is_file(), "no binary {} after the merge's build", path.display());
    path
}

/// Copies the fixture workspace `merger/tests/fixtures/<name>` to a temp
/// dir, replacing `@RUNTIME@` with the path of this repo's runtime and each
/// `(pattern, value)`, and gives it this repo's lock file, so that it builds
/// with the same dependency versions into the shared target dir.
pub fn fixture(name: &str, replace: &[(&str, &str)]) -> tempfile::TempDir {
    let src = workspace_root().join("merger/tests/fixtures").join(name);
    let dir = tempfile::Builder::new().prefix(&format!("fmerge-{name}-")).tempdir().expect("temp dir");
    let runtime = workspace_root().join("functions/runtime");
    for entry in walk(&src) {
        let dest = dir.path().join(entry.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let mut text = std::fs::read_to_string(&entry).unwrap().replace("@RUNTIME@", runtime.to_str().unwrap());
        for (pattern, value) in replace {
            text = text.replace(pattern, value);
        }
        std::fs::write(dest, text).unwrap();
    }
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();
    dir
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

/// `fmerge build ARGS` run in `dir`, building into this repo's target dir
/// (so that dependencies compile once for all tests); returns (success,
/// stdout, stderr).
pub fn fmerge_in(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let target = workspace_root().join("target");
    let out = Command::new(env!("CARGO_BIN_EXE_fmerge"))
        .current_dir(dir)
        .arg("build")
        .args(args)
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("run fmerge");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// The SHA-256 of a file, as hex.
pub fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().expect("sha256sum");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_string()
}

// ---------------------------------------------------------------- ports, HTTP

/// A TCP port that is free on 127.0.0.1 now and was not handed out before in
/// this process. Picked at random below Linux's ephemeral range (32768+), so
/// that no outgoing connection takes it before the test binds it.
pub fn free_port() -> u16 {
    static GIVEN: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    let mut given = GIVEN.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let port = 20_000 + (random() % 12_000) as u16;
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.insert(port);
            return port;
        }
    }
    panic!("no free port in 20000..32000 on 127.0.0.1");
}

fn random() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    static STATE: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    STATE.get_or_init(RandomState::new).hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::Agent::config_builder()
            // Longer than the runtime's 30 s invoke timeout, so that a test
            // sees the function's own answer; a hang still fails the test.
            .timeout_global(Some(Duration::from_secs(60)))
            .http_status_as_error(false)
            .proxy(None) // Only ever 127.0.0.1, whatever http_proxy says.
            .build()
            .into()
    })
}

/// POSTs `json` to `url` (blocking, 60 s timeout) and returns the status and
/// body. Panics if there is no HTTP answer at all.
pub fn post(url: &str, json: &str) -> (u16, String) {
    try_post(url, json).unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

/// [`post`] that returns transport errors instead of panicking.
pub fn try_post(url: &str, json: &str) -> Result<(u16, String), ureq::Error> {
    let mut reply = agent().post(url).header("content-type", "application/json").send(json)?;
    let status = reply.status().as_u16();
    Ok((status, reply.body_mut().read_to_string()?))
}

/// GETs `url`; like [`post`].
pub fn get(url: &str) -> (u16, String) {
    let result = agent().get(url).call().and_then(|mut r| Ok((r.status().as_u16(), r.body_mut().read_to_string()?)));
    result.unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

fn need(program: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(program).is_file();
    if !found {
        panic!(
            "`{program}` is not installed, and the fmerge tests need a real one. \
             `bash .ci/run` installs it (Debian package `{package}`: apt-get install -y {package})."
        );
    }
}

/// Waits until `ready()` holds, or panics after [`STARTUP`]. `exited()` is
/// checked on each round so that a process that died is reported at once.
fn wait_for(
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

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

// ---------------------------------------------------------------- Redis

/// A real `redis-server` on 127.0.0.1 at a random port, with no persistence,
/// in its own temp dir. Killed on drop.
pub struct Redis {
    child: Child,
    ip: String,
    port: u16,
    dir: tempfile::TempDir,
}

impl Redis {
    /// Starts it and waits until it answers PING.
    pub fn start() -> Redis {
        Redis::start_at("127.0.0.1")
    }

    /// [`Redis::start`] on another loopback address (`127.0.0.12`, say), for
    /// an endpoint of another length.
    pub fn start_at(ip: &str) -> Redis {
        assert!(ip.starts_with("127."), "tests stay on loopback");
        need("redis-server", "redis-server");
        let mut last = String::new();
        for _ in 0..3 {
            let dir = tempfile::Builder::new().prefix("fmerge-redis-").tempdir().expect("temp dir");
            let port = free_port();
            let log = std::fs::File::create(dir.path().join("redis.log")).expect("redis log");
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", ip, "--save", "", "--appendonly", "no"])
                .args(["--daemonize", "no", "--logfile", ""])
                .arg("--dir")
                .arg(dir.path())
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("redis log"))
                .stderr(log)
                .spawn()
                .expect("cannot spawn redis-server");
            let mut redis = Redis { child, ip: ip.to_string(), port, dir };
            let url = redis.url();
            let log = redis.dir.path().join("redis.log");
            let started = wait_for(
                "redis-server",
                || redis.child.try_wait().ok().flatten().map(|s| format!("redis-server exited ({s}):\n{}", read(&log))),
                || ping(&url),
            );
            match started {
                Ok(()) => return redis,
                Err(why) => last = why, // Most likely the port was taken after all: retry.
            }
        }
        panic!("cannot start redis-server: {last}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr())
    }

    /// `127.0.0.1:<port>`
    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// A new synchronous connection.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url()).and_then(|c| c.get_connection()).expect("cannot connect to the test Redis")
    }

    /// Every key and its value rendered as text, for comparing two runs:
    /// a string as is; a sorted set as `member@score\n` lines in rank order;
    /// a list as `list:` then its items in order, a set as `set:` then its
    /// members sorted, a hash as `hash:` then `field=value` sorted, one per line.
    pub fn dump(&self) -> BTreeMap<String, String> {
        let mut conn = self.conn();
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).expect("KEYS");
        let mut dump = BTreeMap::new();
        for key in keys {
            let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).expect("TYPE");
            let value = match kind.as_str() {
                "string" => redis::cmd("GET").arg(&key).query::<String>(&mut conn).expect("GET"),
                "zset" => {
                    let pairs: Vec<(String, String)> = redis::cmd("ZRANGE")
                        .arg(&key)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES")
                        .query(&mut conn)
                        .expect("ZRANGE");
                    pairs.iter().map(|(m, s)| format!("{m}@{s}\n")).collect()
                }
                "list" => {
                    let items: Vec<String> =
                        redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query(&mut conn).expect("LRANGE");
                    format!("list:\n{}", items.join("\n"))
                }
                "set" => {
                    let mut items: Vec<String> = redis::cmd("SMEMBERS").arg(&key).query(&mut conn).expect("SMEMBERS");
                    items.sort();
                    format!("set:\n{}", items.join("\n"))
                }
                "hash" => {
                    let items: BTreeMap<String, String> =
                        redis::cmd("HGETALL").arg(&key).query(&mut conn).expect("HGETALL");
                    format!("hash:\n{}", items.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>())
                }
                other => format!("<{other}>"),
            };
            dump.insert(key, value);
        }
        dump
    }
}

fn ping(url: &str) -> bool {
    let Ok(client) = redis::Client::open(url) else { return false };
    let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200)) else { return false };
    redis::cmd("PING").query::<String>(&mut conn).is_ok_and(|p| p == "PONG")
}

impl Drop for Redis {
    fn drop(&mut self) {
        kill(&mut self.child);
    }
}

/// The environment that points `functions` at the Redis at `url`, whether
/// they run standalone (`REDIS_URL`) or merged into another function's binary
/// (`<FUNCTION>__REDIS_URL`). Pass it to every function process, so that none
/// falls back to [`CLUSTER_REDIS_URL`].
pub fn redis_env(url: &str, functions: &[&str]) -> Vec<(String, String)> {
    let mut env = vec![("REDIS_URL".to_string(), url.to_string())];
    env.extend(functions.iter().map(|f| (namespaced(f, "REDIS_URL"), url.to_string())));
    env
}

/// The runtime's name for `key` of a function merged into another's binary,
/// from the contract.
pub use fmerge_contract::namespaced;

// ---------------------------------------------------------------- Gateway

/// A real nginx in the role of the OpenFaaS gateway: `POST /function/<name>`
/// (and `/function/<name>/…`) is proxied, prefix stripped, to
/// `127.0.0.1:<port>` of that route over keep-alive HTTP/1.1. An unknown
/// function is a 404; an unreachable one a 502 with the text
/// `Can't reach service for: <name>.` (as the OpenFaaS gateway says).
/// Each request is logged with its function name (see [`Gateway::requests_for`]).
/// Killed on drop.
pub struct Gateway {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Gateway {
    /// Starts nginx with one route per `(function name, port)` and waits until
    /// it answers.
    pub fn start(routes: &[(&str, u16)]) -> Gateway {
        need("nginx", "nginx");
        let mut last = String::new();
        for _ in 0..3 {
            let dir = tempfile::Builder::new().prefix("fmerge-nginx-").tempdir().expect("temp dir");
            let port = free_port();
            std::fs::write(dir.path().join("nginx.conf"), nginx_conf(dir.path(), port, routes)).expect("nginx.conf");
            let log = std::fs::File::create(dir.path().join("stderr.log")).expect("nginx stderr");
            let child = Command::new(nginx_path())
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(dir.path().join("nginx.conf"))
                // Before it reads the conf, nginx opens its compiled-in error log.
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("nginx stderr"))
                .stderr(log)
                .spawn()
                .expect("cannot spawn nginx");
            let mut gateway = Gateway { child, port, dir };
            let (errors, stderr) = (gateway.dir.path().join("error.log"), gateway.dir.path().join("stderr.log"));
            let flush = gateway.flush_url();
            let started = wait_for(
                "nginx",
                || {
                    let status = gateway.child.try_wait().ok().flatten()?;
                    Some(format!("nginx exited ({status}):\n{}{}", read(&stderr), read(&errors)))
                },
                || agent().get(&flush).call().is_ok_and(|r| r.status().as_u16() == 204),
            );
            match started {
                Ok(()) => return gateway,
                Err(why) => last = why,
            }
        }
        panic!("cannot start nginx: {last}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>`: what functions get as `GATEWAY_URL`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:<port>/function/<name>`
    pub fn function_url(&self, name: &str) -> String {
        format!("{}/function/{name}", self.url())
    }

    fn flush_url(&self) -> String {
        format!("{}/_/flush", self.url())
    }

    /// How many requests for `/function/<name>` the gateway has finished so
    /// far, whatever their status.
    ///
    /// nginx writes each access-log line unbuffered but only after the reply,
    /// so a client can see a reply before its line. The gateway is a single
    /// process that logs a request in the same event-loop step as it sends
    /// the reply's last byte; so when the probe request sent first has been
    /// answered, every reply seen before has been logged.
    pub fn requests_for(&self, name: &str) -> usize {
        self.access_log().lines().filter(|line| line.split(' ').next() == Some(name)).count()
    }

    /// The access log, one line per finished request:
    /// `<function> <status> <request time s> <upstream addr> <method> <uri>`.
    pub fn access_log(&self) -> String {
        let _ = agent().get(&self.flush_url()).call();
        read(&self.dir.path().join("access.log"))
    }

    /// nginx's error log, for failure messages.
    pub fn error_log(&self) -> String {
        read(&self.dir.path().join("error.log"))
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        // One process (`master_process off`): nothing is left behind.
        kill(&mut self.child);
    }
}

fn nginx_path() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("nginx")).find(|p| p.is_file()))
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/nginx"))
}

fn nginx_conf(dir: &Path, port: u16, routes: &[(&str, u16)]) -> String {
    let d = dir.display();
    // `master_process off`: a single process that serves every request in
    // order (which `requests_for` relies on) and that a kill takes down whole,
    // with no worker to orphan. It runs as whoever started it, root included,
    // and only touches files in its own temp dir.
    let mut conf = format!(
        r#"daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    map $uri $fmerge_function {{
        ~^/function/(?<name>[^/]+) $name;
        default -;
    }}
    log_format fmerge '$fmerge_function $status $request_time $upstream_addr $request_method $uri';
    access_log {d}/access.log fmerge;
    keepalive_requests 1000000;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_read_timeout 120s;
"#
    );
    for (i, (_, upstream)) in routes.iter().enumerate() {
        // max_fails=0: never mark a function down, each request tries it.
        conf += &format!("    upstream fn{i} {{ server 127.0.0.1:{upstream} max_fails=0; keepalive 32; }}\n");
    }
    conf += &format!("    server {{\n        listen 127.0.0.1:{port};\n");
    conf += "        location = /_/flush { access_log off; return 204; }\n";
    conf += "        location @unreachable { default_type text/plain; return 502 \"Can't reach service for: $fmerge_function.\\n\"; }\n";
    for (i, (name, _)) in routes.iter().enumerate() {
        // `<name>.openfaas-fn` is the same function, in OpenFaaS's default namespace.
        for location in [format!("= /function/{name}"), format!("/function/{name}/"), format!("= /function/{name}.openfaas-fn")] {
            conf += &format!(
                "        location {location} {{ proxy_pass http://fn{i}/; error_page 502 504 = @unreachable; }}\n"
            );
        }
    }
    conf += "    }\n}\n";
    conf
}

// ---------------------------------------------------------------- Function

/// One function process (unmerged or merged binary). Killed on drop; its
/// stdout and stderr go to a temp file (see [`Function::output`]).
pub struct Function {
    child: Child,
    name: String,
    port: u16,
    log: tempfile::NamedTempFile,
}

impl Function {
    /// Spawns `binary` as function `name` on 127.0.0.1:`port`, with env
    /// `port`, `GATEWAY_URL` (`http://127.0.0.1:9`, a closed port, unless
    /// `envs` sets it) and `envs`, and waits until `GET /_/health` answers 200.
    /// Panics, with the process's output, if it exits or does not come up.
    pub fn start<I, K, V>(binary: impl AsRef<Path>, name: &str, port: u16, envs: I) -> Function
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let binary = binary.as_ref();
        let log = tempfile::Builder::new().prefix(&format!("fmerge-{name}-")).suffix(".log").tempfile().expect("log");
        let child = Command::new(binary)
            .env("port", port.to_string())
            .env("GATEWAY_URL", "http://127.0.0.1:9")
            .envs(envs)
            .stdin(Stdio::null())
            .stdout(log.reopen().expect("log"))
            .stderr(log.reopen().expect("log"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", binary.display()));
        let mut function = Function { child, name: name.to_string(), port, log };
        let health = format!("{}/_/health", function.url());
        let log = function.log.path().to_path_buf();
        let started = wait_for(
            name,
            || function.child.try_wait().ok().flatten().map(|s| format!("{name} exited ({s}):\n{}", read(&log))),
            || agent().get(&health).call().is_ok_and(|r| r.status().as_u16() == 200),
        );
        if let Err(why) = started {
            panic!("cannot start function {name} ({}) on port {port}: {why}\n{}", binary.display(), read(&log));
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

// ---------------------------------------------------------------- Stub

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
        Stub { port, requests, stop }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The bodies of the requests answered or being answered, in arrival order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], self.port)), Duration::from_secs(1));
    }
}

fn serve_stub(conn: TcpStream, status: u16, body: &str, delay: Duration, seen: &Mutex<Vec<String>>) {
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
        seen.lock().unwrap_or_else(|e| e.into_inner()).push(String::from_utf8_lossy(&request).into_owned());
        std::thread::sleep(delay);
        let head = format!(
            "HTTP/1.1 {status} Stub\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(body.as_bytes())).is_err() {
            return;
        }
    }
}

// ---------------------------------------------------------------- Deployment

/// The unmerged socialNetwork: every function of [`FUNCTIONS`] as its own
/// process behind one [`Gateway`], all on one [`Redis`].
pub struct Deployment {
    // Dropped in this order: the gateway first, then the functions.
    pub gateway: Gateway,
    pub functions: Vec<Function>,
}

impl Deployment {
    /// Starts the unmerged system: every function of [`FUNCTIONS`] from its
    /// own [`function_binary`]. `overrides` routes some functions to other
    /// ports instead (a [`Stub`], or a closed port from [`free_port`] for a
    /// function that is down); those are not started. `env` is added to
    /// every process.
    pub fn unmerged(redis: &Redis, overrides: &[(&str, u16)], env: &[(&str, &str)]) -> Deployment {
        let processes: Vec<(&str, PathBuf)> = FUNCTIONS
            .iter()
            .filter(|f| !overrides.iter().any(|(o, _)| o == *f))
            .map(|f| (*f, function_binary(f)))
            .collect();
        Deployment::start(redis, &processes, overrides, env)
    }

    /// Starts one process per `(function name, binary)` of `processes` (a
    /// merged binary under the name of its primary function, say), each
    /// routed at `/function/<name>`, plus the `overrides` routes, behind one
    /// gateway. A function merged into another's binary gets no route, so
    /// the gateway answers 404 if anything asks for it over the network.
    /// Every process gets `REDIS_URL` and every `<FUNCTION>__REDIS_URL` of
    /// [`FUNCTIONS`] set to `redis`, `GATEWAY_URL`, and `env`.
    pub fn start(
        redis: &Redis,
        processes: &[(&str, PathBuf)],
        overrides: &[(&str, u16)],
        env: &[(&str, &str)],
    ) -> Deployment {
        let ports: Vec<(&str, u16)> = processes.iter().map(|(name, _)| (*name, free_port())).collect();
        let routes: Vec<(&str, u16)> = overrides.iter().chain(&ports).copied().collect();
        let gateway = Gateway::start(&routes);
        let mut common: Vec<(String, String)> = redis_env(&redis.url(), FUNCTIONS);
        common.push(("GATEWAY_URL".into(), gateway.url()));
        common.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let functions = processes
            .iter()
            .zip(&ports)
            .map(|((name, binary), (_, port))| Function::start(binary, name, *port, common.iter().cloned()))
            .collect();
        Deployment { gateway, functions }
    }

    /// The gateway URL of function `name`.
    pub fn url(&self, name: &str) -> String {
        self.gateway.function_url(name)
    }

    /// The process of function `name`.
    pub fn function(&mut self, name: &str) -> &mut Function {
        self.functions.iter_mut().find(|f| f.name == name).unwrap_or_else(|| panic!("{name} was not started"))
    }

    /// Every function's output, for a failure message.
    pub fn outputs(&self) -> String {
        self.functions.iter().map(|f| format!("--- {}\n{}", f.name, f.output())).collect()
    }
}

// ---------------------------------------------------------------- data

/// Seeds the standard socialNetwork data set:
/// users `user:<name>` → id: alice 1, bob 2, carol 3, dave 4, erin 5;
/// followers (`social-graph:followers:<id>`, score = when they followed):
/// of 1: dave@10, bob@20, erin@30; of 2: alice@5, carol@7; of 3: alice@1.
pub fn seed_social_network(conn: &mut redis::Connection) {
    let mut pipe = redis::pipe();
    for (name, id) in [("alice", 1), ("bob", 2), ("carol", 3), ("dave", 4), ("erin", 5)] {
        pipe.cmd("SET").arg(format!("user:{name}")).arg(id).ignore();
    }
    for (user, followers) in [(1, &[(4, 10), (2, 20), (5, 30)][..]), (2, &[(1, 5), (3, 7)][..]), (3, &[(1, 1)][..])] {
        for (follower, score) in followers {
            pipe.cmd("ZADD").arg(format!("social-graph:followers:{user}")).arg(*score).arg(*follower).ignore();
        }
    }
    pipe.query::<()>(conn).expect("seeding Redis");
}

/// compose-post requests that succeed on [`seed_social_network`]'s data, with
/// URLs, mentions, media and explicit timestamps.
pub const SAMPLE_POSTS: &[&str] = &[
    r#"{"username":"alice","user_id":1,"text":"hello @bob, see https://example.com/a?x=1","media_ids":[11],"media_types":["png"],"post_type":"POST","timestamp":1700000000000}"#,
    r#"{"username":"bob","user_id":2,"text":"@alice @carol http://x.org/p and https://y.net","media_ids":[],"post_type":"POST","timestamp":1700000001000}"#,
    r#"{"username":"carol","user_id":3,"text":"no links, no mentions","media_ids":[],"post_type":"REPOST","timestamp":1700000002000}"#,
    r#"{"username":"alice","user_id":1,"text":"@erin @dave @erin https://example.com/a?x=1","media_ids":[12,13],"media_types":["jpg","gif"],"post_type":"POST","timestamp":1700000003000}"#,
];
