//! The minimal OpenFaaS image of a merged binary, built through the Docker Engine API.
//!
//! Why: a merged function is one native binary, so its image needs no base image, no
//! shell and no package manager: `FROM scratch` plus the binary, the shared libraries
//! it loads, glibc's DNS modules, CA certificates, a writable `/tmp` and a non-root
//! user. That is a few MiB instead of a distro image, and it builds on machines that
//! cannot pull any base image. The build goes through the Engine API with bollard
//! (no `docker` CLI needed), with a build context made in memory.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use fmerge_ship::image::{self, ImageSpec};
//! let built = image::build(&ImageSpec::new(
//!     "target/fmerge/pair/pair",
//!     "pair",
//!     vec!["write-home-timeline".into(), "social-graph-get-followers".into()],
//!     std::fs::read_to_string("docker/Dockerfile.scratch")?,
//! ))?;
//! println!("{built}");
//! # Ok(()) }
//! ```

pub mod context;
pub mod engine;
pub mod libs;
pub mod reference;
pub mod watchdog;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use anyhow::{Context as _, Result, anyhow, bail};
use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use sha2::{Digest as _, Sha256};

pub use reference::ImageRef;

/// The fmerge version written into every image's labels.
pub use crate::FMERGE_VERSION;

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct ImageSpec {
    /// The merged binary (`target/fmerge/<NAME>/<NAME>`); any dynamically or statically
    /// linked x86-64 Linux executable works.
    pub binary: PathBuf,
    /// The merge name: the repository name of the default tag and the binary's file name
    /// in the image (`/usr/local/bin/<name>`). A DNS label (lowercase, digits, `-`, ≤ 63).
    pub name: String,
    /// The full image reference to tag, e.g. `docker.io/alice/pair:v3` or
    /// `127.0.0.1:5000/pair:v3`. `None`: [`default_reference`]. A reference without a
    /// tag gets the content-hash tag rather than `latest`.
    pub tag: Option<String>,
    /// Used only when `tag` is `None`: the registry and namespace to put in front of the
    /// default tag, e.g. `docker.io/alice` or `127.0.0.1:5000/team`.
    pub repository_prefix: Option<String>,
    /// The merged function names; the first is the caller (the function the image
    /// serves as). Empty means `[name]`.
    pub members: Vec<String>,
    /// Extra environment (after `port=8080`), e.g. the callees' namespaced
    /// `<FUNCTION_UPPER_SNAKE>__KEY` settings. Never secrets: names that look like one
    /// (`*_PASSWORD`, `*_TOKEN`, …) are refused.
    pub env: Vec<context::EnvVar>,
    /// The source revision (e.g. `git rev-parse HEAD`), written to the
    /// `org.opencontainers.image.revision` label.
    pub source_revision: Option<String>,
    /// The source repository URL, written to `org.opencontainers.image.source`.
    pub source_url: Option<String>,
    /// The Dockerfile template, whose `{{…}}` placeholders [`context`] fills
    /// (fmerge's is `docker/Dockerfile.scratch`, passed in by the fmerge binary).
    pub dockerfile: String,
    /// For a watchdog-process group: the of-watchdog that runs the binary
    /// (the entrypoint), and how.
    pub watchdog: Option<watchdog::Watchdog>,
}

impl ImageSpec {
    /// A spec with the default tag and no extra env or labels.
    pub fn new(
        binary: impl Into<PathBuf>,
        name: impl Into<String>,
        members: Vec<String>,
        dockerfile: impl Into<String>,
    ) -> Self {
        Self {
            binary: binary.into(),
            name: name.into(),
            members,
            dockerfile: dockerfile.into(),
            ..Self::default()
        }
    }
}

/// An image that is now in the local engine.
#[derive(Debug, Clone)]
pub struct BuiltImage {
    /// The reference it is tagged with, as given or defaulted (`127.0.0.1:5000/pair:3f2a…`).
    pub reference: String,
    /// The engine's image id (`sha256:…`).
    pub id: String,
    /// The image size the engine reports (the sum of its layers, uncompressed), in bytes.
    pub size_bytes: u64,
    /// sha256 of the binary, hex (also the `org.fmerge.binary.sha256` label).
    pub binary_sha256: String,
    /// The files put into the image (absolute paths in the image).
    pub files: Vec<PathBuf>,
    /// The entrypoint (`/usr/local/bin/<name>`, or of-watchdog's
    /// [`watchdog::IN_IMAGE`]).
    pub entrypoint: PathBuf,
    /// The labels set on the image.
    pub labels: HashMap<String, String>,
}

impl fmt::Display for BuiltImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "image {} built: {:.1} MiB, {} files (id {})",
            self.reference,
            self.size_bytes as f64 / (1024.0 * 1024.0),
            self.files.len(),
            self.id.get(..19).unwrap_or(&self.id)
        )
    }
}

/// The default reference: `[<prefix>/]<name>:<hash12>`, where `hash12` is the first 12
/// hex digits of the sha256 of `content`. Without a prefix this is Docker Hub's
/// `library/` namespace, fine locally but not pushable: pushing needs a namespace.
pub fn default_reference(name: &str, content: &[u8], prefix: Option<&str>) -> String {
    let hash = hex(&Sha256::digest(content));
    let repo = match prefix
        .map(|p| p.trim_end_matches('/'))
        .filter(|p| !p.is_empty())
    {
        Some(p) => format!("{p}/{name}"),
        None => name.to_owned(),
    };
    format!("{repo}:{}", &hash[..12])
}

