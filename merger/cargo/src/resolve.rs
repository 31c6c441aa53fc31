//! Stage 1: find the functions in the cargo workspace and check that each is
//! a function built on the runtime, before anything is compiled.

use anyhow::{Context, Result, bail};
use cargo_metadata::{DependencyKind, Metadata, MetadataCommand, Package, PackageId, TargetKind};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// How to name another workspace, for [`unknown_function`].
pub const WORKSPACE: &str = ", or point at another workspace with --manifest-path (or -f)";

/// The runtime crate every function depends on.
pub const RUNTIME: &str = "fmerge-runtime";

/// One function to merge.
#[derive(Debug, Clone)]
pub struct Function {
    /// The package name, which is also the OpenFaaS function name.
    pub name: String,
    pub package_id: PackageId,
    /// Every package the function's binary links, itself included.
    pub closure: HashSet<PackageId>,
    /// The package's binary targets; the one that declares the function is
    /// picked after the build (`emit`).
    pub bins: Vec<String>,
    /// How the function serves its requests.
    pub form: Form,
    /// The crate it serves HTTP with itself ([`Form::Http`]).
    pub http_server: Option<String>,
}

/// The form a function is written in: how its binary serves requests, and
/// so how the merged binary runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// On fmerge's runtime (`function!`): a callee's handler runs in-process.
    Runtime,
    /// A plain `fn main()` that of-watchdog runs once per request, body on
    /// stdin, reply on stdout; it calls other functions with its own HTTP
    /// client. A callee runs from the merged binary (`fmerge-shim`).
    Process,
    /// Its own HTTP server (axum, actix-web, hyper's server…), which
    /// of-watchdog starts once in its `http` mode and proxies every request
    /// to; it calls other functions with its own HTTP client. A callee's
    /// server runs in the merged binary's process (`fmerge-shim`).
    Http,
}

impl Form {
    /// The form, for people.
    pub fn says(self) -> &'static str {
        match self {
            Form::Runtime => "on fmerge-runtime (`function!`)",
            Form::Process => {
                "a watchdog process (a `main` run once per request: stdin in, stdout out)"
            }
            Form::Http => "its own HTTP server (of-watchdog's `http` mode)",
        }
    }

    /// Whether the merged binary runs it through `fmerge-shim` (a plain
    /// `main` of the team's, not the runtime's dispatch).
    pub fn shimmed(self) -> bool {
        self != Form::Runtime
    }
}

/// Crates a function's binary serves HTTP with itself: such a function runs
/// behind of-watchdog's `http` mode ([`Form::Http`]).
pub const HTTP_SERVERS: &[&str] = &[
    "axum",
    "actix-web",
    "warp",
    "rocket",
    "poem",
    "tiny_http",
    "salvo",
];

/// hyper serves HTTP only with one of these features; without them it is a
/// client, which a watchdog process may well use for its calls.
const HYPER_SERVER_FEATURES: &[&str] = &["server", "full"];

/// The crate `package` serves HTTP with, if it depends on one.
pub fn http_server(package: &Package) -> Option<&str> {
    package
        .dependencies
        .iter()
        .find(|d| d.kind == DependencyKind::Normal && serves_http(d))
        .map(|d| d.name.as_str())
}

/// Whether `dep` is a crate to serve HTTP with.
fn serves_http(dep: &cargo_metadata::Dependency) -> bool {
    HTTP_SERVERS.contains(&dep.name.as_str())
        || (dep.name == "hyper"
            && dep
                .features
                .iter()
                .any(|f| HYPER_SERVER_FEATURES.contains(&f.as_str())))
}

/// The functions resolved (the caller first, then the callees) and the
/// workspace they are in: what the merge works on. (A merge *plan* is
/// `fmerge plan`'s groups.)
#[derive(Debug)]
pub struct Members {
    pub caller: Function,
    pub callees: Vec<Function>,
    pub manifest_path: PathBuf,
    pub workspace_root: PathBuf,
    pub target_dir: PathBuf,
    /// Packages built from a path (the user's own crates), by id, with their
    /// names; registry and git crates are not in it.
    pub local: HashMap<PackageId, String>,
    /// The folder of each of those packages (its Cargo.toml's), by id.
    pub local_dirs: HashMap<PackageId, PathBuf>,
    /// The local packages that no registry or git package links, directly
    /// or through another local package (see
    /// `only_local_callers`): only the user's own code calls into them.
    pub local_on_top: HashSet<PackageId>,
}

