//! `fmerge graph`: the application's static call graph, read from the
//! functions' own code, so that merge groups can be chosen from facts
//! instead of by hand (`fmerge plan` reads it).
//!
//! One cargo build of every function in the stack (the user's crates at
//! opt-level 0, so every `invoke` call is still a call; see
//! [`fmerge_ir::calls`]), then each crate's bitcode is surveyed: an edge per
//! callee named by a literal, an "unknown" edge for a name computed at run
//! time, and the reasons `fmerge build` would refuse a function (in any
//! group, or beside another one: `verdict.rs`, the build's own rules on the
//! build's own bitcode). The order of each function's calls (what runs at
//! once, what one after another) is read from its source ([`rounds`]), or,
//! where it cannot be, from the runtime's call log ([`call_log`]). Edges get
//! weights from real traffic when a metrics scrape or a gateway access log
//! is given ([`traffic`]).

pub mod access_log;
pub mod call_log;
pub mod client_calls;
mod functions;
pub mod render;
pub mod rounds;
mod select;
pub(crate) mod tokens;
pub mod traffic;
mod verdict;
mod weigh;

use crate::bitcode;
use crate::progress::Progress;
use anyhow::{Result, bail};
use fmerge_cargo::emit;
use fmerge_cargo::{artifact, native, resolve, workspace};
use fmerge_ir::calls;
use fmerge_ir::passes::Crate;
use fmerge_ship::stack_in::StackIn;
pub use functions::{StackFunctions, functions_of};
pub use rounds::Round;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The call graph of a stack's functions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Graph {
    /// The stack file it was read from.
    pub stack: Option<PathBuf>,
    pub functions: Vec<Function>,
    pub edges: Vec<Edge>,
    /// Pairs of functions `fmerge build` refuses to merge into one binary.
    pub conflicts: Vec<Conflict>,
    /// The statics (or crates) the conflicts let functions share, as
    /// `--allow-shared-static` gave them; the plan's groups carry them to
    /// `fmerge build`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_shared_static: Vec<String>,
    /// Where the traffic figures come from (`prometheus FILE`, `nginx FILE`).
    pub traffic: Option<String>,
    /// The `Cargo.lock` its build took (the first function's project's);
    /// `fmerge plan` dry-runs the build on a group whose caller's differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<PathBuf>,
    /// Which part of the stack it covers, when not all of it (`--filter`,
    /// `--regex`): the functions left out may call any of these, so a plan
    /// of it drops no deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// Calls per invocation per call path, from a call log whose records
    /// name their parent request ([`call_log::paths`]); empty without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<call_log::paths::PathRate>,
    /// The call log they come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths_source: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Function {
    pub name: String,
    /// `limits.memory` in stack.yml, as written, and in bytes.
    pub memory: Option<String>,
    pub memory_bytes: Option<f64>,
    /// `limits.cpu`, in cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// `requests.memory` in bytes and `requests.cpu` in cores: what the
    /// scheduler reserves for the function's pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_memory_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_cpu: Option<f64>,
    /// Why no group may hold it (as `fmerge build` would say it).
    pub left_out: Option<String>,
    /// Requests it gets from outside the application, when traffic is known.
    pub external: Option<f64>,
    /// Its calls in rounds: a round's calls run at once, the next round
    /// after they end ([`rounds`]). A callee of its edges missing here
    /// ([`Graph::unplaced`]) is taken as called one call after another.
    #[serde(default)]
    pub rounds: Vec<Round>,
    /// The requests of a call log its rounds come from ([`call_log`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced: Option<usize>,
    /// Declared an entry point in the stack file
    /// ([`fmerge_ship::stack_in::ENTRY_LABEL`]): its deployment stays
    /// whatever the plan merges.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub entry: bool,
    /// The topic an OpenFaaS connector invokes it on (the stack's
    /// `topic` annotation: cron-connector, kafka-connector, …), if any: a
    /// client from outside whenever it fires, whether or not it fired in
    /// the traffic's window, so its deployment stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Measured usage of one pod of its own deployment, from the scrape
    /// (`process_resident_memory_bytes`, bytes; `process_cpu_seconds_total`'s
    /// rate, cores): what a merged pod's requests are made of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_memory_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cpu: Option<f64>,
    /// Whether the traffic names the caller of every request it got over
    /// the window (a scrape that covers it and counts none of its callers
    /// as `other`; an access log names no caller, so only a function that
    /// got no request there): without it, the plan never drops its
    /// deployment.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watched: bool,
    /// Its pods in the later scrape (its replicas), and how many scrapes
    /// its memory comes from (1: one instant, not the window's peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_pods: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_scrapes: Option<usize>,
    /// A function of-watchdog serves (a `main` it starts per request, or
    /// the function's own HTTP server it proxies to): the process its pod's
    /// metrics describe is of-watchdog's, not the function's, so its usage
    /// sizes nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watchdog: bool,
    /// Its measured time per request, ms: serving (its handler's time,
    /// the runtime's `fmerge_handler_duration_seconds`, where
    /// [`handler_timed`](Self::handler_timed); else its
    /// `http_request_duration_seconds`; its calls included) and cpu (its
    /// pods' `process_cpu_seconds_total` between two scrapes over the
    /// requests between them). The plan puts its own time on every
    /// critical path through it, and its cpu on its caller's task when
    /// merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_ms: Option<f64>,
    /// Whether `serve_ms` is its handler's time alone: then its pods' cpu,
    /// which serving over HTTP and calling over it add to, bounds nothing
    /// of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub handler_timed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<f64>,
}

