//! The server's settings: read once from the environment with
//! of-watchdog's names and meanings (see `docs/operating.md`), as the table
//! in `table.rs` defines them. Unlike of-watchdog, which silently falls
//! back to a default, a value that does not parse stops the process at
//! startup with a message naming the variable.
//!
//! Not to be confused with a function's own configuration (`config!`,
//! `function_config`): these are the server's, read under their plain
//! names (a merged callee's limits under `<CALLEE>__<key>`).

#[macro_use]
mod macros;
#[cfg(test)]
mod doc_table;
mod parse;
mod table;

pub use parse::parse_duration;
pub use table::{CallLimits, ServerSettings};

/// The settings as what reads them outside `serve` (`invoke`, the isolated
/// callees) sees them, read once: a value that does not parse has stopped
/// the start in `serve`; a test calling in directly gets the defaults.
pub(crate) fn process() -> &'static ServerSettings {
    static SETTINGS: std::sync::OnceLock<ServerSettings> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(|| {
        ServerSettings::from_env()
            .unwrap_or_else(|_| ServerSettings::from_lookup(|_| None).expect("the defaults parse"))
    })
}

impl ServerSettings {
    /// The settings from the process environment.
    pub fn from_env() -> Result<ServerSettings, String> {
        ServerSettings::from_lookup(|key| std::env::var(key).ok())
    }

    /// The settings from `lookup` (key → value), for tests.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<ServerSettings, String> {
        refuse_unsupported(&|key| lookup(key).filter(|v| !v.trim().is_empty()))?;
        let settings = ServerSettings::parse(&lookup)?;
        if settings.call_log > 0 && settings.metrics_port == 0 {
            return Err("FMERGE_CALL_LOG is served on the metrics port (GET /calls), and metrics_port=0 turns it off\nfix: set metrics_port or unset FMERGE_CALL_LOG".into());
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

#[cfg(test)]
mod tests {
    use super::parse::Secret;
    use super::*;
    use std::time::Duration;

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
        let none = ServerSettings::from_lookup(|_| None).unwrap();
        assert_eq!(none.port, 8080);
        assert_eq!(none.healthcheck_interval, Duration::from_secs(30));
        assert_eq!(none.metrics_port, 8081);
        assert_eq!(none.listen_address.to_string(), "0.0.0.0");
        let one = |k: &'static str, v: &'static str| {
            ServerSettings::from_lookup(move |key| (key == k).then(|| v.to_string()))
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
        let both = ServerSettings::from_lookup(|key| match key {
            "FMERGE_CALL_LOG" => Some("10".into()),
            "metrics_port" => Some("0".into()),
            _ => None,
        });
        assert!(both.unwrap_err().contains("metrics_port=0"));
        // The process's other settings, by the same rule.
        for (key, value) in [
            ("FMERGE_INVOKE_TIMEOUT_SECS", "ten"),
            ("FMERGE_INVOKE_MAX_REPLY_BYTES", "8M"),
            ("FMERGE_ISOLATE_THREADS", "0"),
        ] {
            let e = one(key, value).unwrap_err();
            assert!(
                e.starts_with(&format!("{key}=")) && e.contains("\nfix: "),
                "{e}"
            );
        }
        assert_eq!(none.invoke_timeout, Duration::from_secs(30));
        // Read through the table too, the key never in the start log.
        let key = one(fmerge_contract::CALLER_KEY_VAR, "a-key-of-enough-bytes").unwrap();
        assert_eq!(
            key.caller_key,
            Some(Secret(b"a-key-of-enough-bytes".to_vec()))
        );
        assert!(!key.listed().contains("a-key"), "{}", key.listed());
        assert_eq!(
            one("FMERGE_ISOLATE", " a, none ,b").unwrap().isolate,
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(one("FMERGE_ISOLATE", "none").unwrap().isolate, Some(vec![]));
        assert_eq!(none.isolate, None);
        assert_eq!(
            one("OPENFAAS_NAMESPACE", " fn-2 ")
                .unwrap()
                .namespace
                .as_deref(),
            Some("fn-2")
        );
    }

    #[test]
    fn of_watchdog_settings_that_are_not_implemented_stop_the_start() {
        let one = |k: &'static str, v: &'static str| {
            ServerSettings::from_lookup(move |key| (key == k).then(|| v.to_string()))
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