/// A group's functions by name: `caller` first, then `callees`, the order
/// of every list of a group's members.
pub fn members<'a>(
    caller: &'a str,
    callees: &'a [String],
) -> impl Iterator<Item = &'a str> + Clone {
    std::iter::once(caller).chain(callees.iter().map(String::as_str))
}

impl Members {
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        std::iter::once(&self.caller).chain(&self.callees)
    }

    pub fn callee_names(&self) -> Vec<String> {
        self.callees.iter().map(|f| f.name.clone()).collect()
    }

    /// The user's own crates that only callees link (never the caller): the
    /// code that endpoint and settings rewrites may change.
    pub fn callee_owned_local(&self) -> BTreeSet<String> {
        self.local
            .iter()
            .filter(|(id, _)| {
                !self.caller.closure.contains(*id)
                    && self.callees.iter().any(|c| c.closure.contains(*id))
            })
            .map(|(_, name)| name.clone())
            .collect()
    }
}

/// Reads the workspace at `manifest_path` (or the one around the current
/// directory) and checks the requested functions.
pub fn run(manifest_path: Option<&Path>, caller: &str, callees: &[String]) -> Result<Members> {
    if callees.is_empty() {
        bail!(
            "nothing to merge into {caller}: no callee is named\nfix: name at least one callee, as in `fmerge build {caller} <CALLEE>...`"
        );
    }
    let mut seen = HashSet::new();
    for name in members(caller, callees) {
        if !seen.insert(name) {
            bail!("function {name} is listed twice\nfix: list each function once");
        }
    }
    let metadata = workspace_metadata(manifest_path)?;
    let caller = function(&metadata, caller)?;
    let callees = callees
        .iter()
        .map(|c| function(&metadata, c))
        .collect::<Result<Vec<_>>>()?;
    let local: HashMap<PackageId, String> = metadata
        .packages
        .iter()
        .filter(|p| p.source.is_none())
        .map(|p| (p.id.clone(), p.name.to_string()))
        .collect();
    let local_on_top = only_local_callers(links(&metadata), &local);
    let local_dirs = metadata
        .packages
        .iter()
        .filter(|p| p.source.is_none())
        .filter_map(|p| Some((p.id.clone(), p.manifest_path.parent()?.into())))
        .collect();
    let members = Members {
        caller,
        callees,
        manifest_path: metadata.workspace_root.join("Cargo.toml").into(),
        workspace_root: metadata.workspace_root.clone().into(),
        target_dir: metadata.target_directory.clone().into(),
        local,
        local_dirs,
        local_on_top,
    };
    check_bin_names(members.functions())?;
    check_one_form(members.functions())?;
    Ok(members)
}

/// The merged binary runs its members one way: on the runtime's dispatch
/// table, or from the process-form members' mains; not both at once.
fn check_one_form<'a>(mut functions: impl Iterator<Item = &'a Function>) -> Result<()> {
    let Some(caller) = functions.next() else {
        return Ok(());
    };
    if let Some(other) = functions.find(|f| f.form != caller.form) {
        bail!(
            "{} is {} and {} is {}: fmerge merges a group of one form\n\
             fix: merge {} with callees of its own form, and call the others over the gateway as before",
            caller.name,
            caller.form.says(),
            other.name,
            other.form.says(),
            caller.name
        );
    }
    Ok(())
}