/// `from` invokes `to`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Edge {
    pub from: String,
    /// The callee's name; `None` when the name is not a literal (unknown).
    pub to: Option<String>,
    /// How many `invoke` calls in `from`'s code name it: 0 for calls only
    /// the traffic shows (through a name computed at run time).
    pub sites: usize,
    /// The Rust functions the calls sit in.
    pub within: Vec<String>,
    /// Calls seen in real traffic, when known.
    pub calls: Option<f64>,
    /// What one call over the gateway cost beyond the callee's own work, in
    /// ms: the mean of the caller's `fmerge_invoke_duration_seconds` less the
    /// mean of the callee's `http_request_duration_seconds` for that caller,
    /// when both were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Conflict {
    pub a: String,
    pub b: String,
    pub reason: String,
}

impl Graph {
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The edge `from` → `to`, if there is one.
    pub fn edge(&self, from: &str, to: &str) -> Option<&Edge> {
        self.edges
            .iter()
            .find(|e| e.from == from && e.to.as_deref() == Some(to))
    }

    /// Known callees of `from`.
    pub fn callees(&self, from: &str) -> Vec<&str> {
        self.edges
            .iter()
            .filter(|e| e.from == from)
            .filter_map(|e| e.to.as_deref())
            .collect()
    }

    /// Known callees of `from` whose calls its rounds do not place: their
    /// order is not read from the code.
    pub fn unplaced(&self, from: &str) -> Vec<&str> {
        let rounds = self.function(from).map_or(&[][..], |f| &f.rounds[..]);
        self.callees(from)
            .into_iter()
            .filter(|to| {
                !rounds
                    .iter()
                    .any(|r| r.calls.iter().chain(&r.looped).any(|c| c == to))
            })
            .collect()
    }

    /// Reads a graph written by `fmerge graph --format json`.
    pub fn load(path: &Path) -> Result<Graph> {
        artifact::read_parsed(
            path,
            |text| serde_json::from_str(text),
            || format!("cannot read the graph {}", path.display()),
            || {
                format!(
                    "{} is not a graph written by `fmerge graph --format json`",
                    path.display()
                )
            },
        )
    }
}

