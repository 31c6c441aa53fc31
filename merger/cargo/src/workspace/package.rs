//! One function's package in the generated workspace: its folder, a mirror
//! of the function's own, and its manifest, which builds the function's
//! sources under the function's name.

use anyhow::{Context as _, Result};
use cargo_metadata::{Dependency, DependencyKind, Package, TargetKind};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Makes `at` a mirror of `package`'s workspace root down to the package's
/// folder, and returns the package's folder in it. Real folders on the path,
/// symlinks for everything else; cargo's own files (`Cargo.toml`,
/// `Cargo.lock`, `target`) are left out, so that cargo sees only the
/// generated package there.
pub(super) fn mirror(package: &Package, root: &Path, at: &Path) -> Result<PathBuf> {
    let own = package
        .manifest_path
        .parent()
        .map(|p| p.as_std_path().to_path_buf())
        .context("a manifest path has a folder")?;
    // A package outside its workspace root's folder: mirror its folder only.
    let (mut original, rel) = match own.strip_prefix(root) {
        Ok(rel) => (root.to_path_buf(), rel.to_path_buf()),
        Err(_) => (own.clone(), PathBuf::new()),
    };
    let mut folder = at.to_path_buf();
    let mut steps = rel.components();
    loop {
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
        let next = steps.next().map(|c| c.as_os_str().to_os_string());
        let entries = std::fs::read_dir(&original)
            .with_context(|| format!("cannot read the folder {}", original.display()))?;
        for entry in entries {
            let name = entry?.file_name();
            if Some(&name) == next.as_ref()
                || matches!(name.to_str(), Some("Cargo.toml" | "Cargo.lock" | "target"))
            {
                continue;
            }
            let link = folder.join(&name);
            std::os::unix::fs::symlink(original.join(&name), &link)
                .with_context(|| format!("cannot create the symlink {}", link.display()))?;
        }
        let Some(next) = next else {
            return Ok(folder);
        };
        original.push(&next);
        folder.push(&next);
    }
}

/// The wrapper package: the function's targets and dependencies under the
/// function's name; `replace` (a path dependency's name, the folder and
/// package name to take instead) puts a handler library in its template's
/// library's place, and `extra` are dependency lines added to the rest.
pub(super) fn wrapper_manifest(
    function: &str,
    p: &Package,
    replace: Option<(&str, &Path, &str)>,
    extra: &[String],
) -> Result<String> {
    let mut s = String::new();
    writeln!(
        s,
        "# {function}: the sources of {} at {}",
        p.name, p.manifest_path
    )?;
    writeln!(
        s,
        "[package]\nname = {}\nversion = \"{}\"\nedition = \"{}\"",
        quote(function),
        p.version,
        p.edition
    )?;
    writeln!(
        s,
        "autobins = false\nautoexamples = false\nautotests = false\nautobenches = false\npublish = false"
    )?;
    if let Some(links) = &p.links {
        writeln!(s, "links = {}", quote(links))?;
    }
    for t in &p.targets {
        if t.kind.contains(&TargetKind::CustomBuild) {
            writeln!(s, "build = {}", quote(t.src_path.as_str()))?;
        }
    }
    if !p.features.is_empty() {
        writeln!(s, "\n[features]")?;
        for (name, enables) in &p.features {
            writeln!(
                s,
                "{} = [{}]",
                quote(name),
                enables
                    .iter()
                    .map(|e| quote(e))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    // A single binary takes the function's name: functions made from one
    // template all call theirs `handler`.
    let bins = p
        .targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::Bin))
        .count();
    for t in &p.targets {
        if t.kind
            .iter()
            .any(|k| matches!(k, TargetKind::Lib | TargetKind::RLib))
        {
            writeln!(
                s,
                "\n[lib]\nname = {}\npath = {}",
                quote(&t.name.replace('-', "_")),
                quote(t.src_path.as_str())
            )?;
        }
        if t.kind.contains(&TargetKind::Bin) {
            let name = if bins == 1 { function } else { t.name.as_str() };
            writeln!(
                s,
                "\n[[bin]]\nname = {}\npath = {}",
                quote(name),
                quote(t.src_path.as_str())
            )?;
        }
    }
    for (kind, table) in [
        (DependencyKind::Normal, "dependencies"),
        (DependencyKind::Build, "build-dependencies"),
    ] {
        let mut by_target: BTreeMap<Option<String>, Vec<String>> = BTreeMap::new();
        if kind == DependencyKind::Normal && !extra.is_empty() {
            by_target.entry(None).or_default().extend_from_slice(extra);
        }
        for d in p.dependencies.iter().filter(|d| d.kind == kind) {
            let line = dependency_line(d, replace);
            by_target
                .entry(d.target.as_ref().map(|t| t.to_string()))
                .or_default()
                .push(line);
        }
        for (target, lines) in by_target {
            match target {
                None => writeln!(s, "\n[{table}]")?,
                Some(t) => writeln!(s, "\n[target.{}.{table}]", quote(&t))?,
            }
            for l in lines {
                writeln!(s, "{l}")?;
            }
        }
    }
    Ok(s)
}

/// The manifest line of dependency `d`, as the function's own manifest
/// asks for it (`replace`: as in [`wrapper_manifest`]).
pub(super) fn dependency_line(d: &Dependency, replace: Option<(&str, &Path, &str)>) -> String {
    let mut fields = Vec::new();
    let instead = replace.filter(|(name, ..)| d.path.is_some() && d.name == *name);
    if let Some((_, folder, package)) = instead {
        fields.push(format!("package = {}", quote(package)));
        fields.push(format!("path = {}", quote(&folder.to_string_lossy())));
    } else if d.rename.is_some() {
        fields.push(format!("package = {}", quote(&d.name)));
    }
    match (&d.path, d.source.as_ref().map(|s| s.repr.as_str())) {
        _ if instead.is_some() => {}
        (Some(path), _) => {
            fields.push(format!("path = {}", quote(path.as_str())));
            if d.req.to_string() != "*" {
                fields.push(format!("version = {}", quote(&d.req.to_string())));
            }
        }
        (None, Some(src)) if src.starts_with("git+") => {
            let url = &src["git+".len()..];
            let (url, query) = url.split_once('?').unwrap_or((url, ""));
            fields.push(format!("git = {}", quote(url)));
            for (k, v) in query.split('&').filter_map(|kv| kv.split_once('=')) {
                if matches!(k, "branch" | "tag" | "rev") {
                    fields.push(format!("{k} = {}", quote(v)));
                }
            }
        }
        _ => fields.push(format!("version = {}", quote(&d.req.to_string()))),
    }
    if let Some(registry) = &d.registry {
        fields.push(format!("registry = {}", quote(registry)));
    }
    if !d.uses_default_features {
        fields.push("default-features = false".into());
    }
    if !d.features.is_empty() {
        fields.push(format!(
            "features = [{}]",
            d.features
                .iter()
                .map(|f| quote(f))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if d.optional {
        fields.push("optional = true".into());
    }
    let key = d.rename.clone().unwrap_or_else(|| d.name.clone());
    format!("{} = {{ {} }}", quote(&key), fields.join(", "))
}

pub(super) fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
