//! One connection to the Docker Engine, with the API version negotiated down.
//!
//! Why: bollard speaks a newer Engine API than many installed engines (Debian 12's
//! 20.10 serves API 1.41); without negotiation every call fails with "client version
//! is too new". And an unreachable engine is the most common failure, so it gets one
//! clear message naming the socket and the fix, instead of a hyper error.

use std::future::Future;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use bollard::Docker;

/// Where the engine is looked for when `DOCKER_HOST` is not set.
pub const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// The engine address in use: `DOCKER_HOST`, or the default socket.
pub fn host() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| DEFAULT_HOST.to_owned())
}

/// `Some(reason)` when no engine can be there at all (no `DOCKER_HOST` and no default
/// socket): tests use it to skip with a printed reason.
pub fn missing_reason() -> Option<String> {
    if std::env::var_os("DOCKER_HOST").is_some() {
        return None;
    }
    let sock = DEFAULT_HOST.trim_start_matches("unix://");
    (!Path::new(sock).exists())
        .then(|| format!("no Docker Engine: {sock} does not exist and DOCKER_HOST is not set"))
}

/// Connects and negotiates the API version; fails with the cause and the fix.
pub async fn connect() -> Result<Docker> {
    let host = host();
    let fix = format!(
        "fix: start the Docker Engine (`dockerd`, or `service docker start`), or point DOCKER_HOST at a running engine \
(now {}), and make sure this user may use its socket (root or group `docker`)",
        if std::env::var_os("DOCKER_HOST").is_some() {
            format!("DOCKER_HOST={host}")
        } else {
            format!("unset, so {DEFAULT_HOST}")
        }
    );
    let docker = Docker::connect_with_defaults()
        .map_err(|e| anyhow!("cannot reach the Docker Engine at {host}: {e}\n{fix}"))?;
    let docker = docker.negotiate_version().await.map_err(|e| {
        anyhow!(
            "cannot reach the Docker Engine at {host}: {}\n{fix}",
            describe(&e)
        )
    })?;
    Ok(docker)
}

/// A bollard error as one line, with the underlying transport cause (which bollard's
/// own `Display` often hides: "error trying to connect" without "connection refused").
pub fn describe(e: &bollard::errors::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(cause) = src {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        src = cause.source();
    }
    s
}

/// Runs an async engine operation to completion from synchronous code (the CLI).
/// Inside a tokio runtime, use the `*_async` functions instead.
pub fn block_on<F: Future>(f: F) -> Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime that talks to the Docker Engine")?;
    Ok(rt.block_on(f))
}
