//! The server's settings, read once from the environment with of-watchdog's
//! names and meanings (see `docs/operating.md`). Unlike of-watchdog, which
//! silently falls back to a default, a value that does not parse stops the
//! process at startup with a message naming the variable.

use std::net::IpAddr;
use std::time::Duration;

/// `max_body_size`'s default, 32 MiB; also the default limit of a reply
/// `invoke` reads over HTTP.
pub(crate) const DEFAULT_MAX_BODY_SIZE: usize = 32 << 20;

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `listen_address` (default `0.0.0.0`, what OpenFaaS expects).
    pub listen_address: IpAddr,
    /// `port` (default 8080).
    pub port: u16,
    /// `read_timeout` (default 30s): reading a whole request (line, headers
    /// and body together), and the idle time of a keep-alive connection
    /// between requests.
    pub read_timeout: Duration,
    /// `write_timeout` (default 30s): how long in-flight requests may finish
    /// after the drain starts closing connections.
    pub write_timeout: Duration,
    /// `exec_timeout` (default 30s; 0 = none), from a request's arrival: a
    /// handler still running after this, or a request no handler thread has
    /// taken up by then, is answered 504. A request's `X-Timeout` may lower it.
    pub exec_timeout: Duration,
    /// `healthcheck_interval` (default: `write_timeout`): after SIGTERM, how
    /// long health answers 503 while new connections are still served.
    pub healthcheck_interval: Duration,
    /// `max_inflight` (default 0 = no limit): requests beyond it get 429.
    pub max_inflight: usize,
    /// `max_body_size` (bytes, default 32 MiB): larger bodies get 413.
    pub max_body_size: usize,
    /// `max_buffered_bytes` (default: half the cgroup memory limit, else half
    /// the machine's memory; 0 = none): request bodies held in memory at
    /// once, across all requests, charged as bytes arrive; a body that
    /// finds it spent waits a while, then gets 503.
    pub max_buffered_bytes: usize,
    /// `max_connections` (default 4096): connections beyond it are read up
    /// to their first line on a reserve for probes; function requests then
    /// wait for a slot, and get 503 past as many waiting or `read_timeout`.
    pub max_connections: usize,
    /// `metrics_port` (default 8081, of-watchdog's; 0 = no metrics server).
    pub metrics_port: u16,
    /// `FMERGE_ACCESS_LOG` (`1`/`true`): one log line per request.
    pub access_log: bool,
    /// `FMERGE_CALL_LOG` (default 0 = off): how many `invoke` records to
    /// keep for `GET :<metrics_port>/calls` (see `call_log`).
    pub call_log: usize,
}

impl Settings {
    /// The settings from the process environment.
    pub fn from_env() -> Result<Settings, String> {
        Settings::from_lookup(|key| std::env::var(key).ok())
    }

