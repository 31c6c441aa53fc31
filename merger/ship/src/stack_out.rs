//! `stack.yml` for `faas-cli deploy` of a merged function's prebuilt image.
//!
//! Why: the merged binary replaces several OpenFaaS functions with one, deployed under
//! the caller's name. Its stack file must say `lang: dockerfile` and `skip_build: true`
//! (or faas-cli looks for a template and fails), carry the callees' settings under
//! their namespaced names (`<FUNCTION_UPPER_SNAKE>__KEY`, which the merged runtime
//! reads for a merged callee), and list the members in labels Kubernetes accepts.
//! Everything is validated before the file is written, and the file is written
//! atomically, so a failed run never leaves a half-written stack.yml behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// The file name written by [`write`](fn@write).
pub const FILE_NAME: &str = "stack.yml";
/// faas-cli's default gateway.
pub const DEFAULT_GATEWAY: &str = "http://127.0.0.1:8080";

/// What a stack.yml entry deploys a function with: read from each member's
/// entry, and (folded by `stack_in::merge_into`) written for the merged function.
#[derive(Debug, Clone, Default)]
pub struct Deployment {
    /// The environment, with `environment_file`s read in.
    pub environment: BTreeMap<String, String>,
    /// OpenFaaS secret names to mount under `/var/openfaas/secrets/`.
    pub secrets: Vec<String>,
    /// Labels (Kubernetes label rules apply).
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `limits` and `requests` (`memory`, `cpu`), as faas-cli writes them.
    pub limits: BTreeMap<String, String>,
    pub requests: BTreeMap<String, String>,
    /// Node placement constraints.
    pub constraints: Vec<String>,
}

/// One setting of a merged callee, written as `<FUNCTION_UPPER_SNAKE>__<KEY>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalleeEnv {
    /// The callee's function name (`social-graph-get-followers`).
    pub function: String,
    /// The key the callee reads unmerged (`REDIS_URL`).
    pub key: String,
    /// The value.
    pub value: String,
}

/// What to write.
#[derive(Debug, Clone, Default)]
pub struct StackSpec {
    /// The OpenFaaS gateway URL (`http://127.0.0.1:8080`, faas-cli's default).
    pub gateway: String,
    /// The merged functions; the first is the caller, whose name the merged function
    /// is deployed under.
    pub members: Vec<String>,
    /// The image reference to deploy (as built/pushed: `docker.io/alice/pair:3f2a…`).
    pub image: String,
    /// The caller's settings, with the callees' secrets and summed limits
    /// and requests (folded by `stack_in::merge_into`); its labels come
    /// after fmerge's member labels.
    pub deployment: Deployment,
    /// The callees' environment, written under namespaced keys.
    pub callee_environment: Vec<CalleeEnv>,
}

impl StackSpec {
    /// A spec for `members` (the caller first) running `image`, with faas-cli's
    /// default gateway and no settings.
    pub fn new(members: Vec<String>, image: impl Into<String>) -> Self {
        Self {
            gateway: DEFAULT_GATEWAY.to_owned(),
            members,
            image: image.into(),
            ..Self::default()
        }
    }

    /// The deployed function name: the caller.
    pub fn function_name(&self) -> Option<&str> {
        self.members.first().map(String::as_str)
    }
}

pub use crate::names::validate_function_name;
/// `social-graph-get-followers` + `REDIS_URL` → `SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL`:
/// the runtime's rule, kept in one place.
pub use fmerge_contract::namespaced as namespaced_env_key;

/// Kubernetes label/annotation key: `[prefix/]name`, name ≤ 63 of `[A-Za-z0-9-_.]`.
fn validate_label_key(key: &str) -> Result<()> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty() && p.len() <= 253 && p.split('.').all(|l| validate_function_name(l).is_ok())
    });
    if !name_ok || !prefix_ok {
        bail!(
            "label key {key:?} is not valid for Kubernetes\nfix: use [dns.prefix/]name with a name of at most 63 letters, digits, `-`, `_` or `.`, \
starting and ending with a letter or digit"
        );
    }
    Ok(())
}

/// Kubernetes label value: empty, or ≤ 63 of `[A-Za-z0-9-_.]` starting/ending alphanumeric.
fn validate_label_value(key: &str, value: &str) -> Result<()> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if !ok {
        bail!(
            "label {key} has the value {value:?}, which Kubernetes refuses\nfix: use at most 63 letters, digits, `-`, `_` or `.`, \
or put free text in an annotation instead"
        );
    }
    Ok(())
}

/// Refuses a gateway that is not an http(s) URL (`--gateway`).
pub fn validate_gateway(gateway: &str) -> Result<()> {
    if !(gateway.starts_with("http://") || gateway.starts_with("https://")) {
        bail!(
            "--gateway {gateway:?} is not an http(s) URL\nfix: give the OpenFaaS gateway, e.g. {DEFAULT_GATEWAY} or https://gateway.example.com"
        );
    }
    Ok(())
}

