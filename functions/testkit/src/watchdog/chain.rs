//! A chain of functions deployed as OpenFaaS deploys them, for the tests
//! that run one unmerged and merged inside a namespace of their own
//! ([`run_isolated`]): the binaries the test passes to its copy there, the
//! environment every function's pod gets, and the chain behind nginx as
//! the gateway on 8080 with what each run came to (the calls the gateway
//! served, each watchdog's log).

use super::{Watchdog, run_isolated};
use crate::Gateway;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The gateway's name as the functions' pods see it.
pub const GATEWAY_HOST: &str = "gateway.openfaas.svc.cluster.local.";
/// The gateway's address as the functions' pods see it.
pub const GATEWAY_URL: &str = "http://gateway.openfaas.svc.cluster.local.:8080";
/// The names the cluster resolves to the loopback: the gateway and Redis.
pub const HOSTS: [&str; 2] = [GATEWAY_HOST, "redis.openfaas-fn.svc.cluster.local."];

/// What the test binary passes to its copy in the namespace.
const UNMERGED_VAR: &str = "FMERGE_CHAIN_UNMERGED";
const MERGED_VAR: &str = "FMERGE_CHAIN_MERGED";
const REAL_VAR: &str = "FMERGE_CHAIN_REAL";
const PATCHED_VAR: &str = "FMERGE_CHAIN_PATCHED";

/// Runs the ignored test `child` in a namespace of its own with `unmerged`
/// (the unmerged binaries' folder), both of-watchdogs (the real one and
/// [`super::metrics_port_watchdog`]), the merged binary if given and
/// `more`; prints its output, panics with it if it fails. Everything is
/// built before, outside: there is no network inside for cargo.
pub fn run_child(
    child: &str,
    unmerged: &Path,
    merged: Option<&Path>,
    more: &[(&'static str, String)],
) {
    let real = crate::dataplane::of_watchdog()
        .unwrap_or_else(|e| panic!("the real of-watchdog 0.11.6 is needed: {e}"));
    let patched = super::metrics_port_watchdog()
        .unwrap_or_else(|e| panic!("of-watchdog with metrics_port is needed: {e}"));
    let mut env = vec![
        (UNMERGED_VAR, path_string(unmerged)),
        (REAL_VAR, path_string(&real)),
        (PATCHED_VAR, path_string(&patched)),
    ];
    if let Some(binary) = merged {
        env.push((MERGED_VAR, path_string(binary)));
    }
    env.extend(more.iter().cloned());
    match run_isolated(child, &env) {
        Ok(output) => println!("{output}"),
        Err(why) => panic!("{why}"),
    }
}

fn path_string(path: &Path) -> String {
    path.to_str().expect("UTF-8 path").to_string()
}

/// The path [`run_child`] passed in `var` (one of its own, or of `more`).
pub fn passed_path(var: &str) -> PathBuf {
    PathBuf::from(
        std::env::var_os(var).unwrap_or_else(|| panic!("{var} is not set: run through run_child")),
    )
}

/// What [`run_child`] passed: the unmerged binaries' folder, the real
/// of-watchdog, the one whose metrics port can be set.
pub struct Passed {
    pub unmerged: PathBuf,
    pub real: PathBuf,
    pub patched: PathBuf,
}

/// [`Passed`], inside the namespace.
pub fn passed() -> Passed {
    Passed {
        unmerged: passed_path(UNMERGED_VAR),
        real: passed_path(REAL_VAR),
        patched: passed_path(PATCHED_VAR),
    }
}

/// The merged binary [`run_child`] passed.
pub fn merged_binary() -> PathBuf {
    passed_path(MERGED_VAR)
}

/// A pod's environment: the gateway's address (`GATEWAY_URL`,
/// `OPENFAAS_URL`), no backtraces (their frames differ between binaries by
/// design, the panic messages around them must not), then `settings`.
pub fn pod_env<'a>(
    settings: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, String)> {
    [
        ("GATEWAY_URL", GATEWAY_URL),
        ("OPENFAAS_URL", GATEWAY_URL),
        ("RUST_BACKTRACE", "0"),
    ]
    .into_iter()
    .chain(settings)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// `callee`'s settings as the merged caller's pod holds them
/// (`stack.merged.yml` namespaces each member's).
pub fn namespaced<'a>(
    callee: &'a str,
    settings: impl IntoIterator<Item = (String, String)> + 'a,
) -> impl Iterator<Item = (String, String)> + 'a {
    settings
        .into_iter()
        .map(move |(k, v)| (fmerge_contract::namespaced(callee, &k), v))
}

/// `env` as the pairs [`Watchdog::start`] takes.
pub fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The chain deployed: each function's watchdog, by the name it serves,
/// behind nginx as the gateway on 8080.
pub struct Deployed {
    pub gateway: Gateway,
    watchdogs: Vec<(&'static str, Watchdog)>,
}

impl Deployed {
    /// Routes the gateway to each of `watchdogs`.
    pub fn start(watchdogs: Vec<(&'static str, Watchdog)>) -> Deployed {
        let routes: Vec<(&str, u16)> = watchdogs.iter().map(|(n, w)| (*n, w.port())).collect();
        Deployed {
            gateway: Gateway::start_on(8080, &routes),
            watchdogs,
        }
    }

    /// The requests the gateway served for each of `names`; prints its
    /// access log (shown on failure).
    pub fn calls(&self, names: &[&str]) -> BTreeMap<String, usize> {
        println!("gateway access log:\n{}", self.gateway.access_log());
        names
            .iter()
            .map(|n| (n.to_string(), self.gateway.requests_for(n)))
            .collect()
    }

    /// The watchdog that serves `name`.
    pub fn watchdog(&mut self, name: &str) -> &mut Watchdog {
        let found = self.watchdogs.iter_mut().find(|(n, _)| *n == name);
        &mut found.unwrap_or_else(|| panic!("{name} is not deployed")).1
    }

    /// Each watchdog's log (its function's stderr), by the name it serves.
    pub fn logs(&self) -> BTreeMap<String, String> {
        self.watchdogs
            .iter()
            .map(|(n, w)| (n.to_string(), w.log()))
            .collect()
    }
}
