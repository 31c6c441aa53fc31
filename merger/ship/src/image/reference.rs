//! Image references (`registry/namespace/name:tag`), read as docker reads them.
//!
//! Why: which registry a push goes to, which credentials apply, and whether the push
//! can work at all (Docker Hub's `library/` namespace is Docker's own) all follow from
//! the reference. Parsing uses `oci-spec`'s implementation of docker's grammar, so
//! `pair:v1` means `docker.io/library/pair:v1` exactly as with `docker push`.

use std::fmt;

use anyhow::{Result, anyhow, bail};
use oci_spec::distribution::Reference;

/// Docker Hub's registry host in references.
pub const DOCKER_HUB: &str = "docker.io";
/// The key docker uses for Docker Hub in `~/.docker/config.json` and credential helpers.
pub const DOCKER_HUB_AUTH_SERVER: &str = "https://index.docker.io/v1/";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    original: String,
    parsed: Reference,
}

/// True when the last path component of `reference` carries a `:tag`.
pub fn has_tag(reference: &str) -> bool {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    without_digest
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
}

impl ImageRef {
    /// Parses `reference`; fails with the grammar and an example.
    pub fn parse(reference: &str) -> Result<Self> {
        let parsed: Reference = reference.parse().map_err(|e| {
            anyhow!(
                "{reference:?} is not a valid image reference ({e}); fix: use [REGISTRY[:PORT]/]NAMESPACE/NAME[:TAG] in lowercase, \
e.g. docker.io/alice/pair:v1 or 127.0.0.1:5000/pair:v1"
            )
        })?;
        Ok(Self {
            original: reference.to_owned(),
            parsed,
        })
    }

    /// The reference as given.
    pub fn original(&self) -> &str {
        &self.original
    }
    /// The registry host (`docker.io` when none is given).
    pub fn registry(&self) -> &str {
        self.parsed.registry()
    }
    /// The repository path inside the registry (`library/pair`, `alice/pair`).
    pub fn repository(&self) -> &str {
        self.parsed.repository()
    }
    /// The tag (`latest` when none is given, as docker does).
    pub fn tag(&self) -> &str {
        self.parsed.tag().unwrap_or("latest")
    }
    /// The digest, if the reference has one.
    pub fn digest(&self) -> Option<&str> {
        self.parsed.digest()
    }
    /// True for Docker Hub.
    pub fn is_docker_hub(&self) -> bool {
        self.registry() == DOCKER_HUB || self.registry() == "index.docker.io"
    }
    /// `registry/repository`, the name the Engine's push endpoint takes.
    pub fn repository_url(&self) -> String {
        format!("{}/{}", self.registry(), self.repository())
    }
    /// The server name credentials are stored under (docker's convention).
    pub fn auth_server(&self) -> &str {
        if self.is_docker_hub() {
            DOCKER_HUB_AUTH_SERVER
        } else {
            self.registry()
        }
    }

    /// Refuses references a push cannot succeed with, before talking to any registry.
    pub fn check_pushable(&self) -> Result<()> {
        if self.digest().is_some() {
            bail!(
                "cannot push by digest ({}); fix: push a tag, e.g. {}:v1",
                self.original,
                self.repository_url()
            );
        }
        if self.is_docker_hub() && self.repository().starts_with("library/") {
            let name = self.repository().trim_start_matches("library/");
            bail!(
                "{} would be pushed to Docker Hub's official `library/` namespace, which only Docker may push to; \
fix: name your Docker Hub user or organisation, e.g. --tag docker.io/<user>/{name}:{tag}, or another registry, e.g. --tag 127.0.0.1:5000/{name}:{tag}",
                self.original,
                tag = self.tag()
            );
        }
        Ok(())
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.repository_url(), self.tag())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_rules() {
        let r = ImageRef::parse("pair:abc").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("docker.io", "library/pair", "abc")
        );
        assert!(
            r.check_pushable()
                .unwrap_err()
                .to_string()
                .contains("docker.io/<user>/pair:abc")
        );
        let r = ImageRef::parse("alice/pair").unwrap();
        assert_eq!(r.tag(), "latest");
        assert_eq!(r.auth_server(), DOCKER_HUB_AUTH_SERVER);
        r.check_pushable().unwrap();
        let r = ImageRef::parse("127.0.0.1:5000/team/pair:v1").unwrap();
        assert_eq!(
            (r.registry(), r.repository()),
            ("127.0.0.1:5000", "team/pair")
        );
        assert_eq!(r.auth_server(), "127.0.0.1:5000");
        assert_eq!(r.to_string(), "127.0.0.1:5000/team/pair:v1");
        assert!(ImageRef::parse("Bad/Name").is_err());
        assert!(has_tag("127.0.0.1:5000/pair:v1") && !has_tag("127.0.0.1:5000/pair"));
    }
}
