//! Functions from separate cargo projects, as `faas-cli new` lays them out
//! (each function its own folder with its own Cargo.toml, often in different
//! repos). Cargo builds a set of packages in one invocation only inside one
//! workspace, and a workspace cannot list members outside its folder; so
//! fmerge writes a build workspace of its own under the target dir, with one
//! package per function that builds the function's own sources (absolute
//! target paths, its own build script) with the same dependencies, under the
//! function's name. The user's projects are never touched.
//!
//! Each generated package's folder mirrors the function's own: every entry of
//! the function's folder (and of the folders up to its workspace root) is a
//! symlink to the original, so build scripts (which cargo runs in the
//! package's folder), `env!("CARGO_MANIFEST_DIR")` and `include_bytes!` find
//! the function's files by the same relative paths as in its own project.
//!
//! What changes: `CARGO_MANIFEST_DIR` names the mirror, not the original;
//! the package takes the function's name; and the caller's `Cargo.lock`
//! (when it has one) decides shared versions (a callee whose own lock pins
//! another version is reported).

mod handle;
mod package;

use crate::resolve::RUNTIME;
use anyhow::{Context as _, Result, bail};
use cargo_metadata::{DependencyKind, MetadataCommand, Package, TargetKind};
use package::{mirror, quote, wrapper_manifest};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One function to build: its OpenFaaS name and its project's Cargo.toml.
#[derive(Debug, Clone)]
pub struct FunctionProject {
    pub function: String,
    /// The manifest of the package whose binary is the function: its own,
    /// or its template's `main` for a function whose handler is a library.
    pub manifest: PathBuf,
    /// For a function whose handler is a library (the handler-library
    /// templates: a package named `handler` that the template's `main`
    /// serves), that library's manifest, which takes the place of the
    /// template's own `handler` ([`entry_project`]).
    pub handler_library: Option<PathBuf>,
}

impl FunctionProject {
    /// A function whose package is its own binary.
    pub fn own(function: &str, manifest: PathBuf) -> FunctionProject {
        FunctionProject {
            function: function.to_string(),
            manifest,
            handler_library: None,
        }
    }
}