/// Reads the call graph of the functions in `stack` that `select` selects
/// (all, without --filter or --regex); the conflicts let
/// functions share what `allow_shared_static` names, as `fmerge build
/// --allow-shared-static` does.
pub fn read(
    stack: &Path,
    target_dir: Option<&Path>,
    jobs: Option<usize>,
    quiet: bool,
    allow_shared_static: &[String],
    select: &crate::options::stack::Select,
) -> Result<Graph> {
    let stack_in = StackIn::load(stack)?;
    let names = select.apply(stack_in.names())?;
    let partial = partial(select, names.len(), stack_in.names().len());
    let StackFunctions {
        mut functions,
        sources,
    } = functions_of(&stack_in, names)?;
    if sources.len() < 2 {
        bail!(
            "{}: a call graph needs two or more Rust functions, and it has {}\nfix: pass a stack file that lists two or more of them",
            stack.display(),
            sources.len()
        );
    }
    let names: Vec<String> = sources.iter().map(|s| s.function.clone()).collect();
    let input = bitcode::Input {
        caller: &names[0],
        callees: &names[1..],
        sources: &sources,
        manifest_path: None,
        target_dir,
        jobs,
        purpose: "graph",
    };
    // Every crate of the user's at opt-level 0: there `invoke` is a call
    // with its name as arguments (the runtime itself is left optimized).
    let progress = Progress::new(quiet);
    let built = bitcode::build(&input, &progress, |members| {
        Ok(emit::Profile {
            unoptimized: members
                .local
                .values()
                .filter(|p| users(p))
                .cloned()
                .collect(),
        })
    })?;
    let (members, emitted) = (built.members, built.emitted);
    let bytes = emit::read_bitcode(&emitted.units)?;
    let owners: Vec<BTreeSet<String>> = emitted
        .units
        .iter()
        .map(|u| resolve::owners(members.functions(), &u.package_id))
        .collect();
    let packages: Vec<Option<&String>> = emitted
        .units
        .iter()
        .map(|u| members.local.get(&u.package_id))
        .collect();
    let units: Vec<calls::Unit> = emitted
        .units
        .iter()
        .enumerate()
        .map(|(i, u)| calls::Unit {
            bytes: &bytes[i],
            path: &u.bitcode,
            krate: Crate {
                name: &u.crate_name,
                package: packages[i].map_or(u.crate_name.as_str(), String::as_str),
                function: u.function.as_deref(),
                owners: &owners[i],
                local: packages[i].is_some_and(|p| p != resolve::RUNTIME),
            },
        })
        .collect();
    let mut surveys = calls::survey(&units, allow_shared_static)?;
    let recheck = verdict::to_recheck(&units, &surveys);
    if !recheck.is_empty() {
        verdict::on_release(
            &input,
            &recheck,
            &units,
            &emitted.units,
            &mut surveys,
            allow_shared_static,
            &progress,
        )?;
    }

    // Edges: a function's bin speaks for itself; a crate of the user's that
    // several functions link speaks for each of them.
    let mut edges: BTreeMap<(String, Option<String>), Edge> = BTreeMap::new();
    for (unit, survey) in units.iter().zip(&surveys) {
        if !unit.krate.local {
            continue;
        }
        let callers: Vec<&String> = match unit.krate.function {
            Some(f) => names.iter().filter(|n| *n == f).collect(),
            None => unit.krate.owners.iter().collect(),
        };
        for site in &survey.sites {
            let to = site.callee.as_deref().map(|c| function_of(c).to_string());
            for caller in &callers {
                let edge = edges
                    .entry(((*caller).clone(), to.clone()))
                    .or_insert_with(|| Edge {
                        from: (*caller).clone(),
                        to: to.clone(),
                        ..Edge::default()
                    });
                edge.sites += 1;
                if !edge.within.contains(&site.within) {
                    edge.within.push(site.within.clone());
                }
            }
        }
    }

    // A watchdog-process function's calls, and an own server's, go through
    // its own HTTP client.
    for f in members.functions().filter(|f| f.form.shimmed()) {
        let own = sources
            .iter()
            .find(|s| s.function == f.name)
            .and_then(|s| s.manifest.parent())
            .map(Path::to_path_buf);
        let Some(own) = own else { continue };
        for site in client_calls::read(&own, &user_deps(f, &members))? {
            let to = site.callee.as_deref().map(|c| function_of(c).to_string());
            let edge = edges
                .entry((f.name.clone(), to.clone()))
                .or_insert_with(|| Edge {
                    from: f.name.clone(),
                    to,
                    ..Edge::default()
                });
            edge.sites += 1;
            if !edge.within.contains(&site.within) {
                edge.within.push(site.within);
            }
        }
    }

    let edges: Vec<Edge> = edges.into_values().collect();
    let mut unread = BTreeSet::new();
    for f in members.functions() {
        let own = sources
            .iter()
            .find(|s| s.function == f.name)
            .and_then(|s| s.manifest.parent());
        let rounds = match f.form {
            resolve::Form::Process | resolve::Form::Http => Ok(one_after_another(&f.name, &edges)),
            resolve::Form::Runtime => rounds_of(f, own, &members, &edges),
        };
        let rounds = rounds.unwrap_or_else(|e| {
            progress.note(&format!(
                "note: the order of {}'s calls is not read from its code ({e:#}): each is taken as made one after another",
                f.name
            ));
            unread.insert(f.name.clone());
            Vec::new()
        });
        if let Some(function) = functions.iter_mut().find(|g| g.name == f.name) {
            function.rounds = rounds;
            // Off the runtime, of-watchdog serves the pod's metrics port,
            // in its process modes and in its `http` mode alike.
            function.watchdog = f.form != resolve::Form::Runtime;
        }
    }

    // Refusals of one function, in any group. A function on its own `main`
    // has no handler entry, and needs none.
    let process: BTreeSet<&str> = members
        .functions()
        .filter(|f| f.form.shimmed())
        .map(|f| f.name.as_str())
        .collect();
    for (unit, survey) in units.iter().zip(&surveys) {
        if unit.krate.function.is_some_and(|f| process.contains(f)) {
            continue;
        }
        for reason in survey.entry.iter() {
            for owner in unit.krate.owners {
                let f = functions
                    .iter_mut()
                    .find(|f| &f.name == owner)
                    .expect("a stack function");
                f.left_out.get_or_insert_with(|| reason.clone());
            }
        }
    }
    let conflicts = verdict::conflicts(
        &units,
        &surveys,
        &native::undefined_in_static_libs(&emitted.native),
    );
    let graph = Graph {
        stack: Some(stack_in.path.clone()),
        functions,
        edges,
        conflicts,
        allow_shared_static: allow_shared_static.to_vec(),
        traffic: None,
        lock: workspace::lock_of(&sources[0])?,
        partial,
        paths: Vec::new(),
        paths_source: None,
    };
    for f in &graph.functions {
        let unplaced = graph.unplaced(&f.name);
        if !unplaced.is_empty() && !unread.contains(&f.name) {
            progress.note(&format!(
                "note: {} calls {} where its code does not show when (a name not a literal, or code outside its crate): taken as one call after another, unless --call-log shows their order",
                f.name,
                unplaced.join(", ")
            ));
        }
    }
    Ok(graph)
}

