//! Functions in the watchdog-process form (issue 49) as OpenFaaS runs them:
//! each behind an of-watchdog that starts its binary per request, in a
//! network and mount namespace of the test's own, where the cluster's fixed
//! ports (gateway 8080, Redis 6379) and names (`gateway.openfaas.svc.cluster.local.`)
//! hold and the secrets are files under `/var/openfaas/secrets`.
//!
//! - [`run_isolated`]: re-runs one (ignored) test of the test binary under
//!   `unshare --net --mount`; [`enter_cluster`]: what that test does first.
//! - [`metrics_port_watchdog`]: of-watchdog 0.11.6 whose metrics port can be
//!   set, since the real one always binds 8081 and only one fits a namespace.
//! - [`Watchdog`]: one function behind an of-watchdog; [`ClusterRedis`]: a
//!   redis-server with a password on 127.0.0.1:6379.
//! - [`chain`]: a chain of them deployed, unmerged and merged: the binaries
//!   passed into the namespace, each pod's environment, the gateway.

pub mod chain;

use crate::dataplane::{Server, of_watchdog};
use crate::process::{kill, need, run_ok};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The environment variable that tells a test it runs inside [`run_isolated`]'s namespace.
pub const ISOLATED_VAR: &str = "FMERGE_TEST_ISOLATED";

/// Where OpenFaaS mounts a function's secrets, one file each.
pub const SECRETS_DIR: &str = "/var/openfaas/secrets";

/// Runs the test `test` of this test binary, which must be `#[ignore]`d, in
/// a new network and mount namespace (`unshare --net --mount`, so as root)
/// with `env` added, and returns its output; `Err` says why it could not
/// run or what it printed when it failed. Fixed ports and bind mounts inside
/// touch nothing of the machine's.
pub fn run_isolated(test: &str, env: &[(&str, String)]) -> Result<String, String> {
    if !is_root() {
        return Err(format!(
            "{test} needs root: it makes a network and mount namespace of its own \
             (unshare --net --mount) to run the cluster's fixed ports and names"
        ));
    }
    let unshare = need("unshare", "util-linux");
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let out = Command::new(unshare)
        .args(["--net", "--mount", "--"])
        .arg(exe)
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ISOLATED_VAR, "1")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // An empty filter match runs nothing and succeeds: not a pass.
    if !out.status.success() || !text.contains("1 passed") {
        return Err(format!(
            "{test} in its namespace failed ({}):\n{text}",
            out.status
        ));
    }
    Ok(text)
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

/// What [`enter_cluster`] mounted; the mounts end with the namespace.
pub struct Cluster {
    _files: tempfile::TempDir,
}

/// Inside [`run_isolated`]'s namespace (panics elsewhere, never touching
/// the machine's files): brings loopback up, maps each of `hosts` (with and
/// without the trailing dot) to 127.0.0.1 through a private `/etc/hosts`,
/// and mounts a dir holding `secrets` (name, value) over [`SECRETS_DIR`].
pub fn enter_cluster(hosts: &[&str], secrets: &[(&str, &str)]) -> Cluster {
    let hosts: Vec<(&str, &str)> = hosts.iter().map(|h| (*h, "127.0.0.1")).collect();
    enter_cluster_at(&hosts, secrets)
}

/// [`enter_cluster`], each host mapped to its own loopback address.
pub fn enter_cluster_at(hosts: &[(&str, &str)], secrets: &[(&str, &str)]) -> Cluster {
    assert!(
        std::env::var(ISOLATED_VAR).is_ok_and(|v| v == "1"),
        "this test only runs inside its own namespace: run the test that calls run_isolated for it"
    );
    run_ok(Command::new(need("ip", "iproute2")).args(["link", "set", "lo", "up"]));
    let files = tempfile::Builder::new()
        .prefix("fmerge-cluster-")
        .tempdir()
        .expect("temp dir");
    let (etc_hosts, secrets_dir) = pod_files(files.path(), hosts, secrets);
    mount_over(&etc_hosts, Path::new("/etc/hosts"));
    // The mount point is the only trace left outside: an empty dir.
    std::fs::create_dir_all(SECRETS_DIR).expect("mount point for the secrets");
    mount_over(&secrets_dir, Path::new(SECRETS_DIR));
    Cluster { _files: files }
}

/// A hosts file mapping each of `hosts` (with and without the trailing dot)
/// to its address, and a dir holding `secrets`, in `dir`.
fn pod_files(dir: &Path, hosts: &[(&str, &str)], secrets: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let mut text = String::from("127.0.0.1 localhost\n::1 localhost\n");
    for (host, ip) in hosts {
        let host = host.trim_end_matches('.');
        text += &format!("{ip} {host} {host}.\n");
    }
    let etc_hosts = dir.join("hosts");
    std::fs::write(&etc_hosts, text).expect("hosts");
    let secrets_dir = dir.join("secrets");
    std::fs::create_dir(&secrets_dir).expect("secrets dir");
    for (name, value) in secrets {
        std::fs::write(secrets_dir.join(name), value).expect("secret");
    }
    (etc_hosts, secrets_dir)
}

