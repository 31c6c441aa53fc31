//! Registry credentials: from the environment (CI), explicitly, or as docker reads them.
//!
//! Why: a developer has already run `docker login` (maybe with a `credsStore` such as
//! `desktop` or `pass`, or per-registry `credHelpers`); `docker_credential` reads those
//! exactly as docker does. CI has no config file but secrets in environment variables.
//! Passwords never travel on the command line (where `ps` shows them), are held in
//! `secrecy::SecretString` (redacted in `Debug`), and are scrubbed from every message
//! we print.

use std::str::FromStr;

use anyhow::{Result, anyhow, bail};
use bollard::auth::DockerCredentials;
use docker_credential::{CredentialRetrievalError, DockerCredential};
use secrecy::{ExposeSecret, SecretString};

use crate::image::ImageRef;

/// The registry user for [`Auth::Env`] (and [`Auth::Auto`] when set).
pub const USER_ENV: &str = "FMERGE_REGISTRY_USER";
/// The registry password or access token for [`Auth::Env`].
pub const PASSWORD_ENV: &str = "FMERGE_REGISTRY_PASSWORD";

/// A user name and password (or access token).
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The registry user.
    pub username: String,
    /// The password or access token; never printed.
    pub password: SecretString,
}

impl Credentials {
    /// From a user and a password.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            username: username.into(),
            password: SecretString::from(password.into()),
        }
    }

    /// From `FMERGE_REGISTRY_USER` and `FMERGE_REGISTRY_PASSWORD`; `None` when the user is unset.
    pub fn from_env() -> Result<Option<Self>> {
        let Some(user) = std::env::var(USER_ENV).ok().filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        let password = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()).ok_or_else(|| {
            anyhow!("{USER_ENV} is set but {PASSWORD_ENV} is not\nfix: export {PASSWORD_ENV} too (in CI: from a secret), or unset {USER_ENV} to use ~/.docker/config.json")
        })?;
        Ok(Some(Self::new(user, password)))
    }
}

/// Where the credentials for a push come from.
#[derive(Debug, Clone, Default)]
pub enum Auth {
    /// `FMERGE_REGISTRY_USER`/`FMERGE_REGISTRY_PASSWORD` if set, else docker's config
    /// (`~/.docker/config.json` or `$DOCKER_CONFIG`, with `credsStore`/`credHelpers`),
    /// else anonymous — what `docker push` would do.
    #[default]
    Auto,
    /// Only the environment variables; an error when they are unset.
    Env,
    /// Only docker's config; an error when it has no entry for the registry.
    DockerConfig,
    /// These credentials.
    Explicit(Credentials),
    /// No credentials (a registry that allows anonymous pushes).
    Anonymous,
}

impl FromStr for Auth {
    type Err = anyhow::Error;
    /// `auto`, `env`, `docker` (or `docker-config`), `none`: the `--registry-auth` values.
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "auto" => Auth::Auto,
            "env" => Auth::Env,
            "docker" | "docker-config" => Auth::DockerConfig,
            "none" | "anonymous" => Auth::Anonymous,
            other => bail!(
                "unknown registry auth source {other:?}\nfix: use one of auto, env, docker, none"
            ),
        })
    }
}

/// Credentials ready for the Engine, plus what to say about them and what to scrub.
pub(crate) struct Resolved {
    pub credentials: Option<DockerCredentials>,
    /// Where they came from, for messages (never the secret).
    pub source: String,
    /// Secret strings to scrub from any text we print.
    pub secrets: Vec<SecretString>,
}

impl Resolved {
    /// `text` with every secret replaced by `****`.
    pub fn scrub(&self, text: &str) -> String {
        scrub(text, &self.secrets)
    }
}

/// Replaces each secret of 3 or more characters with `****`. (Shorter ones would
/// garble every message; a 1–2 character password is not a secret anyway.)
pub fn scrub(text: &str, secrets: &[SecretString]) -> String {
    let mut out = text.to_owned();
    for s in secrets {
        let s = s.expose_secret();
        if s.len() >= 3 {
            out = out.replace(s, "****");
        }
    }
    out
}

