//! The Docker build context, made in memory as a tar archive.
//!
//! Why: the Engine's `/build` endpoint takes a tar body. Building it in memory means
//! nothing from the working tree (and so no stray `.env`, `~/.docker/config.json` or
//! other secret) can end up in a layer: the context holds exactly the files listed
//! here. Every entry gets uid 0, a fixed mtime and an explicit mode, so the same
//! binary gives the same layers and the Engine's build cache hits.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::libs::{self, Resolved};
use super::watchdog::Watchdog;

/// The CA bundle that Debian's `ca-certificates` package writes.
pub const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The non-root user the function runs as (OpenFaaS's own templates use 10001-ish ids too).
pub const UID: u32 = 10001;
/// Its group.
pub const GID: u32 = 10001;
/// Its user and group name.
pub const USER: &str = "app";
/// Its home directory (owned by it; the working directory).
pub const HOME: &str = "/home/app";

/// A fixed mtime (1970-01-01T00:00:01Z) so equal inputs give equal layers.
const MTIME: u64 = 1;

/// The rendered context.
pub struct BuildContext {
    /// The tar archive sent to the Engine.
    pub tar: Vec<u8>,
    /// The rendered Dockerfile (also inside `tar`).
    pub dockerfile: String,
    /// Absolute paths of the files put into the image (not directories).
    pub files: Vec<PathBuf>,
    /// The entrypoint: the binary's path inside the image, or of-watchdog's.
    pub entrypoint: PathBuf,
}

/// What goes into one entry of `rootfs/`.
enum Content {
    Host(PathBuf),
    Bytes(Vec<u8>),
}

/// One `ENV` line of the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub key: String,
    pub value: String,
}

