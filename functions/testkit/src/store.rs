//! A throwaway `redis-server` per test.

use crate::process::{kill, need, read, start_fresh, wait_for};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill")
        .args([format!("-{name}"), child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{name} {} failed", child.id());
}

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
        start_fresh("redis-server", "fmerge-redis-", |dir, port| {
            let child = spawn(ip, port, dir.path());
            let mut redis = Redis {
                child,
                ip: ip.to_string(),
                port,
                dir,
            };
            redis.wait_up().map(|()| redis)
        })
    }

    /// Kills the server (as a crash or a restart would): every connection
    /// to it is dropped and its data is lost (no persistence).
    pub fn stop(&mut self) {
        kill(&mut self.child);
    }

    /// Stops the server's process without closing anything (SIGSTOP), as a
    /// lost node or a partition looks to its clients: connections stay
    /// open, the kernel still accepts new ones, and nothing answers.
    pub fn pause(&self) {
        signal(&self.child, "STOP");
    }

    /// Lets a [`Redis::pause`]d server answer again (SIGCONT).
    pub fn resume(&self) {
        signal(&self.child, "CONT");
    }

    /// Starts a new server at the same address after [`Redis::stop`], and
    /// waits until it answers PING. It starts empty.
    pub fn start_again(&mut self) {
        self.child = spawn(&self.ip, self.port, self.dir.path());
        if let Err(why) = self.wait_up() {
            panic!("cannot start redis-server again on {}: {why}", self.addr());
        }
    }

    fn wait_up(&mut self) -> Result<(), String> {
        let url = self.url();
        let log = self.dir.path().join("redis.log");
        let child = &mut self.child;
        wait_for(
            "redis-server",
            || {
                child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map(|s| format!("redis-server exited ({s}):\n{}", read(&log)))
            },
            || ping(&url),
        )
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
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("cannot connect to the test Redis")
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
                "string" => redis::cmd("GET")
                    .arg(&key)
                    .query::<String>(&mut conn)
                    .expect("GET"),
                "zset" => {
                    let pairs = sorted_set(&mut conn, &key);
                    pairs.iter().map(|(m, s)| format!("{m}@{s}\n")).collect()
                }
                "list" => {
                    let items: Vec<String> = redis::cmd("LRANGE")
                        .arg(&key)
                        .arg(0)
                        .arg(-1)
                        .query(&mut conn)
                        .expect("LRANGE");
                    format!("list:\n{}", items.join("\n"))
                }
                "set" => {
                    let mut items: Vec<String> = redis::cmd("SMEMBERS")
                        .arg(&key)
                        .query(&mut conn)
                        .expect("SMEMBERS");
                    items.sort();
                    format!("set:\n{}", items.join("\n"))
                }
                "hash" => {
                    let items: BTreeMap<String, String> = redis::cmd("HGETALL")
                        .arg(&key)
                        .query(&mut conn)
                        .expect("HGETALL");
                    format!(
                        "hash:\n{}",
                        items
                            .iter()
                            .map(|(k, v)| format!("{k}={v}\n"))
                            .collect::<String>()
                    )
                }
                other => format!("<{other}>"),
            };
            dump.insert(key, value);
        }
        dump
    }
}

/// redis-server on `ip:port`, no persistence, logging to `dir/redis.log`
/// (appended, so that a restart keeps the first run's log).
/// The sorted set `key`, each member with its score, lowest first.
pub(crate) fn sorted_set(conn: &mut redis::Connection, key: &str) -> Vec<(String, String)> {
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(conn)
        .expect("ZRANGE")
}

fn spawn(ip: &str, port: u16, dir: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("redis.log"))
        .expect("redis log");
    Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            ip,
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--daemonize", "no", "--logfile", ""])
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("redis log"))
        .stderr(log)
        .spawn()
        .expect("cannot spawn redis-server")
}

fn ping(url: &str) -> bool {
    let Ok(client) = redis::Client::open(url) else {
        return false;
    };
    let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200)) else {
        return false;
    };
    redis::cmd("PING")
        .query::<String>(&mut conn)
        .is_ok_and(|p| p == "PONG")
}

impl Drop for Redis {
    fn drop(&mut self) {
        kill(&mut self.child);
    }
}

/// The environment that points `functions` at the Redis at `url`, whether
/// they run standalone (`REDIS_URL`) or merged into another function's binary
/// (`<FUNCTION>__REDIS_URL`). Pass it to every function process, so that none
/// falls back to [`CLUSTER_REDIS_URL`](crate::CLUSTER_REDIS_URL).
pub fn redis_env(url: &str, functions: &[&str]) -> Vec<(String, String)> {
    let mut env = vec![("REDIS_URL".to_string(), url.to_string())];
    env.extend(
        functions
            .iter()
            .map(|f| (namespaced(f, "REDIS_URL"), url.to_string())),
    );
    env
}

/// The runtime's name for `key` of a function merged into another's binary,
/// from the contract.
pub use fmerge_contract::namespaced;