/// The project of function `function` of a stack file, whose `handler:`
/// folder is `handler`: the package there, or, when it is a library and
/// its `lang`'s template (`template`) has a binary package serving a
/// library of that package's name, that binary with this library in its
/// template's place, as `faas-cli build` copies a handler into the
/// template's `function/` folder.
pub fn entry_project(
    function: &str,
    handler: &Path,
    template: Option<&Path>,
) -> Result<FunctionProject> {
    let own = FunctionProject::own(function, handler.join("Cargo.toml"));
    let (package, _) = package_of(&own)?;
    let is_lib = |p: &Package| {
        p.targets.iter().all(|t| !t.kind.contains(&TargetKind::Bin))
            && p.targets.iter().any(|t| {
                t.kind
                    .iter()
                    .any(|k| matches!(k, TargetKind::Lib | TargetKind::RLib))
            })
    };
    if !is_lib(&package) {
        return Ok(own);
    }
    let Some(template) = template else {
        bail!(
            "function {function}: its handler {} is a library (package {}) with no `main`, which a template's own \
             `main` serves, and its `lang`'s template is not in the `template/` folder beside the stack file\n\
             fix: run `faas-cli template pull <its template repository>` beside the stack file, as `faas-cli build` needs too",
            handler.display(),
            package.name
        );
    };
    let mains = template_mains(template, &package.name)?;
    let [main] = mains.as_slice() else {
        bail!(
            "function {function}: its template {} has {} binary packages that serve a library named `{}` ({}), \
             so fmerge cannot tell which one faas-cli builds\n\
             fix: keep one `main` package in the template, as faas-cli's templates have",
            template.display(),
            mains.len(),
            package.name,
            mains
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    Ok(FunctionProject {
        function: function.to_string(),
        manifest: main.clone(),
        handler_library: Some(own.manifest),
    })
}

/// The manifests of the binary packages in `template` (its folder and the
/// folders in it) that depend on a path package named `library`.
fn template_mains(template: &Path, library: &str) -> Result<Vec<PathBuf>> {
    let mut candidates = vec![template.join("Cargo.toml")];
    if let Ok(entries) = std::fs::read_dir(template) {
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        candidates.extend(dirs.into_iter().map(|d| d.join("Cargo.toml")));
    }
    let mut mains = Vec::new();
    for manifest in candidates.into_iter().filter(|m| m.is_file()) {
        let project = FunctionProject::own("", manifest.clone());
        let Ok((package, _)) = package_of(&project) else {
            continue;
        };
        let serves = package
            .dependencies
            .iter()
            .any(|d| d.path.is_some() && d.name == library && d.kind == DependencyKind::Normal);
        let binary = package
            .targets
            .iter()
            .any(|t| t.kind.contains(&TargetKind::Bin));
        if serves && binary {
            mains.push(manifest);
        }
    }
    Ok(mains)
}

/// The generated workspace.
#[derive(Debug)]
pub struct Generated {
    pub manifest: PathBuf,
    /// Crates whose version differs between the merged build and a
    /// function's own `Cargo.lock`, as messages.
    pub lock_differences: Vec<String>,
    /// The functions in a handler-library template whose `handle` the
    /// workspace exports for the shim to call (`fmerge.handle.<function>`).
    pub handles: BTreeSet<String>,
}

/// Where the build workspace of `sources` for `purpose` (`build`, `graph`)
/// goes under `target_dir`: named by its functions and their manifests, so
/// that two merges of different functions sharing a target dir never write
/// over each other's workspace.
pub fn dir_of(target_dir: &Path, purpose: &str, sources: &[FunctionProject]) -> PathBuf {
    let mut key = String::new();
    for s in sources {
        let _ = write!(key, "{}\0{}\0", s.function, s.manifest.display());
    }
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    target_dir
        .join("fmerge")
        .join("workspace")
        .join(format!("{purpose}-{hash:016x}"))
}

/// Writes the build workspace for `sources` (the caller first) into `dir`.
pub fn generate(sources: &[FunctionProject], dir: &Path) -> Result<Generated> {
    let mut packages = Vec::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for source in sources {
        if let Some(other) = seen.insert(source.function.clone(), source.manifest.clone()) {
            bail!(
                "two functions are named {}: {} and {}. The name is what callers invoke, so it must be unique\n\
                 fix: rename one (its stack.yml key, or its package name)",
                source.function,
                other.display(),
                source.manifest.display()
            );
        }
        let (package, root) = package_of(source)?;
        packages.push((source, package, root));
    }
    // Cargo names a path package's outputs by its path relative to the
    // workspace root, and every generated workspace shares one build dir:
    // with this workspace's own name in that path, two of them (the same
    // functions from two copies of a project) never write the same files.
    let own = dir
        .file_name()
        .map_or_else(|| "fns".into(), |n| n.to_string_lossy().into_owned());
    let fns = dir.join("fns").join(&own);
    if fns.exists() {
        std::fs::remove_dir_all(&fns).with_context(|| format!("cannot clear {}", fns.display()))?;
    }
    let mut members = Vec::new();
    let mut handles = BTreeSet::new();
    for (source, package, root) in &packages {
        // A handler library takes the template's `handler`'s place, under a
        // package name of its own: every function made from the template
        // has a library named `handler`, and one build (one lock file) can
        // hold only one package of a name from paths.
        let library = match &source.handler_library {
            Some(manifest) => {
                let (library, library_root) =
                    package_of(&FunctionProject::own(&source.function, manifest.clone()))?;
                let name = format!("{}-{}", source.function, library.name);
                let folder = mirror(&library, &library_root, &fns.join(&name))?;
                std::fs::write(
                    folder.join("Cargo.toml"),
                    wrapper_manifest(&name, &library, None, &[])?,
                )?;
                members.push(quote(&folder.strip_prefix(dir)?.to_string_lossy()));
                Some((library.name.to_string(), folder, name))
            }
            None => None,
        };
        let replace = library
            .as_ref()
            .map(|(dep, folder, name)| (dep.as_str(), folder.as_path(), name.as_str()));
        // A handler library's `handle`, callable without its template's
        // server, where the template builds on what that needs (`handle`).
        let mut extra = Vec::new();
        if let (Some(replace), Some(taken)) =
            (replace, library.as_ref().and(handle::takes(package)))
        {
            let name = handle::package_name(&source.function);
            // Outside `fns`, which is written afresh: its files keep their
            // times while their contents do, so that cargo builds it once.
            let folder = dir.join("handles").join(&own).join(&name);
            let mut manifest = format!(
                "# Written by fmerge: {}'s `handle`, called without its server\n\
                 [package]\nname = {}\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
                 [dependencies]\n",
                source.function,
                quote(&name),
            );
            manifest.push_str(&package::dependency_line(
                package
                    .dependencies
                    .iter()
                    .find(|d| d.name == replace.0 && d.path.is_some())
                    .context("the template's `main` depends on its handler")?,
                Some(replace),
            ));
            manifest.push('\n');
            for d in taken {
                manifest.push_str(&package::dependency_line(d, None));
                manifest.push('\n');
            }
            std::fs::create_dir_all(folder.join("src"))
                .with_context(|| format!("cannot create {}", folder.display()))?;
            handle::write_if_changed(&folder.join("Cargo.toml"), &manifest)?;
            handle::write_if_changed(
                &folder.join("src/lib.rs"),
                &handle::source(&source.function),
            )?;
            members.push(quote(&folder.strip_prefix(dir)?.to_string_lossy()));
            extra.push(format!(
                "fmerge-handle = {{ package = {}, path = {} }}",
                quote(&name),
                quote(&folder.to_string_lossy())
            ));
            handles.insert(source.function.clone());
        }
        let folder = mirror(package, root, &fns.join(&source.function))?;
        std::fs::write(
            folder.join("Cargo.toml"),
            wrapper_manifest(&source.function, package, replace, &extra)?,
        )?;
        members.push(quote(&folder.strip_prefix(dir)?.to_string_lossy()));
    }
    let caller_root = &packages[0].2;
    let mut root = format!(
        "# Written by fmerge: one package per merged function, built from the function's own sources.\n\
         [workspace]\nresolver = \"3\"\nmembers = [{}]\n",
        members.join(", ")
    );
    std::fs::create_dir_all(dir)?;
    let manifest = dir.join("Cargo.toml");
    std::fs::write(&manifest, &root)?;
    if let Some(lock) = lock_in(caller_root) {
        std::fs::copy(&lock, dir.join("Cargo.lock"))
            .with_context(|| format!("cannot copy {}", lock.display()))?;
    } else {
        let _ = std::fs::remove_file(dir.join("Cargo.lock"));
    }
    let built = check_one_runtime(&manifest, sources)?;
    // The caller's release profile decides, as it would for its own build.
    if let Some(toml::Value::Table(profile)) =
        read_table(&caller_root.join("Cargo.toml"))?.get("profile")
    {
        let mut t = toml::Table::new();
        t.insert("profile".into(), profiles_for(profile, &built).into());
        root.push('\n');
        root.push_str(&toml::to_string(&t)?);
        std::fs::write(&manifest, root)?;
    }
    let callees: Vec<(&str, &Path)> = packages[1..]
        .iter()
        .map(|(s, _, root)| (s.function.as_str(), root.as_path()))
        .collect();
    let lock_differences = lock_differences(&dir.join("Cargo.lock"), &callees);
    Ok(Generated {
        manifest,
        lock_differences,
        handles,
    })
}

/// The `Cargo.lock` that a build workspace with `caller` first takes (its
/// project's, at its workspace root), if it has one.
pub fn lock_of(caller: &FunctionProject) -> Result<Option<PathBuf>> {
    Ok(lock_in(&package_of(caller)?.1))
}

/// Whether two builds take the same lock file: neither has one, or both
/// the same path, or files with the same bytes.
pub fn same_lock(a: Option<&Path>, b: Option<&Path>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a == b || matches!((std::fs::read(a), std::fs::read(b)), (Ok(x), Ok(y)) if x == y)
        }
        _ => false,
    }
}