/// The packages of `local` that only each other link: a `[patch]` may
/// make a registry crate's dependency a path package, and then the registry
/// crate's code calls into it, and into what that package links in turn.
/// `links`: each package and a package it links (a normal dependency).
fn only_local_callers<'a>(
    links: impl IntoIterator<Item = (&'a PackageId, &'a PackageId)>,
    local: &HashMap<PackageId, String>,
) -> HashSet<PackageId> {
    let links: Vec<_> = links.into_iter().collect();
    let mut on_top: HashSet<PackageId> = local.keys().cloned().collect();
    // Until nothing changes: a package out of the set takes out what it links.
    while let Some(to) = links
        .iter()
        .find(|(from, to)| !on_top.contains(*from) && on_top.contains(*to))
        .map(|(_, to)| (*to).clone())
    {
        on_top.remove(&to);
    }
    on_top
}

/// Each package and a package it links (a normal dependency), from cargo's resolve.
fn links(metadata: &Metadata) -> impl Iterator<Item = (&PackageId, &PackageId)> {
    let nodes = metadata.resolve.iter().flat_map(|r| &r.nodes);
    nodes.flat_map(|n| {
        n.deps
            .iter()
            .filter(|d| d.dep_kinds.iter().any(|k| k.kind == DependencyKind::Normal))
            .map(move |d| (&n.id, &d.pkg))
    })
}

/// Cargo writes every binary to `target/<triple>/release/<bin name>`; two
/// merged functions with a binary of the same name overwrite each other
/// there, and which one fmerge would read depends on build order.
fn check_bin_names<'a>(functions: impl Iterator<Item = &'a Function>) -> Result<()> {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for f in functions {
        for bin in &f.bins {
            if let Some(other) = seen.insert(bin, &f.name) {
                bail!(
                    "functions {other} and {} both have a binary target named `{bin}`: cargo writes both to the same file, \
                     so the build could not tell them apart\n\
                     fix: give one of them its own name, e.g. in {}'s Cargo.toml: [[bin]] name = \"{}\" path = \"src/main.rs\"",
                    f.name,
                    f.name,
                    f.name
                );
            }
        }
    }
    Ok(())
}

fn function(metadata: &Metadata, name: &str) -> Result<Function> {
    let members: Vec<&Package> = metadata.workspace_packages();
    let Some(package) = members.iter().find(|p| p.name.as_str() == name) else {
        // What fmerge would take: functions on the runtime, and packages it
        // takes as watchdog processes.
        let known: Vec<String> = members
            .iter()
            .filter(|p| is_function(p) || takes_as_process(p))
            .map(|p| p.name.to_string())
            .collect();
        bail!(
            "{}",
            unknown_function(name, &known, metadata.workspace_root.as_str(), WORKSPACE)
        );
    };
    let on_runtime = package
        .dependencies
        .iter()
        .any(|d| d.name == RUNTIME && d.kind == DependencyKind::Normal);
    let bin_count = package
        .targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::Bin))
        .count();
    if bin_count == 0 {
        bail!(
            "{name} has no binary target, so it is a library, not a function\n\
             fix: name the function's own package (the one whose binary of-watchdog runs as `fprocess`), \
             or give it a binary target (src/main.rs)"
        );
    }
    let form = match on_runtime {
        true => Form::Runtime,
        false => process_form(package)?,
    };
    let bins = package
        .targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::Bin))
        .map(|t| t.name.clone())
        .collect();
    Ok(Function {
        name: name.to_string(),
        package_id: package.id.clone(),
        closure: closure(metadata, &package.id, &[DependencyKind::Normal]),
        bins,
        form,
        http_server: http_server(package).map(str::to_string),
    })
}

/// Whether fmerge takes `p`, not on the runtime, as a watchdog-process
/// function: one binary, and no HTTP server of its own.
fn takes_as_process(p: &Package) -> bool {
    let on_runtime = p.dependencies.iter().any(|d| d.name == RUNTIME);
    let bins = p
        .targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::Bin))
        .count();
    !on_runtime && bins == 1 && process_form(p).is_ok()
}

