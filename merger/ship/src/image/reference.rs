//! Image references (`registry/namespace/name:tag`), read as docker reads them.
//!
//! Why: which registry a push goes to, which credentials apply, and whether the push
//! can work at all (Docker Hub's `library/` namespace is Docker's own) all follow from
//! the reference. Parsing follows docker's grammar and normalization
//! (distribution/reference), so `pair:v1` means `docker.io/library/pair:v1` exactly
//! as with `docker push`. One regex-lite regex, not oci-spec, whose derive
//! macros (16 more crates and a second syn) were a heavy part of fmerge's cold build.

use std::fmt;
use std::sync::OnceLock;

use anyhow::{Result, anyhow, bail};

/// distribution/reference's `ReferenceRegexp`: name, then `:tag`, then `@digest`.
const GRAMMAR: &str = r"^((?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(?::[0-9]+)?/)?[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?(?:(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+)?)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?$";
/// Longest repository path docker accepts.
const NAME_MAX: usize = 255;

/// Docker Hub's registry host in references.
pub const DOCKER_HUB: &str = "docker.io";
/// The key docker uses for Docker Hub in `~/.docker/config.json` and credential helpers.
pub const DOCKER_HUB_AUTH_SERVER: &str = "https://index.docker.io/v1/";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    original: String,
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
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
        Self::read(reference).map_err(|why| {
            anyhow!(
                "{reference:?} is not a valid image reference ({why})\nfix: use [REGISTRY[:PORT]/]NAMESPACE/NAME[:TAG] in lowercase, \
e.g. docker.io/alice/pair:v1 or 127.0.0.1:5000/pair:v1"
            )
        })
    }

    fn read(reference: &str) -> std::result::Result<Self, &'static str> {
        static RE: OnceLock<regex_lite::Regex> = OnceLock::new();
        let re = RE.get_or_init(|| {
            regex_lite::RegexBuilder::new(GRAMMAR)
                .size_limit(20 << 20)
                .build()
                .expect("docker's reference grammar")
        });
        let Some(found) = re.captures(reference) else {
            return Err(if reference.is_empty() {
                "repository name must have at least one component"
            } else {
                "invalid reference format"
            });
        };
        let (registry, repository) = split_domain(&found[1]);
        if repository.len() > NAME_MAX {
            return Err("repository name must not be more than 255 characters");
        }
        let digest = found.get(3).map(|m| m.as_str().to_owned());
        if let Some(digest) = &digest {
            let (algorithm, hex) = digest.split_once(':').expect("the grammar has the colon");
            match (algorithm, hex.len()) {
                ("sha256", 64) | ("sha384", 96) | ("sha512", 128) => {}
                ("sha256" | "sha384" | "sha512", _) => {
                    return Err("invalid checksum digest length");
                }
                _ => return Err("unsupported digest algorithm"),
            }
        }
        Ok(Self {
            original: reference.to_owned(),
            registry,
            repository,
            tag: found.get(2).map(|m| m.as_str().to_owned()),
            digest,
        })
    }

    /// The reference as given.
    pub fn original(&self) -> &str {
        &self.original
    }
    /// The registry host (`docker.io` when none is given).
    pub fn registry(&self) -> &str {
        &self.registry
    }
    /// The repository path inside the registry (`library/pair`, `alice/pair`).
    pub fn repository(&self) -> &str {
        &self.repository
    }
    /// The tag (`latest` when none is given, as docker does).
    pub fn tag(&self) -> &str {
        self.tag.as_deref().unwrap_or("latest")
    }
    /// The digest, if the reference has one.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
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
                "cannot push by digest ({})\nfix: push a tag, e.g. {}:v1",
                self.original,
                self.repository_url()
            );
        }
        if self.is_docker_hub() && self.repository().starts_with("library/") {
            let name = self.repository().trim_start_matches("library/");
            bail!(
                "{} would be pushed to Docker Hub's official `library/` namespace, which only Docker may push to\n\
fix: name your Docker Hub user or organisation, e.g. --tag docker.io/<user>/{name}:{tag}, or another registry, e.g. --tag 127.0.0.1:5000/{name}:{tag}",
                self.original,
                tag = self.tag()
            );
        }
        Ok(())
    }
}

/// docker's normalization (distribution/reference `splitDockerDomain`): a first
/// component without `.` or `:` that is not `localhost` is a Docker Hub path, and
/// a one-component Docker Hub path is in `library/`.
fn split_domain(name: &str) -> (String, String) {
    let (domain, rest) = match name.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first, rest)
        }
        _ => (DOCKER_HUB, name),
    };
    let domain = if domain == "index.docker.io" {
        DOCKER_HUB
    } else {
        domain
    };
    let rest = if domain == DOCKER_HUB && !rest.contains('/') {
        format!("library/{rest}")
    } else {
        rest.to_owned()
    };
    (domain.to_owned(), rest)
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

    #[test]
    fn docker_grammar_and_normalization() {
        let sha = |n| "f".repeat(n);
        let digest = format!("sha256:{}", sha(64));
        for (input, registry, repository, tag, digest) in [
            ("busybox", "docker.io", "library/busybox", "latest", None),
            (
                "test.com:5000",
                "docker.io",
                "library/test.com",
                "5000",
                None,
            ),
            ("test:5000/repo:tag", "test:5000", "repo", "tag", None),
            ("localhost/repo", "localhost", "repo", "latest", None),
            (
                "index.docker.io/alice/x",
                "docker.io",
                "alice/x",
                "latest",
                None,
            ),
            (
                "lowercase:Uppercase",
                "docker.io",
                "library/lowercase",
                "Uppercase",
                None,
            ),
            (
                "b.gcr.io/test.example.com/my-app:test.example.com",
                "b.gcr.io",
                "test.example.com/my-app",
                "test.example.com",
                None,
            ),
            (
                "foo/foo_bar.com:8080",
                "docker.io",
                "foo/foo_bar.com",
                "8080",
                None,
            ),
            (
                &format!("test:5000/repo:tag@{digest}"),
                "test:5000",
                "repo",
                "tag",
                Some(digest.as_str()),
            ),
        ] {
            let r = ImageRef::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(
                (r.registry(), r.repository(), r.tag(), r.digest()),
                (registry, repository, tag, digest),
                "{input}"
            );
        }
        for bad in [
            String::new(),
            ":justtag".into(),
            "Uppercase:tag".into(),
            "a/a/a:".into(),
            format!("a:{}", "t".repeat(129)),
            format!("repo@sha256:{}", sha(63)),
            format!("repo@md5:{}", sha(32)),
            format!("{}/x", "a".repeat(256)),
            "ünicode/x".into(),
        ] {
            assert!(ImageRef::parse(&bad).is_err(), "{bad:?} parsed");
        }
    }
}
