//! nginx in the role of the OpenFaaS gateway.

use crate::http::agent;
use crate::process::{kill, need, read, start_fresh, wait_for};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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
        start_fresh("nginx", "fmerge-nginx-", |dir, port| {
            Gateway::spawn(dir, port, routes)
        })
    }

    /// [`Gateway::start`] on the given `port` (8080, as OpenFaaS's gateway
    /// listens, in a network namespace of the test's own), in one attempt:
    /// a fixed port taken is not a race that a retry would win.
    pub fn start_on(port: u16, routes: &[(&str, u16)]) -> Gateway {
        need("nginx", "nginx");
        let dir = tempfile::Builder::new()
            .prefix("fmerge-nginx-")
            .tempdir()
            .expect("temp dir");
        Gateway::spawn(dir, port, routes)
            .unwrap_or_else(|why| panic!("cannot start nginx on port {port}: {why}"))
    }

    fn spawn(dir: tempfile::TempDir, port: u16, routes: &[(&str, u16)]) -> Result<Gateway, String> {
        std::fs::write(
            dir.path().join("nginx.conf"),
            nginx_conf(dir.path(), port, routes),
        )
        .expect("nginx.conf");
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
        let (errors, stderr) = (
            gateway.dir.path().join("error.log"),
            gateway.dir.path().join("stderr.log"),
        );
        let flush = gateway.flush_url();
        let started = wait_for(
            "nginx",
            || {
                let status = gateway.child.try_wait().ok().flatten()?;
                Some(format!(
                    "nginx exited ({status}):\n{}{}",
                    read(&stderr),
                    read(&errors)
                ))
            },
            || {
                agent()
                    .get(&flush)
                    .call()
                    .is_ok_and(|r| r.status().as_u16() == 204)
            },
        );
        started.map(|()| gateway)
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
        self.access_log()
            .lines()
            .filter(|line| line.split(' ').next() == Some(name))
            .count()
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
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("nginx"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/nginx"))
}

/// The http block's settings the bench's gateway shares.
const PROXY: &str = include_str!("../gateway-proxy.conf");

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
{PROXY}    map $uri $fmerge_function {{
        ~^/function/(?<name>[^/]+) $name;
        default -;
    }}
    log_format fmerge '$fmerge_function $status $request_time $upstream_addr $request_method $uri';
    access_log {d}/access.log fmerge;
"#
    );
    for (i, (_, upstream)) in routes.iter().enumerate() {
        // max_fails=0: never mark a function down, each request tries it.
        conf += &format!(
            "    upstream fn{i} {{ server 127.0.0.1:{upstream} max_fails=0; keepalive 32; }}\n"
        );
    }
    conf += &format!("    server {{\n        listen 127.0.0.1:{port};\n");
    conf += "        location = /_/flush { access_log off; return 204; }\n";
    conf += "        location @unreachable { default_type text/plain; return 502 \"Can't reach service for: $fmerge_function.\\n\"; }\n";
    for (i, (name, _)) in routes.iter().enumerate() {
        // `<name>.openfaas-fn` is the same function, in OpenFaaS's default namespace.
        for location in [
            format!("= /function/{name}"),
            format!("/function/{name}/"),
            format!("= /function/{name}.openfaas-fn"),
        ] {
            conf += &format!(
                "        location {location} {{ proxy_pass http://fn{i}/; error_page 502 504 = @unreachable; }}\n"
            );
        }
    }
    conf += "    }\n}\n";
    conf
}