/// Which part of the stack a selection of `selected` of its `all`
/// functions covers, when not all of it.
pub fn partial(
    select: &crate::options::stack::Select,
    selected: usize,
    all: usize,
) -> Option<String> {
    let how = match (&select.filter, &select.regex) {
        (Some(f), _) => format!("--filter {f:?}"),
        (None, Some(r)) => format!("--regex {r:?}"),
        (None, None) => "the selection".to_string(),
    };
    (selected < all).then(|| format!("{how} selects {selected} of the stack's {all} functions"))
}

/// The rounds of a watchdog-process function: its HTTP client waits for
/// each reply, so each call is a round of its own.
fn one_after_another(from: &str, edges: &[Edge]) -> Vec<Round> {
    edges
        .iter()
        .filter(|e| e.from == from)
        .filter_map(|e| Some((e.to.clone()?, e.sites)))
        .flat_map(|(to, sites)| std::iter::repeat_n(to, sites))
        .map(|to| Round {
            calls: vec![to],
            looped: Vec::new(),
        })
        .collect()
}

/// The folders of the user's own crates `f` links, its own aside.
pub(crate) fn user_deps(f: &resolve::Function, members: &resolve::Members) -> Vec<PathBuf> {
    let mut deps: Vec<PathBuf> = f
        .closure
        .iter()
        .filter(|id| **id != f.package_id && members.local.get(*id).is_some_and(|p| users(p)))
        .filter_map(|id| members.local_dirs.get(id).cloned())
        .collect();
    deps.sort();
    deps
}

/// The function a callee name names: OpenFaaS's `name.namespace` names `name`.
pub fn function_of(callee: &str) -> &str {
    callee.split_once('.').map_or(callee, |(n, _)| n)
}

/// The user's own crates, less the runtime's.
pub(crate) fn users(package: &str) -> bool {
    package != resolve::RUNTIME && package != "fmerge-contract"
}

/// `f`'s rounds, read from its crate with the macros of the user's crates
/// it links, placing only what the bitcode counts (`edges`). `own` is the
/// function's own folder: not its mirror in the generated workspace, which
/// another fmerge run on the same functions may be writing afresh once
/// cargo is done.
fn rounds_of(
    f: &resolve::Function,
    own: Option<&Path>,
    members: &resolve::Members,
    edges: &[Edge],
) -> Result<Vec<Round>> {
    let Some(own) = own else {
        bail!("its package has no folder of its own");
    };
    let deps = user_deps(f, members);
    let sites: BTreeMap<&str, usize> = edges
        .iter()
        .filter(|e| e.from == f.name)
        .filter_map(|e| Some((e.to.as_deref()?, e.sites)))
        .collect();
    Ok(rounds::reconcile(rounds::read(own, &deps)?, &sites))
}