/// A pod of its own inside the cluster, as a function deployed in another
/// cluster sees the world: `watchdog` started in a mount namespace of its
/// own with its own `/etc/hosts` and secrets. [`OwnPod::watchdog`] is the
/// program to start in its place.
pub struct OwnPod {
    files: tempfile::TempDir,
}

impl OwnPod {
    pub fn new(watchdog: &Path, hosts: &[(&str, &str)], secrets: &[(&str, &str)]) -> OwnPod {
        let files = tempfile::Builder::new()
            .prefix("fmerge-pod-")
            .tempdir()
            .expect("temp dir");
        let (etc_hosts, secrets_dir) = pod_files(files.path(), hosts, secrets);
        let script = format!(
            "#!/bin/sh\nexec {} --mount --propagation private sh -c \
             'mount --bind \"$1\" /etc/hosts && mount --bind \"$2\" {SECRETS_DIR} && exec \"$3\"' \
             own-pod {} {} {}\n",
            need("unshare", "util-linux").display(),
            etc_hosts.display(),
            secrets_dir.display(),
            watchdog.display()
        );
        let wrapper = files.path().join("watchdog");
        std::fs::write(&wrapper, script).expect("the pod's wrapper");
        let mut perms = std::fs::metadata(&wrapper).expect("wrapper").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&wrapper, perms).expect("wrapper mode");
        OwnPod { files }
    }

    /// The watchdog, as started in this pod.
    pub fn watchdog(&self) -> PathBuf {
        self.files.path().join("watchdog")
    }
}

fn mount_over(source: &Path, target: &Path) {
    run_ok(
        Command::new(need("mount", "mount"))
            .arg("--bind")
            .arg(source)
            .arg(target),
    );
}

/// of-watchdog 0.11.6 with its metrics port read from `metrics_port` (the
/// real one binds 8081, so only one runs per network namespace), the
/// request path untouched, as `bench/fmbench/appbuild.py` builds it: from
/// the vendored source with the Go that [`of_watchdog`]'s build installed,
/// once, into the same cache dir.
pub fn metrics_port_watchdog() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(build_metrics_port_watchdog).clone()
}