/// A function not on the runtime: its own HTTP server if it depends on a
/// crate to serve HTTP with, else a watchdog process; a package whose
/// several binaries leave fmerge unable to tell which one is `fprocess` is
/// refused.
fn process_form(package: &Package) -> Result<Form> {
    let name = &package.name;
    let bins: Vec<&str> = package
        .targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::Bin))
        .map(|t| t.name.as_str())
        .collect();
    if bins.len() > 1 {
        bail!(
            "{name} has several binaries ({}), and a function written as a plain `main` does not say which one of-watchdog runs\n\
             fix: merge a package with one binary, the function's `fprocess`",
            bins.join(", ")
        );
    }
    Ok(match http_server(package) {
        Some(_) => Form::Http,
        None => Form::Process,
    })
}

/// A function: a package on the runtime with a binary whose source
/// declares its handler with the runtime's `function!` (so a benchmark's
/// binaries on the runtime, such as bench/fused's, are not offered as one).
pub fn is_function(p: &Package) -> bool {
    p.dependencies.iter().any(|d| d.name == RUNTIME)
        && p.targets.iter().any(|t| {
            t.kind.contains(&TargetKind::Bin)
                && std::fs::read_to_string(&t.src_path).is_ok_and(|s| s.contains("function!("))
        })
}

/// The refusal of an unknown function of `place`: the one meant when a
/// known name is near, else the functions there are and `elsewhere`, how
/// to name another place (or nothing).
pub fn unknown_function(name: &str, known: &[String], place: &str, elsewhere: &str) -> String {
    match crate::suggest::closest(name, known.iter().map(String::as_str)) {
        Some(meant) => format!(
            "unknown function {name} in {place}; did you mean `{meant}`?\nfix: write `{meant}`"
        ),
        None => format!(
            "unknown function {name} in {place}, which has {}\n\
             fix: check the spelling{elsewhere}",
            if known.is_empty() {
                "no functions".to_string()
            } else {
                format!("the functions {}", known.join(", "))
            }
        ),
    }
}

/// `root` and the packages it depends on through dependencies of `kinds`,
/// transitively (a function links its `Normal` ones).
pub fn closure(
    metadata: &Metadata,
    root: &PackageId,
    kinds: &[DependencyKind],
) -> HashSet<PackageId> {
    let Some(resolve) = &metadata.resolve else {
        return HashSet::from([root.clone()]);
    };
    let nodes: HashMap<&PackageId, _> = resolve.nodes.iter().map(|n| (&n.id, n)).collect();
    let mut seen = HashSet::from([root.clone()]);
    let mut todo = vec![root.clone()];
    while let Some(id) = todo.pop() {
        let Some(node) = nodes.get(&id) else { continue };
        for dep in &node.deps {
            let followed = dep.dep_kinds.iter().any(|k| kinds.contains(&k.kind));
            if followed && seen.insert(dep.pkg.clone()) {
                todo.push(dep.pkg.clone());
            }
        }
    }
    seen
}

/// Where a function's code is: its package folder, and those of the path
/// packages (the user's own crates) it links.
pub struct Code {
    pub name: String,
    pub form: Form,
    pub own: PathBuf,
    /// By name.
    pub deps: Vec<PathPackage>,
}

/// A path package (one of the user's own crates): its name and its folder.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PathPackage {
    pub name: String,
    pub dir: PathBuf,
}

/// The code of each of `names`, from one `cargo metadata` of the workspace
/// at `manifest_path` (nothing is built); an unknown name is refused as
/// [`run`] refuses it.
pub fn code(manifest_path: Option<&Path>, names: &[String]) -> Result<Vec<Code>> {
    let metadata = workspace_metadata(manifest_path)?;
    code_in(&metadata, names)
}

/// The code of the function `name` whose own package is the one at
/// `manifest` (a stack's handler), whatever that package is called: a
/// stack names a function by its key (`write-home-timeline`), a team its
/// package as it likes (`WriteHomeTimeline`).
pub fn code_of_package(manifest: &Path, name: &str) -> Result<Code> {
    let metadata = workspace_metadata(Some(manifest))?;
    let package = handler_package(&metadata, manifest)?;
    let mut code = code_in(&metadata, &[package.name.to_string()])?.remove(0);
    code.name = name.to_string();
    Ok(code)
}