/// Builds the image synchronously (starts a small async runtime).
pub fn build(spec: &ImageSpec) -> Result<BuiltImage> {
    engine::block_on(async {
        let docker = engine::connect().await?;
        build_async(&docker, spec).await
    })?
}

/// Builds the image with an existing engine connection.
pub async fn build_async(docker: &Docker, spec: &ImageSpec) -> Result<BuiltImage> {
    crate::names::validate_function_name(&spec.name)
        .context("the merge name is used as the image name")?;
    let members: Vec<String> = if spec.members.is_empty() {
        vec![spec.name.clone()]
    } else {
        spec.members.clone()
    };
    for m in &members {
        crate::names::validate_function_name(m)?;
    }
    let binary_bytes = std::fs::read(&spec.binary).with_context(|| {
        format!(
            "cannot read the binary {}\nfix: run `fmerge build` first, or pass the right path",
            spec.binary.display()
        )
    })?;
    // Read once: the digest in the label names the bytes the image holds,
    // even if the file is rebuilt meanwhile.
    let binary_sha256 = hex(&Sha256::digest(&binary_bytes));

    let ctx = context::build(
        &spec.dockerfile,
        (&spec.binary, binary_bytes),
        &spec.name,
        &spec.env,
        spec.watchdog.as_ref(),
    )?;
    let labels = labels(spec, &members, &binary_sha256);
    for (k, v) in &labels {
        if v.chars().any(char::is_control) {
            bail!(
                "label {k} has a control character in its value {v:?}\nfix: pass a single-line value"
            );
        }
    }

    // The tag: hash of everything that makes the image (context + labels) unless given.
    let mut hashed = ctx.tar.clone();
    let mut sorted: Vec<_> = labels.iter().collect();
    sorted.sort();
    for (k, v) in sorted {
        hashed.extend_from_slice(format!("\n{k}={v}").as_bytes());
    }
    let reference = match &spec.tag {
        Some(t) if reference::has_tag(t) => t.clone(),
        Some(t) => default_reference(t, &hashed, None),
        None => default_reference(&spec.name, &hashed, spec.repository_prefix.as_deref()),
    };
    let parsed = ImageRef::parse(&reference)?;
    if parsed.digest().is_some() {
        bail!(
            "cannot tag an image with a digest reference ({reference})\nfix: give a tag like `repo/name:v1`"
        );
    }

    let options = BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(&reference)
        .labels(&labels)
        .rm(true)
        .forcerm(true)
        .build();
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(ctx.tar.into())));
    let mut log: Vec<String> = Vec::new();
    let mut image_id: Option<String> = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                if let Some(s) = info.stream {
                    log.push(s.trim_end().to_owned());
                }
                if let Some(id) = info.aux.and_then(|a| a.id) {
                    image_id = Some(id);
                }
            }
            Err(e) => {
                let tail = log
                    .iter()
                    .rev()
                    .take(15)
                    .rev()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(anyhow!(
                    "the Docker Engine could not build {reference}: {}\nbuild output (last lines):\n{tail}\n\
fix: if the engine is unreachable see DOCKER_HOST; otherwise this is a bug in the Dockerfile template (fmerge's is docker/Dockerfile.scratch), please report it with this output",
                    engine::describe(&e)
                ));
            }
        }
    }
    let inspect = docker.inspect_image(&reference).await.map_err(|e| {
        anyhow!(
            "the build of {reference} finished but the engine does not list it: {}\nfix: rerun the build",
            engine::describe(&e)
        )
    })?;
    let id = inspect.id.or(image_id).unwrap_or_default();
    let size_bytes = inspect.size.unwrap_or(0).max(0) as u64;
    let built = BuiltImage {
        reference,
        id,
        size_bytes,
        binary_sha256,
        files: ctx.files,
        entrypoint: ctx.entrypoint,
        labels,
    };
    Ok(built)
}

/// The labels: `org.fmerge.*` for fmerge and the OCI `org.opencontainers.image.*` ones.
fn labels(spec: &ImageSpec, members: &[String], binary_sha256: &str) -> HashMap<String, String> {
    let mut l = HashMap::new();
    l.insert("org.fmerge.name".into(), spec.name.clone());
    l.insert("org.fmerge.caller".into(), members[0].clone());
    l.insert("org.fmerge.members".into(), members.join(","));
    if let Some(w) = &spec.watchdog {
        l.insert("org.fmerge.watchdog.mode".into(), w.mode.clone());
    }
    l.insert("org.fmerge.version".into(), FMERGE_VERSION.into());
    l.insert("org.fmerge.binary.sha256".into(), binary_sha256.into());
    l.insert("org.opencontainers.image.title".into(), spec.name.clone());
    l.insert(
        "org.opencontainers.image.description".into(),
        format!(
            "OpenFaaS function {} with {} merged in by fmerge",
            members[0],
            members.join(", ")
        ),
    );
    if let Some(rev) = &spec.source_revision {
        l.insert("org.fmerge.source.revision".into(), rev.clone());
        l.insert("org.opencontainers.image.revision".into(), rev.clone());
    }
    if let Some(url) = &spec.source_url {
        l.insert("org.opencontainers.image.source".into(), url.clone());
    }
    l
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_reference_is_name_and_hash() {
        let r = default_reference("pair", b"abc", None);
        assert_eq!(r, "pair:ba7816bf8f01");
        let r = default_reference("pair", b"abc", Some("127.0.0.1:5000/team/"));
        assert_eq!(r, "127.0.0.1:5000/team/pair:ba7816bf8f01");
    }
}