pub(crate) fn resolve(auth: &Auth, image: &ImageRef) -> Result<Resolved> {
    let server = image.auth_server().to_owned();
    let from_creds = |c: &Credentials, source: String| Resolved {
        credentials: Some(DockerCredentials {
            username: Some(c.username.clone()),
            password: Some(c.password.expose_secret().to_owned()),
            serveraddress: Some(server.clone()),
            ..Default::default()
        }),
        source,
        secrets: vec![c.password.clone()],
    };
    match auth {
        Auth::Anonymous => Ok(Resolved { credentials: None, source: "no credentials".into(), secrets: vec![] }),
        Auth::Explicit(c) => Ok(from_creds(c, format!("the given credentials of user {}", c.username))),
        Auth::Env => match Credentials::from_env()? {
            Some(c) => Ok(from_creds(&c, format!("{USER_ENV}={} and {PASSWORD_ENV}", c.username))),
            None => bail!("--registry-auth env needs {USER_ENV} and {PASSWORD_ENV}, and they are not set\nfix: export both (in CI: from secrets), or choose another --registry-auth"),
        },
        Auth::DockerConfig => from_docker_config(&server, image)?.ok_or_else(|| {
            anyhow!(
                "docker's config has no credentials for {server}\nfix: `docker login {}` (or set {USER_ENV}/{PASSWORD_ENV} and use --registry-auth env)",
                login_arg(image)
            )
        }),
        Auth::Auto => {
            if let Some(c) = Credentials::from_env()? {
                return Ok(from_creds(&c, format!("{USER_ENV}={} and {PASSWORD_ENV}", c.username)));
            }
            Ok(from_docker_config(&server, image)?
                .unwrap_or(Resolved { credentials: None, source: "no credentials (none in the environment or docker's config)".into(), secrets: vec![] }))
        }
    }
}

fn login_arg(image: &ImageRef) -> String {
    if image.is_docker_hub() {
        String::new()
    } else {
        image.registry().to_owned()
    }
}

fn from_docker_config(server: &str, image: &ImageRef) -> Result<Option<Resolved>> {
    let config = std::env::var("DOCKER_CONFIG")
        .map(|d| format!("{d}/config.json"))
        .unwrap_or_else(|_| "~/.docker/config.json".into());
    match docker_credential::get_credential(server) {
        Ok(DockerCredential::UsernamePassword(user, password)) => {
            let secret = SecretString::from(password.clone());
            Ok(Some(Resolved {
                credentials: Some(DockerCredentials {
                    username: Some(user.clone()),
                    password: Some(password),
                    serveraddress: Some(server.to_owned()),
                    ..Default::default()
                }),
                source: format!("docker's config ({config}) for {server}, user {user}"),
                secrets: vec![secret],
            }))
        }
        Ok(DockerCredential::IdentityToken(token)) => {
            let secret = SecretString::from(token.clone());
            Ok(Some(Resolved {
                credentials: Some(DockerCredentials {
                    identitytoken: Some(token),
                    serveraddress: Some(server.to_owned()),
                    ..Default::default()
                }),
                source: format!("docker's config ({config}) for {server}, identity token"),
                secrets: vec![secret],
            }))
        }
        Err(
            CredentialRetrievalError::NoCredentialConfigured
            | CredentialRetrievalError::ConfigNotFound
            | CredentialRetrievalError::ConfigReadError,
        ) => Ok(None),
        // The helper's own output is left out: some helpers echo what they were given.
        Err(CredentialRetrievalError::HelperFailure { helper, .. }) => bail!(
            "the docker credential helper `docker-credential-{helper}` failed for {server}\n\
fix: check it works (`echo {server} | docker-credential-{helper} get`), run `docker login {}`, or use --registry-auth env",
            login_arg(image)
        ),
        Err(e) => bail!(
            "cannot read the credentials for {server} from {config}: {e}\nfix: repair the file (or `docker login {}` again), or use --registry-auth env",
            login_arg(image)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_and_parses() {
        let s = vec![SecretString::from("hunter22".to_owned())];
        assert_eq!(scrub("bad password hunter22!", &s), "bad password ****!");
        assert!(matches!("env".parse::<Auth>().unwrap(), Auth::Env));
        assert!("nope".parse::<Auth>().is_err());
        let c = Credentials::new("u", "hunter22");
        assert!(!format!("{c:?}").contains("hunter22"));
    }

    #[test]
    fn reads_docker_config_file() {
        let dir = tempfile::tempdir().unwrap();
        // base64("alice:s3cret")
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"auths":{"127.0.0.1:5999":{"auth":"YWxpY2U6czNjcmV0"}}}"#,
        )
        .unwrap();
        let cred = docker_credential::get_credential_from_reader(
            std::fs::File::open(dir.path().join("config.json")).unwrap(),
            "127.0.0.1:5999",
        )
        .unwrap();
        assert_eq!(
            cred,
            DockerCredential::UsernamePassword("alice".into(), "s3cret".into())
        );
    }
}