/// The package whose manifest is `manifest`, a stack's handler, read into
/// `metadata`; refused when `manifest` is a workspace's alone.
fn handler_package<'a>(metadata: &'a Metadata, manifest: &Path) -> Result<&'a Package> {
    metadata.root_package().with_context(|| {
        format!(
            "{} is no package's manifest\nfix: point the handler at the folder of the function's own Cargo.toml",
            manifest.display()
        )
    })
}

/// `code`, a template's `main`, with the handler library at `library` in
/// place of the template's own (`workspace::entry_project`): that library
/// and the path packages it links are the function's code.
pub fn with_handler_library(mut code: Code, library: &Path) -> Result<Code> {
    let metadata = workspace_metadata(Some(library))?;
    let package = handler_package(&metadata, library)?;
    code.deps.retain(|d| d.name != package.name.as_str());
    let local = local_packages(&metadata);
    for id in closure(&metadata, &package.id, &[DependencyKind::Normal]) {
        if let Some(p) = local.get(&id)
            && let Some(dir) = p.manifest_path.parent()
        {
            code.deps.push(PathPackage {
                name: p.name.to_string(),
                dir: dir.into(),
            });
        }
    }
    code.deps.sort();
    code.deps.dedup();
    Ok(code)
}

/// The packages of `metadata` that are no registry's or git's (path
/// packages: the workspace's and those it reaches by path), by id.
fn local_packages(metadata: &Metadata) -> HashMap<&PackageId, &Package> {
    metadata
        .packages
        .iter()
        .filter(|p| p.source.is_none())
        .map(|p| (&p.id, p))
        .collect()
}

fn code_in(metadata: &Metadata, names: &[String]) -> Result<Vec<Code>> {
    let local = local_packages(metadata);
    let dir = |p: &Package| p.manifest_path.parent().map(PathBuf::from);
    let mut out = Vec::new();
    for name in names {
        // Refused as `run` refuses it: unknown, or not a function.
        let function = function(metadata, name)?;
        let package = local
            .get(&function.package_id)
            .context("a function is a path package")?;
        let mut deps: Vec<PathPackage> = function
            .closure
            .iter()
            .filter(|id| **id != package.id)
            .filter_map(|id| local.get(id))
            .filter_map(|p| {
                Some(PathPackage {
                    name: p.name.to_string(),
                    dir: dir(p)?,
                })
            })
            .collect();
        deps.sort();
        out.push(Code {
            name: name.clone(),
            form: function.form,
            own: dir(package).context("a package folder")?,
            deps,
        });
    }
    Ok(out)
}

/// Which of `functions` link the package `id`.
pub fn owners<'a>(
    functions: impl Iterator<Item = &'a Function>,
    id: &PackageId,
) -> BTreeSet<String> {
    functions
        .filter(|f| f.closure.contains(id))
        .map(|f| f.name.clone())
        .collect()
}

/// `cargo metadata` of the workspace at `manifest_path` (or the one here).
fn workspace_metadata(manifest_path: Option<&Path>) -> Result<Metadata> {
    let mut cmd = MetadataCommand::new();
    if let Some(path) = manifest_path {
        cmd.manifest_path(path);
    }
    cmd.exec().context(
        "cannot read the cargo workspace\nfix: run fmerge inside a workspace of functions, or point at one with --manifest-path",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_packages_that_a_registry_crate_links_are_not_on_top() {
        let id = |name: &str| PackageId {
            repr: name.to_string(),
        };
        let local: HashMap<PackageId, String> = ["front", "runtime", "patched", "helper"]
            .map(|name| (id(name), name.to_string()))
            .into();
        // `patched` is a registry crate's dependency made a path package by
        // a `[patch]`: hyper's code calls it, and through it `helper`'s.
        let links = [
            ("patched", "helper"),
            ("front", "runtime"),
            ("front", "serde"),
            ("front", "patched"),
            ("runtime", "hyper"),
            ("hyper", "patched"),
        ]
        .map(|(from, to)| (id(from), id(to)));
        let on_top = only_local_callers(links.iter().map(|(from, to)| (from, to)), &local);
        assert_eq!(on_top, HashSet::from([id("front"), id("runtime")]));
    }
}