    /// The settings from `lookup` (key → value), for tests.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Settings, String> {
        let get = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
        let duration = |key: &str, default: Duration| -> Result<Duration, String> {
            match get(key) {
                None => Ok(default),
                Some(v) => parse_duration(&v).map_err(|why| {
                    format!("{key}={v:?} is not a duration ({why})\nfix: write e.g. 10s, 500ms, 1m30s or a number of seconds")
                }),
            }
        };
        fn number<T: std::str::FromStr>(
            key: &str,
            value: Option<String>,
            default: T,
            what: &str,
        ) -> Result<T, String> {
            match value {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| format!("{key}={v:?} is not {what}\nfix: give {what}, or unset {key} for its default")),
            }
        }
        refuse_unsupported(&get)?;
        let listen_address = match get("listen_address") {
            None => IpAddr::from([0, 0, 0, 0]),
            Some(v) => v.trim().parse().map_err(|_| {
                format!(
                    "listen_address={v:?} is not an IP address\nfix: write e.g. 0.0.0.0, 127.0.0.1 or ::"
                )
            })?,
        };
        let write_timeout = duration("write_timeout", Duration::from_secs(30))?;
        if write_timeout.is_zero() {
            return Err("write_timeout must be over 0s (as of-watchdog requires)\nfix: set it to e.g. 30s, or unset it for the default".into());
        }
        let access_log = match get("FMERGE_ACCESS_LOG").as_deref().map(str::trim) {
            None | Some("0" | "false") => false,
            Some("1" | "true") => true,
            Some(v) => {
                return Err(format!(
                    "FMERGE_ACCESS_LOG={v:?} is not 1, true, 0 or false\nfix: set FMERGE_ACCESS_LOG=1 to log each request, or unset it"
                ));
            }
        };
        let settings = Settings {
            listen_address,
            port: number("port", get("port"), 8080, "a port number (0-65535)")?,
            read_timeout: duration("read_timeout", Duration::from_secs(30))?,
            write_timeout,
            exec_timeout: duration("exec_timeout", Duration::from_secs(30))?,
            healthcheck_interval: duration("healthcheck_interval", write_timeout)?,
            max_inflight: number(
                "max_inflight",
                get("max_inflight"),
                0,
                "a number of requests",
            )?,
            max_body_size: number(
                "max_body_size",
                get("max_body_size"),
                DEFAULT_MAX_BODY_SIZE,
                "a number of bytes",
            )?,
            max_buffered_bytes: number(
                "max_buffered_bytes",
                get("max_buffered_bytes"),
                memory_limit().map_or(0, |bytes| (bytes / 2) as usize),
                "a number of bytes",
            )?,
            max_connections: number(
                "max_connections",
                get("max_connections"),
                4096,
                "a number of connections",
            )?,
            metrics_port: number("metrics_port", get("metrics_port"), 8081, "a port number")?,
            access_log,
            call_log: number(
                "FMERGE_CALL_LOG",
                get("FMERGE_CALL_LOG"),
                0,
                "a number of records",
            )?,
        };
        if settings.call_log > crate::call_log::MAX_RECORDS {
            return Err(format!(
                "FMERGE_CALL_LOG={} keeps more than {} records\nfix: set it at most that and read GET /calls more often",
                settings.call_log,
                crate::call_log::MAX_RECORDS
            ));
        }
        if settings.call_log > 0 && settings.metrics_port == 0 {
            return Err("FMERGE_CALL_LOG is served on the metrics port (GET /calls), and metrics_port=0 turns it off\nfix: set metrics_port or unset FMERGE_CALL_LOG".into());
        }
        if settings.max_connections == 0 {
            return Err("max_connections=0 would refuse every connection\nfix: leave it unset for the default 4096".into());
        }
        Ok(settings)
    }
}

/// of-watchdog settings that this runtime does not implement and that would
/// change what a client gets stop the start instead of being ignored: a
/// function set to require JWTs must not serve unauthenticated. The others
/// of-watchdog reads are implemented (above) or mean nothing without a
/// process to proxy to (`fprocess`, `upstream_url`, `buffer_http`,
/// `content_type`, `static_path` outside static mode, `suppress_lock`, log
/// formatting); `docs/operating.md` lists them.
fn refuse_unsupported(get: &impl Fn(&str) -> Option<String>) -> Result<(), String> {
    // of-watchdog's getBool: "true" or "1".
    let on = |key: &str| get(key).is_some_and(|v| matches!(v.trim(), "true" | "1"));
    for key in ["jwt_auth", "jwt_auth_local", "jwt_auth_debug"] {
        if on(key) {
            return Err(format!(
                "{key}=true: JWT authentication (of-watchdog's jwt_auth) is not implemented by fmerge-runtime, \
                 and the function would serve unauthenticated\n\
                 fix: put an authenticating gateway or proxy in front \
                 of it and unset {key}"
            ));
        }
    }
    if let Some(mode) = get("mode").filter(|m| m.trim() != "http") {
        return Err(format!(
            "mode={mode:?}: fmerge-runtime serves of-watchdog's http mode only (the function is the server)\n\
             fix: unset mode or set mode=http"
        ));
    }
    if let Some(path) = get("ready_path") {
        return Err(format!(
            "ready_path={path:?}: fmerge-runtime does not probe a readiness path of the function; \
             /_/ready answers from the runtime itself (draining, max_inflight)\nfix: unset ready_path"
        ));
    }
    Ok(())
}

