//! A function's own configuration, what [`crate::config!`] reads: its
//! variables under their plain names in the process it serves, namespaced
//! (`<FUNCTION>__<KEY>`) when it is merged into another's. Not the
//! server's settings (`server_settings`).

use std::sync::OnceLock;

/// The function whose `main` started this process: the group's caller in a
/// merged binary. Its settings keep their plain names; every other
/// function's are namespaced.
static GROUP_CALLER: OnceLock<&'static str> = OnceLock::new();

pub(crate) fn set_group_caller(function: &'static str) {
    let _ = GROUP_CALLER.set(function);
}

/// The function whose `main` started this process (the group's caller),
/// once it serves.
pub(crate) fn group_caller() -> Option<&'static str> {
    GROUP_CALLER.get().copied()
}

/// The environment variable that `function` reads for `key` in this process.
pub fn variable_for(function: &str, key: &str) -> String {
    match GROUP_CALLER.get() {
        Some(caller) if *caller != function => namespaced(function, key),
        _ => key.to_string(),
    }
}

pub use fmerge_contract::namespaced;

/// What [`crate::config!`] calls. Exported under a fixed name so that the
/// merger can list, from the IR, the keys each function reads.
#[unsafe(export_name = fmerge_contract::config_symbol!())]
#[inline(never)]
pub fn config_of(function: &str, key: &str, default: &str) -> String {
    std::env::var(variable_for(function, key)).unwrap_or_else(|_| default.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callee_settings_are_namespaced_and_the_group_caller_keeps_plain_names() {
        assert_eq!(
            namespaced("social-graph-get-followers", "REDIS_URL"),
            "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL"
        );
        set_group_caller("write-home-timeline");
        assert_eq!(
            variable_for("write-home-timeline", "REDIS_URL"),
            "REDIS_URL"
        );
        assert_eq!(
            variable_for("social-graph-get-followers", "REDIS_URL"),
            "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL"
        );
        // A callee never falls back to the caller's variable: unset gives the default.
        // SAFETY: this test is the only one in this binary that touches these variables.
        unsafe { std::env::set_var("REDIS_URL", "redis://caller") };
        assert_eq!(
            config_of("social-graph-get-followers", "REDIS_URL", "redis://default"),
            "redis://default"
        );
        assert_eq!(
            config_of("write-home-timeline", "REDIS_URL", "redis://default"),
            "redis://caller"
        );
    }
}