fn build_metrics_port_watchdog() -> Result<PathBuf, String> {
    let real = of_watchdog()?;
    // <cache>/bin/of-watchdog, with Go in <cache>/venv.
    let cache = real
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} is not in <cache>/bin", real.display()))?;
    let out = cache.join("bin/of-watchdog-metrics-port");
    if out.is_file() {
        return Ok(out);
    }
    let go = std::fs::read_dir(cache.join("venv/lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("site-packages/go/bin/go"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "no Go under {}/venv: run shared/tools/of-watchdog/build.sh",
                cache.display()
            )
        })?;
    let tarball = crate::workspace_root()
        .ancestors()
        .map(|d| d.join("shared/tools/of-watchdog/of-watchdog-0.11.6-src.tar.gz"))
        .find(|p| p.is_file())
        .ok_or("no shared/tools/of-watchdog/of-watchdog-0.11.6-src.tar.gz above the workspace")?;
    let src = tempfile::Builder::new()
        .prefix("of-watchdog-metrics-port-")
        .tempdir_in(cache)
        .map_err(|e| e.to_string())?;
    let untar = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(src.path())
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    if !untar.success() {
        return Err(format!("cannot unpack {}", tarball.display()));
    }
    let tree = src.path().join("of-watchdog-0.11.6");
    let config = tree.join("config/config.go");
    let text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
    let fixed = "MetricsPort:         8081,";
    if text.matches(fixed).count() != 1 {
        return Err(format!(
            "{}: expected one `{fixed}` to change",
            config.display()
        ));
    }
    let patched = text.replace(
        fixed,
        r#"MetricsPort:         getInt(envMap, "metrics_port", 8081),"#,
    );
    std::fs::write(&config, patched).map_err(|e| e.to_string())?;
    // Built beside, then renamed: another test process may be building too.
    let tmp = src.path().join("of-watchdog");
    let built = Command::new(&go)
        .args([
            "build",
            "-ldflags",
            "-s -w -X main.Version=0.11.6-metrics-port",
            "-o",
        ])
        .arg(&tmp)
        .arg(".")
        .current_dir(&tree)
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=vendor")
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", cache.join("gocache"))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", go.display()))?;
    if !built.status.success() {
        return Err(format!(
            "building of-watchdog with metrics_port failed:\n{}",
            String::from_utf8_lossy(&built.stderr)
        ));
    }
    std::fs::rename(&tmp, &out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A function behind an of-watchdog in streaming mode (no `mode` set: its
/// default): `fprocess` started per request on 127.0.0.1:`port`. Its
/// output, the watchdog's log with the function's stderr, is [`Watchdog::log`].
/// Killed, with what it started, on drop.
pub struct Watchdog {
    server: Server,
    /// Its own `TMPDIR`, as each pod has its own `/tmp`: of-watchdog writes
    /// its health lock file there (`.lock`) and removes it on SIGTERM, so
    /// one shared by every watchdog of a machine would fail the others'
    /// health when one stops.
    _tmp: tempfile::TempDir,
}

/// How long a function process may run per request (`exec_timeout`).
pub const EXEC_TIMEOUT: &str = "10s";

impl Watchdog {
    /// Starts `watchdog` (the real one when `metrics_port` is `None`,
    /// [`metrics_port_watchdog`] otherwise) with `env` added, and waits
    /// until its health answers.
    pub fn start(
        watchdog: &Path,
        fprocess: &Path,
        port: u16,
        metrics_port: Option<u16>,
        env: &[(&str, &str)],
    ) -> Watchdog {
        let tmp = tempfile::Builder::new()
            .prefix("fmerge-pod-tmp-")
            .tempdir()
            .expect("temp dir");
        let mut cmd = Command::new(watchdog);
        cmd.env("TMPDIR", tmp.path())
            .env("fprocess", fprocess)
            .env("port", port.to_string())
            .env("exec_timeout", EXEC_TIMEOUT)
            .env("read_timeout", EXEC_TIMEOUT)
            .env("write_timeout", EXEC_TIMEOUT)
            .envs(env.iter().copied());
        if let Some(metrics) = metrics_port {
            cmd.env("metrics_port", metrics.to_string());
        }
        Watchdog {
            server: Server::start(cmd, port),
            _tmp: tmp,
        }
    }

    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The watchdog's process, to signal and wait for.
    pub fn process(&mut self) -> &mut Server {
        &mut self.server
    }

    /// The watchdog's log: its own lines and its function's stderr.
    pub fn log(&self) -> String {
        self.server.output()
    }
}

/// A redis-server on 127.0.0.1:6379 (the cluster's Redis port, inside a
/// namespace of the test's own) that requires `password`, without
/// persistence. Killed on drop.
pub struct ClusterRedis {
    child: Child,
    ip: String,
    password: String,
    _dir: tempfile::TempDir,
}

impl ClusterRedis {
    pub const PORT: u16 = 6379;

    pub fn start(password: &str) -> ClusterRedis {
        Self::start_on("127.0.0.1", password)
    }

    /// A Redis of another cluster, at another loopback address (`ip`).
    pub fn start_on(ip: &str, password: &str) -> ClusterRedis {
        let server = need("redis-server", "redis-server");
        let dir = tempfile::Builder::new()
            .prefix("fmerge-redis-")
            .tempdir()
            .expect("temp dir");
        let child = Command::new(server)
            .args(["--bind", ip, "--port", &Self::PORT.to_string()])
            .args([
                "--requirepass",
                password,
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot spawn redis-server");
        let mut redis = ClusterRedis {
            child,
            ip: ip.to_string(),
            password: password.to_string(),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while redis.try_connection().is_none() {
            if let Ok(Some(status)) = redis.child.try_wait() {
                panic!("redis-server exited ({status}) on port {}", Self::PORT);
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not come up on port {}",
                Self::PORT
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    fn try_connection(&self) -> Option<redis::Connection> {
        let uri = format!("redis://:{}@{}:{}/", self.password, self.ip, Self::PORT);
        let mut conn = redis::Client::open(uri).ok()?.get_connection().ok()?;
        redis::cmd("PING").query::<String>(&mut conn).ok()?;
        Some(conn)
    }

    pub fn connection(&self) -> redis::Connection {
        self.try_connection().expect("redis-server answers")
    }

    /// Runs each command (its words) in order; panics on an error.
    pub fn run(&self, commands: &[&[&str]]) {
        let mut conn = self.connection();
        for words in commands {
            let mut cmd = redis::cmd(words[0]);
            for word in &words[1..] {
                cmd.arg(*word);
            }
            cmd.exec(&mut conn)
                .unwrap_or_else(|e| panic!("redis {words:?}: {e}"));
        }
    }

    /// Every sorted set whose key matches `pattern`, members with scores.
    pub fn sorted_sets(&self, pattern: &str) -> BTreeMap<String, Vec<(String, String)>> {
        let mut conn = self.connection();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(pattern)
            .query(&mut conn)
            .expect("KEYS");
        keys.into_iter()
            .map(|key| {
                let members = crate::store::sorted_set(&mut conn, &key);
                (key, members)
            })
            .collect()
    }
}

impl Drop for ClusterRedis {
    fn drop(&mut self) {
        kill(&mut self.child);
    }
}