/// The memory this process may use: its cgroup's limit (v2, then v1), else
/// the machine's.
fn memory_limit() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        // v1 says "no limit" with a number near 2^63.
        .filter(|&bytes| bytes < 1 << 60);
    cgroup.or_else(|| {
        let meminfo = read("/proc/meminfo")?;
        let kib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()?;
        Some(kib * 1024)
    })
}

/// A duration as of-watchdog reads it: a whole number of seconds (`30`), or
/// Go's `time.ParseDuration` syntax (`10s`, `500ms`, `1m30s`, `1.5h`; units
/// ns, us, µs, ms, s, m, h).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.starts_with('-') {
        return Err("negative".into());
    }
    if rest.is_empty() {
        return Err("empty".into());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or("a number without a unit")?;
        if number_len == 0 {
            return Err(format!("expected a number at {rest:?}"));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| format!("bad number {:?}", &rest[..number_len]))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => return Err(format!("unknown unit {other:?}")),
        };
        total += number * nanos;
        rest = &rest[unit_len..];
    }
    if total > u64::MAX as f64 {
        return Err("too long".into());
    }
    Ok(Duration::from_nanos(total as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_of_watchdog() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("10 seconds").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5").is_ok());
    }

    #[test]
    fn defaults_and_errors_name_the_variable() {
        let none = Settings::from_lookup(|_| None).unwrap();
        assert_eq!(none.port, 8080);
        assert_eq!(none.healthcheck_interval, Duration::from_secs(30));
        assert_eq!(none.metrics_port, 8081);
        assert_eq!(none.listen_address.to_string(), "0.0.0.0");
        let one = |k: &'static str, v: &'static str| {
            Settings::from_lookup(move |key| (key == k).then(|| v.to_string()))
        };
        assert_eq!(
            one("write_timeout", "5s").unwrap().healthcheck_interval,
            Duration::from_secs(5)
        );
        let e = one("read_timeout", "ten").unwrap_err();
        assert!(e.starts_with("read_timeout=\"ten\""), "{e}");
        let e = one("max_inflight", "-3").unwrap_err();
        assert!(e.contains("max_inflight"), "{e}");
        let e = one("listen_address", "localhost").unwrap_err();
        assert!(e.contains("listen_address"), "{e}");
        assert!(one("write_timeout", "0").is_err());
        assert_eq!(none.call_log, 0);
        assert_eq!(one("FMERGE_CALL_LOG", "500").unwrap().call_log, 500);
        let e = one("FMERGE_CALL_LOG", "10000000").unwrap_err();
        assert!(e.starts_with("FMERGE_CALL_LOG=10000000"), "{e}");
        let both = Settings::from_lookup(|key| match key {
            "FMERGE_CALL_LOG" => Some("10".into()),
            "metrics_port" => Some("0".into()),
            _ => None,
        });
        assert!(both.unwrap_err().contains("metrics_port=0"));
    }

    #[test]
    fn of_watchdog_settings_that_are_not_implemented_stop_the_start() {
        let one = |k: &'static str, v: &'static str| {
            Settings::from_lookup(move |key| (key == k).then(|| v.to_string()))
        };
        for (key, value) in [
            ("jwt_auth", "true"),
            ("jwt_auth", "1"),
            ("jwt_auth_local", "true"),
            ("mode", "streaming"),
            ("ready_path", "/ready"),
        ] {
            let e = one(key, value).unwrap_err();
            assert!(e.starts_with(&format!("{key}=")), "{e}");
        }
        for (key, value) in [
            ("jwt_auth", "false"),
            ("mode", "http"),
            ("fprocess", "./handler"),
            ("upstream_url", "http://127.0.0.1:3000"),
            ("static_path", "/home/app/public"),
        ] {
            assert!(one(key, value).is_ok(), "{key}={value}");
        }
    }
}
