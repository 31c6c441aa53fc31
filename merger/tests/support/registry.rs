//! A real registry and the Docker Engine for the image tests, on 127.0.0.1 only.
//!
//! A part of `support` (`support::registry`): ports, Redis, HTTP and the function
//! binaries come from there.
//!
//! - [`Registry`]: Debian's `docker-registry` (distribution 2.8) as a plain process on
//!   a free port, with its own config, storage dir and htpasswd (bcrypt) auth; killed
//!   and removed on drop. [`Registry::catalog`] and [`Registry::tags`] ask it what it holds.
//! - [`engine_present`]: whether image tests can run here (an engine); CI requires one.
//! - [`docker`]: the `docker` CLI, a client we did not write, for pull/run/rmi.
//! - [`Container`]: a `docker run -d --network host` container, removed on drop.
//!
//! Needs `docker-registry` and `htpasswd` (Debian: `docker-registry`, `apache2-utils`);
//! without them the tests panic with the install command, they never skip.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[allow(unused_imports)] // each test binary that has this module uses some of them
pub use fmerge_testkit::{free_port, need, wait_http};

/// A string unique to this test process and call, for tags and secrets.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        % 1_000_000_000;
    format!(
        "{prefix}{}x{nanos}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether there is a Docker Engine to test against (`DOCKER_HOST`, or
/// `/var/run/docker.sock`). Without one an image test says it was skipped
/// and returns, except where the tools are required (CI): that fails it.
pub fn engine_present() -> bool {
    fmerge_testkit::dataplane::tool_present(fmerge_ship::image::engine::missing_reason())
}

/// Runs the `docker` CLI with `args` (and an optional `--config` dir first).
pub fn docker(config: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new("docker");
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.args(args).stdin(Stdio::null());
    cmd.output().unwrap_or_else(|e| {
        panic!("cannot run `docker {args:?}`: {e}\nfix: install the docker CLI (docker.io or docker-ce-cli)")
    })
}

/// Like [`docker`], panicking with its output unless it succeeds; returns stdout.
pub fn docker_ok(config: Option<&Path>, args: &[&str]) -> String {
    let out = docker(config, args);
    assert!(
        out.status.success(),
        "docker {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A running `docker-registry` with htpasswd auth.
pub struct Registry {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
    /// The one user the registry accepts.
    pub user: String,
    /// Its password (unique per registry, so tests can search for it in images).
    pub password: String,
}

impl Registry {
    /// Starts a registry on a free 127.0.0.1 port and waits until it answers.
    pub fn start() -> Registry {
        let bin = need("docker-registry", "docker-registry");
        let htpasswd = need("htpasswd", "apache2-utils");
        let dir = tempfile::Builder::new()
            .prefix("fmerge-registry-")
            .tempdir()
            .expect("temp dir");
        let user = "fmerge-ci".to_owned();
        let password = unique("pw-");
        let out = Command::new(htpasswd)
            .args(["-nbB", &user, &password])
            .output()
            .expect("run htpasswd");
        assert!(
            out.status.success(),
            "htpasswd failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(dir.path().join("htpasswd"), &out.stdout).unwrap();
        let port = free_port();
        let config = format!(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\n\
http:\n  addr: 127.0.0.1:{port}\n  secret: {secret}\nauth:\n  htpasswd:\n    realm: fmerge-test\n    path: {htpasswd}\n",
            root = dir.path().join("data").display(),
            secret = unique("s"),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new(&bin)
            .arg("serve")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start docker-registry");
        let mut reg = Registry {
            child,
            dir,
            port,
            user,
            password,
        };
        if let Err(e) = reg.wait_ready() {
            panic!("docker-registry did not start: {e}\n{}", reg.log());
        }
        reg
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Err(format!("docker-registry exited with {status}"));
            }
            if let Ok((401 | 200, _)) = self.get("/v2/", false) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("docker-registry did not answer /v2/ within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `127.0.0.1:<port>`, the registry part of image references.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The registry's own log (its access log shows every request).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// A `docker --config` directory whose config.json holds this registry's login
    /// (what `docker login` writes, without a credential store).
    pub fn docker_config_dir(&self) -> PathBuf {
        let dir = self.dir.path().join("docker-config");
        std::fs::create_dir_all(&dir).unwrap();
        let auth = base64(format!("{}:{}", self.user, self.password).as_bytes());
        std::fs::write(
            dir.join("config.json"),
            format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, self.host()),
        )
        .unwrap();
        dir
    }

    /// GET `path` on the registry, authenticated or not: (status, body).
    pub fn get(&self, path: &str, authenticated: bool) -> Result<(u16, String), String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(10)))
            .http_status_as_error(false)
            .proxy(None)
            .build()
            .into();
        let url = format!("http://{}{path}", self.host());
        let mut req = agent.get(&url);
        if authenticated {
            req = req.header(
                "authorization",
                &format!(
                    "Basic {}",
                    base64(format!("{}:{}", self.user, self.password).as_bytes())
                ),
            );
        }
        let mut reply = req.call().map_err(|e| format!("GET {url}: {e}"))?;
        let status = reply.status().as_u16();
        Ok((
            status,
            reply
                .body_mut()
                .read_to_string()
                .map_err(|e| e.to_string())?,
        ))
    }

    /// The repositories the registry holds (`/v2/_catalog`).
    pub fn catalog(&self) -> Vec<String> {
        let (status, body) = self.get("/v2/_catalog", true).unwrap();
        assert_eq!(status, 200, "catalog: {body}");
        strings(&body, "repositories")
    }

    /// The tags of `repository` (empty when it does not exist).
    pub fn tags(&self, repository: &str) -> Vec<String> {
        let (status, body) = self
            .get(&format!("/v2/{repository}/tags/list"), true)
            .unwrap();
        if status == 404 {
            return Vec::new();
        }
        assert_eq!(status, 200, "tags: {body}");
        strings(&body, "tags")
    }
}

/// The strings of the list `key` in the JSON object `body` (none if absent).
fn strings(body: &str, key: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A container started with `docker run -d --rm --network host`, removed on drop.
pub struct Container {
    /// The container id.
    pub id: String,
}

impl Container {
    /// Runs `image` with the given env on the host network.
    pub fn run(image: &str, env: &[(&str, String)]) -> Container {
        Container::run_with(image, &[], env)
    }

    /// Like [`Container::run`], with extra `docker run` options (e.g. `--add-host`).
    pub fn run_with(image: &str, options: &[&str], env: &[(&str, String)]) -> Container {
        let mut args: Vec<String> = vec![
            "run".into(),
            "-d".into(),
            "--rm".into(),
            "--network".into(),
            "host".into(),
        ];
        args.extend(options.iter().map(|o| o.to_string()));
        for (k, v) in env {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.push(image.into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let id = docker_ok(None, &args).trim().to_owned();
        Container { id }
    }

    /// Its logs so far.
    pub fn logs(&self) -> String {
        let out = docker(None, &["logs", &self.id]);
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = docker(None, &["rm", "-f", &self.id]);
    }
}

/// A `dnsmasq` DNS server on `<addr>:53` (a loopback address of its own) that answers
/// `name` → 127.0.0.1, so a container started with `--dns <addr>` resolves `name`
/// through real DNS (not /etc/hosts). Killed on drop. Needs root for port 53.
pub struct DnsServer {
    child: Child,
    /// The loopback address it listens on.
    pub addr: String,
    log: tempfile::NamedTempFile,
}

impl DnsServer {
    /// Starts it and waits until it answers.
    pub fn start(name: &str) -> DnsServer {
        let bin = need("dnsmasq", "dnsmasq-base");
        let addr = format!(
            "127.0.{}.{}",
            100 + std::process::id() % 100,
            2 + std::process::id() % 250
        );
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(bin)
            .args([
                "--keep-in-foreground",
                "--no-resolv",
                "--no-hosts",
                "--bind-interfaces",
                "--port=53",
                "--log-queries",
                "--log-facility=-",
            ])
            .arg(format!("--listen-address={addr}"))
            .arg(format!("--address=/{name}/127.0.0.1"))
            .stdin(Stdio::null())
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("start dnsmasq");
        let mut d = DnsServer { child, addr, log };
        let path = d.log.path().to_path_buf();
        let log = || std::fs::read_to_string(&path).unwrap_or_default();
        let child = &mut d.child;
        fmerge_testkit::wait_for(
            "dnsmasq",
            || {
                let status = child.try_wait().unwrap()?;
                Some(format!("dnsmasq exited with {status} (port 53 needs root)"))
            },
            || log().contains("started"),
        )
        .unwrap_or_else(|why| panic!("{why}:\n{}", log()));
        d
    }

    /// Its log (with `--log-queries`: every query it answered).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs `body` to `http://127.0.0.1:<port><path>`.
pub fn post(port: u16, path: &str, body: &str) -> fmerge_testkit::HttpReply {
    fmerge_testkit::post(&format!("http://127.0.0.1:{port}{path}"), body)
}

/// A real OpenFaaS function binary of this workspace (`social-graph-get-followers`:
/// serves env `port`, answers `GET /_/health`), from the harness's one build.
pub fn function_binary() -> &'static std::path::Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| fmerge_testkit::function_binary("social-graph-get-followers"))
}

/// Standard base64 (for Basic auth and docker's config.json).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
