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
mod parse;
mod table;

pub use macros::Row;
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
