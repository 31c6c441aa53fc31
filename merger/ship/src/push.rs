//! Pushing a built image to any registry through the Docker Engine.
//!
//! Why: the Engine already knows how to talk to every registry (Docker Hub, GHCR, ECR,
//! a plain-HTTP registry on loopback), handles resumable blob uploads and skips blobs
//! the registry already has, so a re-run after an interrupted push only sends what is
//! missing. We add what `docker push` lacks for a build tool: credentials from CI
//! variables or docker's own config, pushing exactly one tag (the Engine would push
//! every local tag of the repository otherwise), retries with backoff on transient
//! failures but never on refused credentials, errors that name the cause and the fix,
//! and no secret in any message.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use fmerge_ship::push::{self, PushOptions};
//! let pushed = push::push("docker.io/alice/pair:3f2a9c81d0e4", &PushOptions::default())?;
//! println!("{}", pushed.digest);
//! # Ok(()) }
//! ```

pub mod auth;
pub mod progress;

use std::fmt;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use backon::{BackoffBuilder, ExponentialBuilder};
use bollard::Docker;
use bollard::query_parameters::PushImageOptionsBuilder;
use futures_util::StreamExt;

pub use auth::{Auth, Credentials, PASSWORD_ENV, USER_ENV};
pub use progress::Progress;

use crate::image::{BuiltImage, ImageRef, engine};
use progress::{Layer, Reporter};

/// How to push.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// Where the credentials come from (default: environment, then docker's config).
    pub auth: Auth,
    /// How progress is shown (default: bars on a terminal, lines otherwise).
    pub progress: Progress,
    /// Attempts in all, including the first (default 5). Refused credentials and a
    /// missing local image are never retried.
    pub attempts: usize,
    /// First backoff delay (default 1 s); doubles up to `max_delay`, with jitter.
    pub min_delay: Duration,
    /// Longest backoff delay (default 20 s).
    pub max_delay: Duration,
}

impl Default for PushOptions {
    fn default() -> Self {
        Self {
            auth: Auth::Auto,
            progress: Progress::Auto,
            attempts: 5,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(20),
        }
    }
}

/// A finished push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The tag pushed, in full (`docker.io/alice/pair:3f2a9c81d0e4`).
    pub reference: String,
    /// The manifest digest the registry stored (`sha256:…`): pin deployments to
    /// `<repository>@<digest>`.
    pub digest: String,
    /// How many attempts it took.
    pub attempts: usize,
}

impl Pushed {
    /// `registry/repository@sha256:…`, the immutable reference.
    pub fn pinned(&self) -> String {
        let repo = self
            .reference
            .rsplit_once(':')
            .map_or(self.reference.as_str(), |(r, _)| r);
        format!("{repo}@{}", self.digest)
    }
}

impl fmt::Display for Pushed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pushed {} (digest {})", self.reference, self.digest)
    }
}

/// Pushes `reference` (a tag in the local engine, e.g. [`BuiltImage::reference`]).
pub fn push(reference: &str, options: &PushOptions) -> Result<Pushed> {
    engine::block_on(async {
        let docker = engine::connect().await?;
        push_async(&docker, reference, options).await
    })?
}

/// Pushes a just-built image.
pub fn push_built(image: &BuiltImage, options: &PushOptions) -> Result<Pushed> {
    push(&image.reference, options)
}

/// Why one attempt failed, and whether another attempt can help.
#[derive(Debug)]
enum Failure {
    /// The registry refused the credentials (or has none and wants some): permanent.
    Auth(String),
    /// The registry could not be reached: maybe it is restarting, so retried.
    Unreachable(String),
    /// Anything else (connection reset, 5xx, engine hiccup): retried.
    Other(String),
}

fn classify(message: &str) -> Failure {
    let m = message.to_ascii_lowercase();
    const AUTH: &[&str] = &[
        "unauthorized",
        "authentication required",
        "denied",
        "incorrect username or password",
        "no basic auth credentials",
        "forbidden",
        "insufficient_scope",
        "401",
        "403",
    ];
    const UNREACHABLE: &[&str] = &[
        "connection refused",
        "no such host",
        "i/o timeout",
        "no route to host",
        "network is unreachable",
        "server gave http response to https client",
        "tls handshake",
        "context deadline exceeded",
    ];
    if AUTH.iter().any(|w| m.contains(w)) {
        Failure::Auth(message.to_owned())
    } else if UNREACHABLE.iter().any(|w| m.contains(w)) {
        Failure::Unreachable(message.to_owned())
    } else {
        Failure::Other(message.to_owned())
    }
}