fn lock_in(root: &Path) -> Option<PathBuf> {
    Some(root.join("Cargo.lock")).filter(|lock| lock.is_file())
}

/// The package at `source.manifest` (a workspace's root manifest names
/// its member of the function's name), and its workspace's root. Whether
/// it is a function, and of which form, `resolve` decides on the generated
/// workspace, before cargo builds.
fn package_of(source: &FunctionProject) -> Result<(Package, PathBuf)> {
    if !source.manifest.is_file() {
        bail!(
            "function {}: no Cargo.toml at {}\nfix: point at the function's cargo project (its `handler:` folder in stack.yml must hold its Cargo.toml)",
            source.function,
            source.manifest.display()
        );
    }
    let metadata = MetadataCommand::new()
        .manifest_path(&source.manifest)
        .no_deps()
        .exec()
        .with_context(|| {
            format!(
                "cannot read the cargo project of function {} at {}",
                source.function,
                source.manifest.display()
            )
        })?;
    let manifest = source.manifest.canonicalize()?;
    let packages: Vec<&Package> = metadata.packages.iter().collect();
    let found = packages
        .iter()
        .find(|p| p.manifest_path.as_std_path() == manifest)
        .or_else(|| packages.iter().find(|p| p.name.as_str() == source.function))
        .or_else(|| (packages.len() == 1).then(|| &packages[0]));
    let Some(package) = found else {
        bail!(
            "function {}: {} is a workspace without a package of that name (it has {})\nfix: point at the function's own Cargo.toml",
            source.function,
            source.manifest.display(),
            packages
                .iter()
                .map(|p| p.name.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    Ok((
        (*package).clone(),
        metadata.workspace_root.clone().into_std_path_buf(),
    ))
}

/// A function's own package, read before any build: what `fmerge build
/// -f` checks a stack entry against.
#[derive(Debug, Clone)]
pub struct OwnPackage {
    /// Its name in its project (`WriteHomeTimeline`), not the function's.
    pub name: String,
    /// Its binary targets' names, as its project builds them.
    pub bins: Vec<String>,
    /// It depends on fmerge's runtime (else `resolve` checks it as the
    /// watchdog-process form).
    pub on_runtime: bool,
    /// The crate it serves HTTP with itself, if any (`resolve::http_server`).
    pub http_server: Option<String>,
}

/// The package of `source` in its own project (`cargo metadata
/// --no-deps`: nothing is resolved or built).
pub fn own_package(source: &FunctionProject) -> Result<OwnPackage> {
    let (package, _) = package_of(source)?;
    Ok(OwnPackage {
        name: package.name.to_string(),
        bins: package
            .targets
            .iter()
            .filter(|t| t.kind.contains(&TargetKind::Bin))
            .map(|t| t.name.clone())
            .collect(),
        on_runtime: package
            .dependencies
            .iter()
            .any(|d| d.name == RUNTIME && d.kind == DependencyKind::Normal),
        http_server: crate::resolve::http_server(&package).map(str::to_string),
    })
}

fn read_table(path: &Path) -> Result<toml::Table> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.parse::<toml::Table>()
        .with_context(|| format!("{} is not valid TOML", path.display()))
}

/// The caller's `[profile]` tables without the per-package settings
/// (`[profile.<name>.package.<spec>]`) for crates that are not among `built`:
/// the caller's workspace may have crates this build has not (fmerge's own,
/// in this repository), and cargo would warn of each such setting.
fn profiles_for(profiles: &toml::Table, built: &BTreeSet<String>) -> toml::Table {
    let mut out = profiles.clone();
    for (_, profile) in out.iter_mut() {
        if let Some(toml::Value::Table(packages)) =
            profile.as_table_mut().and_then(|p| p.get_mut("package"))
        {
            packages.retain(|spec, _| {
                let name = spec.split(['@', ':']).next().unwrap_or(spec);
                spec == "*" || built.contains(name)
            });
        }
    }
    out
}

/// Two copies of the runtime in one binary would mean two dispatch tables.
/// Returns the names of the crates the build takes.
fn check_one_runtime(manifest: &Path, sources: &[FunctionProject]) -> Result<BTreeSet<String>> {
    let metadata = MetadataCommand::new().manifest_path(manifest).exec().with_context(|| {
        format!(
            "cargo cannot resolve the merged build of {} ({}): the functions' dependencies do not fit together\n\
             fix: make the functions' Cargo.toml requirements agree on the crate cargo's error names, or merge them separately",
            sources.iter().map(|s| s.function.as_str()).collect::<Vec<_>>().join(", "),
            manifest.display()
        )
    })?;
    let runtimes: BTreeSet<String> = metadata
        .packages
        .iter()
        .filter(|p| p.name.as_str() == RUNTIME)
        .map(|p| {
            format!(
                "{} {} ({})",
                p.name,
                p.version,
                p.source
                    .as_ref()
                    .map_or_else(|| p.manifest_path.to_string(), |s| s.repr.clone())
            )
        })
        .collect();
    if runtimes.len() > 1 {
        bail!(
            "the functions are built on different copies of {RUNTIME} ({}), and one merged binary has one runtime\n\
             fix: make every function depend on the same {RUNTIME} (one version from one source)",
            runtimes.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(metadata
        .packages
        .iter()
        .map(|p| p.name.to_string())
        .collect())
}

/// Crates that a callee's own lock file (in its workspace root) pins to
/// versions the merged build does not use (it uses the caller's lock where
/// it can).
fn lock_differences(merged_lock: &Path, callees: &[(&str, &Path)]) -> Vec<String> {
    let merged = lock_versions(merged_lock);
    let mut out = Vec::new();
    for (function, root) in callees {
        for (name, theirs) in lock_versions(&root.join("Cargo.lock")) {
            match merged.get(&name) {
                Some(ours) if ours.is_disjoint(&theirs) => out.push(format!(
                    "{function} was locked to {name} {} in its own Cargo.lock; the merged build uses {}",
                    theirs.iter().cloned().collect::<Vec<_>>().join(", "),
                    ours.iter().cloned().collect::<Vec<_>>().join(", ")
                )),
                _ => {}
            }
        }
    }
    out
}

/// Each crate of a lock file with the versions it holds (none when the file
/// cannot be read).
pub fn lock_versions(lock: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let Ok(table) = read_table(lock) else {
        return out;
    };
    for p in table
        .get("package")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
    {
        if let (Some(name), Some(version)) = (
            p.get("name").and_then(|v| v.as_str()),
            p.get("version").and_then(|v| v.as_str()),
        ) {
            out.entry(name.to_string())
                .or_default()
                .insert(version.to_string());
        }
    }
    out
}

/// The target dir of the project holding `manifest` (where a merge of its
/// function builds by default).
pub fn target_dir_of(manifest: &Path) -> Result<PathBuf> {
    let metadata = MetadataCommand::new()
        .manifest_path(manifest)
        .no_deps()
        .exec()
        .with_context(|| format!("cannot read the cargo project at {}", manifest.display()))?;
    Ok(metadata.target_directory.into_std_path_buf())
}

/// Finds each function by package name among the projects of `manifests`
/// (repeated `--manifest-path`).
pub fn locate(functions: &[String], manifests: &[PathBuf]) -> Result<Vec<FunctionProject>> {
    let mut found: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for manifest in manifests {
        let metadata = MetadataCommand::new()
            .manifest_path(manifest)
            .no_deps()
            .exec()
            .with_context(|| {
                format!(
                    "cannot read the cargo project at {}\nfix: check --manifest-path (it names a Cargo.toml)",
                    manifest.display()
                )
            })?;
        for p in metadata
            .packages
            .iter()
            .filter(|p| metadata.workspace_members.contains(&p.id))
        {
            found
                .entry(p.name.to_string())
                .or_default()
                .push(p.manifest_path.clone().into_std_path_buf());
        }
    }
    functions
        .iter()
        .map(|f| match found.get(f).map(Vec::as_slice) {
            Some([manifest]) => Ok(FunctionProject::own(f, manifest.clone())),
            Some(several) => bail!(
                "function {f} is a package in several of the given projects ({})\nfix: pass only one of them with --manifest-path",
                several.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
            None => bail!(
                "unknown function {f}: no package of that name in {}\nfix: check the spelling, or add its project with another --manifest-path",
                manifests.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests;