/// Checks everything `faas-cli deploy` and Kubernetes would refuse, before writing.
pub fn validate(spec: &StackSpec) -> Result<()> {
    validate_gateway(&spec.gateway)?;
    if spec.members.is_empty() {
        bail!(
            "no function to deploy: the member list is empty\nfix: list the merged functions, the caller first"
        );
    }
    for m in &spec.members {
        validate_function_name(m)?;
    }
    let mut seen = std::collections::BTreeSet::new();
    for m in &spec.members {
        if !seen.insert(m) {
            bail!(
                "function {m} is listed twice among the merged members\nfix: list each function once"
            );
        }
    }
    if spec.image.trim().is_empty() {
        bail!(
            "no image for function {}\nfix: build the image first (fmerge build --image) or pass --tag",
            spec.members[0]
        );
    }
    crate::image::ImageRef::parse(&spec.image)?;
    let callees: Vec<&String> = spec.members.iter().skip(1).collect();
    for e in &spec.callee_environment {
        if !callees.contains(&&e.function) {
            bail!(
                "environment for {} is given, but {} is not a merged callee ({})\nfix: add it to the merge group or drop its settings",
                e.function,
                e.function,
                if callees.is_empty() {
                    "there are none".to_owned()
                } else {
                    callees
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        }
    }
    for (k, v) in environment(spec) {
        crate::image::context::validate_env(&k, &v).map_err(|e| {
            anyhow::anyhow!("{e}").context(format!(
                "in the environment of function {} in stack.yml",
                spec.members[0]
            ))
        })?;
    }
    for s in &spec.deployment.secrets {
        validate_function_name(s)
            .with_context(|| format!("secret name {s:?} must be a DNS label too"))?;
    }
    for (k, v) in labels(spec) {
        validate_label_key(&k)?;
        validate_label_value(&k, &v)?;
    }
    for k in spec.deployment.annotations.keys() {
        validate_label_key(k)?;
    }
    Ok(())
}

fn environment(spec: &StackSpec) -> BTreeMap<String, String> {
    let mut env = spec.deployment.environment.clone();
    for e in &spec.callee_environment {
        env.insert(namespaced_env_key(&e.function, &e.key), e.value.clone());
    }
    env
}

/// `org.fmerge.caller`, one `org.fmerge.member-<i>` per member (each value a DNS label,
/// so it is a valid Kubernetes label value however many members there are), and the
/// count; then the extra labels.
fn labels(spec: &StackSpec) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    l.insert("org.fmerge.caller".to_owned(), spec.members[0].clone());
    l.insert(
        "org.fmerge.member-count".to_owned(),
        spec.members.len().to_string(),
    );
    for (i, m) in spec.members.iter().enumerate() {
        l.insert(format!("org.fmerge.member-{i}"), m.clone());
    }
    l.extend(spec.deployment.labels.clone());
    l
}

#[derive(Serialize)]
struct StackFile<'a> {
    version: f64,
    provider: Provider<'a>,
    functions: BTreeMap<&'a str, Function<'a>>,
}

#[derive(Serialize)]
struct Provider<'a> {
    name: &'static str,
    gateway: &'a str,
}

#[derive(Serialize)]
struct Function<'a> {
    lang: &'static str,
    skip_build: bool,
    image: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    environment: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    secrets: &'a [String],
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    limits: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    requests: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    constraints: &'a [String],
}

/// The merged function's entry alone, as YAML data (after [`validate`]), for
/// a stack.yml that holds other functions too.
pub fn entry(spec: &StackSpec) -> Result<serde_yaml_ng::Value> {
    let text = render(spec)?;
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text)?;
    Ok(doc["functions"][spec.members[0].as_str()].clone())
}

/// The YAML text (after [`validate`]).
pub fn render(spec: &StackSpec) -> Result<String> {
    validate(spec)?;
    let mut annotations = spec.deployment.annotations.clone();
    annotations.insert("org.fmerge.members".into(), spec.members.join(","));
    annotations.insert("org.fmerge.version".into(), crate::FMERGE_VERSION.into());
    let file = StackFile {
        version: 1.0,
        provider: Provider {
            name: "openfaas",
            gateway: &spec.gateway,
        },
        functions: BTreeMap::from([(
            spec.members[0].as_str(),
            Function {
                lang: "dockerfile",
                skip_build: true,
                image: &spec.image,
                environment: environment(spec),
                secrets: &spec.deployment.secrets,
                labels: labels(spec),
                annotations,
                limits: &spec.deployment.limits,
                requests: &spec.deployment.requests,
                constraints: &spec.deployment.constraints,
            },
        )]),
    };
    let yaml = serde_yaml_ng::to_string(&file).context("cannot serialize stack.yml")?;
    Ok(format!(
        "# Written by fmerge {}: deploy with `faas-cli deploy -f {FILE_NAME}`.\n{yaml}",
        crate::FMERGE_VERSION
    ))
}

/// Validates, then writes `<dir>/stack.yml` atomically (temp file in `dir` + rename).
/// Returns the path written.
pub fn write(spec: &StackSpec, dir: &Path) -> Result<PathBuf> {
    let text = render(spec)?;
    let path = dir.join(FILE_NAME);
    fmerge_cargo::artifact::write(&path, text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        validate_function_name("social-graph-get-followers").unwrap();
        let e = validate_function_name("Social_Graph")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"Social_Graph\"") && e.contains("social-graph"),
            "{e}"
        );
        assert!(validate_function_name(&"a".repeat(64)).is_err());
        validate_function_name(&"a".repeat(63)).unwrap();
        assert!(validate_function_name("-a").is_err());
        assert_eq!(
            namespaced_env_key("social-graph-get-followers", "REDIS_URL"),
            "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL"
        );
        validate_label_key("org.fmerge.member-0").unwrap();
        assert!(validate_label_key("a b").is_err());
    }
}