/// Pushes with an existing engine connection.
pub async fn push_async(docker: &Docker, reference: &str, options: &PushOptions) -> Result<Pushed> {
    let image = ImageRef::parse(reference)?;
    image.check_pushable()?;
    let full = image.to_string();

    let inspect = docker.inspect_image(reference).await.map_err(|e| match &e {
        bollard::errors::Error::DockerResponseServerError { status_code: 404, .. } => anyhow!(
            "image {reference} is not in the local Docker Engine, so there is nothing to push\n\
fix: build it first (`fmerge build … --image --tag {reference}`), or check the tag with `docker images`"
        ),
        _ => anyhow!(
            "cannot inspect {reference} in the Docker Engine at {}: {}\nfix: check the engine is running",
            engine::host(),
            engine::describe(&e)
        ),
    })?;
    let layers = layers(docker, reference).await;
    let resolved = auth::resolve(&options.auth, &image)?;
    let mut reporter = Reporter::new(options.progress, &layers);
    reporter.line(&format!(
        "fmerge: pushing {full} ({}, {} layers) with {}",
        progress::human(inspect.size.unwrap_or(0).max(0) as u64),
        layers.len(),
        resolved.source
    ));

    let mut delays = ExponentialBuilder::default()
        .with_min_delay(options.min_delay)
        .with_max_delay(options.max_delay)
        .with_max_times(options.attempts.saturating_sub(1))
        .with_jitter()
        .build();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = attempt_push(docker, &image, &resolved, &mut reporter).await;
        reporter.finish(result.is_ok());
        let failure = match result {
            Ok(digest) => {
                let digest = match digest {
                    Some(d) => d,
                    None => digest_from_engine(docker, &image).await?,
                };
                let pushed = Pushed {
                    reference: full,
                    digest,
                    attempts: attempt,
                };
                if options.progress != Progress::Quiet {
                    eprintln!("fmerge: {pushed}");
                }
                return Ok(pushed);
            }
            Err(f) => f,
        };
        let registry = image.registry();
        match failure {
            Failure::Auth(msg) => bail!(
                "registry {registry} refused the push of {full}: {msg} (credentials: {}); nothing was retried\n\
fix: check the user and password or access token ({USER_ENV}/{PASSWORD_ENV}, or `docker login {}`), \
and that this user may push to {}",
                resolved.source,
                if image.is_docker_hub() { "" } else { registry },
                image.repository()
            ),
            Failure::Unreachable(msg) | Failure::Other(msg)
                if attempt >= options.attempts.max(1) =>
            {
                let unreachable = matches!(classify(&msg), Failure::Unreachable(_));
                if unreachable {
                    bail!(
                        "cannot reach registry {registry} to push {full}, after {attempt} attempts: {msg}\n\
fix: check the address and that the registry is up (`curl -v {}://{registry}/v2/`); a plain-HTTP registry that is not on 127.0.0.0/8 \
must be listed under insecure-registries in the engine's daemon.json. A re-run resumes: layers already uploaded are skipped",
                        if registry.starts_with("127.") || registry.starts_with("localhost") {
                            "http"
                        } else {
                            "https"
                        }
                    );
                }
                bail!(
                    "the push of {full} to {registry} failed after {attempt} attempts: {msg}\n\
fix: re-run the same command — it is safe and resumes, layers already uploaded are skipped; if it keeps failing, check the registry's logs and free space"
                );
            }
            Failure::Unreachable(msg) | Failure::Other(msg) => {
                let delay = delays.next().unwrap_or(options.max_delay);
                reporter.line(&format!(
                    "push: attempt {attempt} failed: {msg}; retrying in {:.1} s",
                    delay.as_secs_f64()
                ));
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// One push; `Ok(Some(digest))` when the Engine reported it.
async fn attempt_push(
    docker: &Docker,
    image: &ImageRef,
    resolved: &auth::Resolved,
    reporter: &mut Reporter,
) -> std::result::Result<Option<String>, Failure> {
    // Name the tag: without it the Engine pushes every local tag of the repository.
    let options = PushImageOptionsBuilder::default().tag(image.tag()).build();
    let mut stream = docker.push_image(
        &image.repository_url(),
        Some(options),
        resolved.credentials.clone(),
    );
    let mut digest = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                let status = resolved.scrub(info.status.as_deref().unwrap_or(""));
                if let Some(d) = parse_digest(&status) {
                    digest = Some(d);
                }
                let (cur, tot) = info
                    .progress_detail
                    .map(|p| (p.current, p.total))
                    .unwrap_or((None, None));
                if !status.is_empty() {
                    reporter.event(&status, cur, tot);
                }
            }
            Err(e) => {
                let msg = resolved.scrub(&engine::describe(&e));
                return Err(match &e {
                    bollard::errors::Error::DockerStreamError { .. }
                    | bollard::errors::Error::DockerResponseServerError { .. } => classify(&msg),
                    // The Engine connection itself broke: transient.
                    _ => Failure::Other(format!(
                        "lost the Docker Engine connection at {}: {msg}",
                        engine::host()
                    )),
                });
            }
        }
    }
    Ok(digest)
}