impl EnvVar {
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> EnvVar {
        EnvVar {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// Builds the context for `binary` (read once, by the caller: its bytes are
/// what the image holds, what its libraries are found from and what its
/// label's digest names), installed as `/usr/local/bin/<name>`, with
/// the Dockerfile `template` filled in (see [`render_dockerfile`]). With a
/// `watchdog`, of-watchdog is the entrypoint and runs the binary as its
/// `fprocess` in the caller's mode.
pub fn build(
    template: &str,
    (binary, bytes): (&Path, Vec<u8>),
    name: &str,
    env: &[EnvVar],
    watchdog: Option<&Watchdog>,
) -> Result<BuildContext> {
    let resolved = libs::resolve(binary, &bytes)?;
    let installed = installed(name);

    let mut files: Vec<(PathBuf, Content, u32)> = Vec::new();
    files.push((installed.clone(), Content::Bytes(bytes), 0o755));
    let mut env = env.to_vec();
    let entrypoint = match watchdog {
        None => installed,
        Some(w) => {
            files.push((
                PathBuf::from(super::watchdog::IN_IMAGE),
                Content::Host(w.binary.clone()),
                0o755,
            ));
            if let Some(launcher) = &w.launcher {
                files.push((
                    PathBuf::from(super::watchdog::LAUNCHER_IN_IMAGE),
                    Content::Host(launcher.clone()),
                    0o755,
                ));
            }
            env.push(EnvVar::new("fprocess", w.fprocess(&installed)));
            env.push(EnvVar::new("mode", &w.mode));
            if let Some(url) = &w.upstream_url {
                env.push(EnvVar::new("upstream_url", url));
            }
            PathBuf::from(super::watchdog::IN_IMAGE)
        }
    };
    for lib in &resolved.libs {
        files.push((
            lib.image_path.clone(),
            Content::Host(lib.host_path.clone()),
            0o755,
        ));
    }
    if !Path::new(CA_BUNDLE).is_file() {
        bail!(
            "{CA_BUNDLE} is missing, so the image could not call HTTPS services\nfix: `apt-get install ca-certificates` (it writes that bundle)"
        );
    }
    files.push((
        PathBuf::from(CA_BUNDLE),
        Content::Host(PathBuf::from(CA_BUNDLE)),
        0o644,
    ));
    files.push((
        PathBuf::from("/etc/passwd"),
        Content::Bytes(
            format!(
                "root:x:0:0:root:/root:/sbin/nologin\n{USER}:x:{UID}:{GID}:fmerge function:{HOME}:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
            )
            .into_bytes(),
        ),
        0o644,
    ));
    files.push((
        PathBuf::from("/etc/group"),
        Content::Bytes(format!("root:x:0:\n{USER}:x:{GID}:\nnogroup:x:65534:\n").into_bytes()),
        0o644,
    ));
    files.push((
        PathBuf::from("/etc/nsswitch.conf"),
        Content::Bytes(
            b"# fmerge: files first (the /etc/hosts the runtime mounts), then DNS (cluster names)\n\
passwd: files\ngroup: files\nhosts: files dns\nnetworks: files\nservices: files\nprotocols: files\n"
                .to_vec(),
        ),
        0o644,
    ));

    let dockerfile = render_dockerfile(template, &entrypoint, &env, &resolved)?;

    let mut builder = tar::Builder::new(Vec::new());
    builder.mode(tar::HeaderMode::Deterministic);
    append_bytes(
        &mut builder,
        Path::new("Dockerfile"),
        dockerfile.as_bytes(),
        0o644,
    )?;

    // Directories first, parents before children; /tmp is sticky and world-writable.
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for (path, _, _) in &files {
        let mut p = path.parent();
        while let Some(d) = p {
            if d != Path::new("/") {
                dirs.insert(d.to_path_buf());
            }
            p = d.parent();
        }
    }
    append_dir(&mut builder, Path::new("rootfs"), 0o755)?;
    for d in &dirs {
        append_dir(&mut builder, &rootfs_path(d), 0o755)?;
    }
    append_dir(&mut builder, Path::new("rootfs/tmp"), 0o1777)?;
    append_dir(&mut builder, Path::new("home"), 0o755)?;

    for (path, source, mode) in &files {
        let bytes = match source {
            Content::Host(host) => fs::read(host).with_context(|| {
                format!(
                    "cannot read {} for the image\nfix: check that it exists and is readable",
                    host.display()
                )
            })?,
            Content::Bytes(b) => b.clone(),
        };
        append_bytes(&mut builder, &rootfs_path(path), &bytes, *mode)?;
    }
    let tar = builder
        .into_inner()
        .context("cannot finish the in-memory build context")?;
    Ok(BuildContext {
        tar,
        dockerfile,
        files: files.into_iter().map(|(p, _, _)| p).collect(),
        entrypoint,
    })
}

/// Where the merged binary `name` is in the image.
pub fn installed(name: &str) -> PathBuf {
    PathBuf::from("/usr/local/bin").join(name)
}

fn rootfs_path(image_path: &Path) -> PathBuf {
    Path::new("rootfs").join(image_path.strip_prefix("/").unwrap_or(image_path))
}

/// A reproducible entry's header: owned by root, dated [`MTIME`].
fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(MTIME);
    h.set_size(size);
    h
}

fn append_dir(b: &mut tar::Builder<Vec<u8>>, path: &Path, mode: u32) -> Result<()> {
    let mut h = header(tar::EntryType::Directory, mode, 0);
    b.append_data(&mut h, path, std::io::empty())
        .with_context(|| {
            format!(
                "cannot add directory {} to the build context",
                path.display()
            )
        })
}

fn append_bytes(b: &mut tar::Builder<Vec<u8>>, path: &Path, data: &[u8], mode: u32) -> Result<()> {
    let mut h = header(tar::EntryType::Regular, mode, data.len() as u64);
    b.append_data(&mut h, path, data)
        .with_context(|| format!("cannot add {} to the build context", path.display()))
}

/// Fills the template's `{{UID}}`, `{{GID}}`, `{{HOME}}`, `{{ENV}}` and
/// `{{ENTRYPOINT}}`. Env values are quoted for the Dockerfile parser (`\`, `"`
/// and `$` escaped), so a value is taken literally and never expanded.
pub fn render_dockerfile(
    template: &str,
    entrypoint: &Path,
    env: &[EnvVar],
    resolved: &Resolved,
) -> Result<String> {
    let mut env_lines = String::new();
    let mut all_env: Vec<EnvVar> = Vec::new();
    if resolved.needs_library_path {
        all_env.push(EnvVar::new("LD_LIBRARY_PATH", libs::EXTRA_LIBRARY_DIR));
    }
    all_env.extend(env.iter().cloned());
    for EnvVar { key, value } in &all_env {
        validate_env(key, value)?;
        let escaped = value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$");
        env_lines.push_str(&format!("ENV {key}=\"{escaped}\"\n"));
    }
    let entry = serde_json::to_string(&[entrypoint.to_string_lossy()])?;
    if !template.contains("{{ENTRYPOINT}}") {
        bail!(
            "the Dockerfile template has no {{{{ENTRYPOINT}}}} placeholder, so the image would not run the binary\n\
             fix: pass fmerge's docker/Dockerfile.scratch (or a template with that placeholder)"
        );
    }
    Ok(template
        .replace("{{UID}}", &UID.to_string())
        .replace("{{GID}}", &GID.to_string())
        .replace("{{HOME}}", HOME)
        .replace("{{ENV}}", env_lines.trim_end())
        .replace("{{ENTRYPOINT}}", &entry))
}

/// Keys a shell and Kubernetes accept; no control characters; and no secrets, which
/// would be readable by anyone who can pull the image.
pub fn validate_env(key: &str, value: &str) -> Result<()> {
    let mut chars = key.chars();
    let ok_start = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !ok_start || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!(
            "environment variable name {key:?} is not valid\nfix: use letters, digits and `_`, not starting with a digit"
        );
    }
    if value.chars().any(|c| c.is_control()) {
        bail!(
            "the value of environment variable {key} contains a control character (newline?)\nfix: put multi-line data in a file or an OpenFaaS secret"
        );
    }
    if looks_secret(key) {
        bail!(
            "environment variable {key} looks like a secret, and image environment is readable by anyone who can pull the image\n\
fix: create an OpenFaaS secret (`faas-cli secret create`) and read it from /var/openfaas/secrets/<name>, or rename the variable if it is not secret"
        );
    }
    Ok(())
}

/// The names [`looks_secret`] takes for a secret's, alone or after a `_`
/// (`PASSWORD`, `DB_PASSWORD`).
const SECRET_WORDS: &[&str] = &[
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "CREDENTIALS",
];

/// Whether a variable's name is one of `SECRET_WORDS` or ends in `_` and
/// one (case-insensitive).
pub fn looks_secret(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    SECRET_WORDS
        .iter()
        .any(|w| k == *w || k.ends_with(&format!("_{w}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The placeholders of fmerge's template (the fmerge crate's assets test renders the real one).
    const TEMPLATE: &str = "FROM scratch\nUSER {{UID}}:{{GID}}\nWORKDIR {{HOME}}\n{{ENV}}\nENTRYPOINT {{ENTRYPOINT}}\n";

    #[test]
    fn env_is_escaped_and_secrets_refused() {
        let r = Resolved::default();
        let df = render_dockerfile(
            TEMPLATE,
            Path::new("/usr/local/bin/x"),
            &[EnvVar::new("A", r#"a "b" $HOME \ c"#)],
            &r,
        )
        .unwrap();
        assert!(df.contains(r#"ENV A="a \"b\" \$HOME \\ c""#), "{df}");
        assert!(df.contains(r#"ENTRYPOINT ["/usr/local/bin/x"]"#), "{df}");
        assert!(df.contains("FROM scratch"));
        assert!(!df.contains("{{"));
        let refused = |key: &str, value: &str| {
            render_dockerfile(TEMPLATE, Path::new("/x"), &[EnvVar::new(key, value)], &r).is_err()
        };
        assert!(refused("REDIS_PASSWORD", "p"));
        assert!(refused("1A", "p"));
        assert!(refused("A", "p\nq"));
        assert!(!looks_secret("TOKEN_TTL") && looks_secret("github_token"));
        let no_entrypoint = render_dockerfile("FROM scratch\n", Path::new("/x"), &[], &r);
        assert!(format!("{:#}", no_entrypoint.unwrap_err()).contains("{{ENTRYPOINT}}"));
    }
}