/// `v1: digest: sha256:ab… size: 739` → `sha256:ab…`.
fn parse_digest(status: &str) -> Option<String> {
    let rest = status.split("digest: ").nth(1)?;
    let d = rest.split_whitespace().next()?;
    d.starts_with("sha256:").then(|| d.to_owned())
}

/// The digest from the engine's `RepoDigests`, when the stream did not carry it.
async fn digest_from_engine(docker: &Docker, image: &ImageRef) -> Result<String> {
    let inspect = docker
        .inspect_image(image.original())
        .await
        .map_err(|e| anyhow!("{}", engine::describe(&e)))?;
    let repo = image.repository().trim_start_matches("library/");
    inspect
        .repo_digests
        .unwrap_or_default()
        .iter()
        .find(|d| d.split('@').next().is_some_and(|r| r.ends_with(repo)))
        .and_then(|d| d.split('@').nth(1).map(str::to_owned))
        .ok_or_else(|| {
            anyhow!("the push of {image} finished but the engine reported no digest\nfix: re-run the push (it is safe)")
        })
}

/// The image's layers with the Dockerfile step that made each, for labelling bars.
async fn layers(docker: &Docker, reference: &str) -> Vec<Layer> {
    let Ok(history) = docker.image_history(reference).await else {
        return Vec::new();
    };
    history
        .into_iter()
        .rev()
        .filter(|h| h.size > 0)
        .map(|h| Layer {
            label: step_label(&h.created_by),
            size: h.size as u64,
        })
        .collect()
}

/// `/bin/sh -c #(nop) COPY dir:3e1158a907e394fc… in / ` → `COPY dir:3e1158a907e3 in /`.
fn step_label(created_by: &str) -> String {
    let step = created_by
        .trim()
        .trim_start_matches("/bin/sh -c #(nop)")
        .trim();
    step.split_whitespace()
        .map(|w| match w.split_once(':') {
            Some((kind, hash))
                if hash.len() > 12 && hash.chars().all(|c| c.is_ascii_hexdigit()) =>
            {
                format!("{kind}:{}", &hash[..12])
            }
            _ => w.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_and_failures() {
        assert_eq!(
            parse_digest("v1: digest: sha256:0123456789abcdef size: 739").as_deref(),
            Some("sha256:0123456789abcdef")
        );
        assert_eq!(parse_digest("Pushed"), None);
        assert!(matches!(
            classify("unauthorized: authentication required"),
            Failure::Auth(_)
        ));
        assert!(matches!(
            classify("dial tcp 127.0.0.1:1: connect: connection refused"),
            Failure::Unreachable(_)
        ));
        assert!(matches!(classify("blob upload unknown"), Failure::Other(_)));
        let p = Pushed {
            reference: "127.0.0.1:5000/a:v1".into(),
            digest: "sha256:00".into(),
            attempts: 1,
        };
        assert_eq!(p.pinned(), "127.0.0.1:5000/a@sha256:00");
        assert_eq!(
            step_label(
                "/bin/sh -c #(nop) COPY dir:3e1158a907e394fc21c25024126df957b5ddd2cc53202b348c8a27da5877ee4d in / "
            ),
            "COPY dir:3e1158a907e3 in /"
        );
    }
}
