//! The rewrites of the IR, one file each; each file's doc comment says why
//! the pass exists. They run in two phases:
//!
//! 1. [`per_crate`], on each crate's module before linking, while fmerge
//!    still knows which merged functions link that crate (a clash, a shared
//!    static or a literal can be pinned on a crate, and only callee-owned
//!    code is rewritten). Each such pass is `run(&Module, &Crate, &Facts)`.
//! 2. [`on_module`], on the linked module. Each such pass is
//!    `run(&Module, …)`.
//!
//! Passes return what they found; [`Found`] adds it up across crates.

pub mod config;
pub mod dispatch;
pub mod endpoints;
pub mod env;
pub mod statics;
pub mod symbols;

use anyhow::Result;
use inkwell::module::Module;
use std::collections::{BTreeMap, BTreeSet};

/// What every pass may know about the whole merge.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub caller: String,
    pub callees: Vec<String>,
    pub rewrites: Vec<endpoints::Rewrite>,
    /// Statics (`crate::path::NAME`) or crates that merged functions may share.
    pub allow_shared_static: Vec<String>,
    /// Symbols that native code (build scripts' static libraries) calls by
    /// name, each with the library.
    pub native_refs: BTreeMap<String, String>,
}

impl Facts {
    /// The caller, then the callees.
    pub fn members(&self) -> Vec<String> {
        std::iter::once(&self.caller)
            .chain(&self.callees)
            .cloned()
            .collect()
    }
}

/// The crate a per-crate pass runs on.
#[derive(Debug, Clone)]
pub struct Crate<'a> {
    /// The crate's name in Rust (`social_graph_get_followers`).
    pub name: &'a str,
    /// Its cargo package (`social-graph-get-followers`).
    pub package: &'a str,
    /// The function whose own binary this is, for a function's bin.
    pub function: Option<&'a str>,
    /// The merged functions that link this crate.
    pub owners: &'a BTreeSet<String>,
    /// One of the user's own path crates (not a registry crate, not the runtime).
    pub local: bool,
}

impl Crate<'_> {
    /// The callee that alone links this crate, if one does.
    pub fn callee_owner(&self, facts: &Facts) -> Option<&str> {
        let mut owners = self.owners.iter();
        match (owners.next(), owners.next()) {
            (Some(only), None) if *only != facts.caller => Some(only.as_str()),
            _ => None,
        }
    }
}

/// What the per-crate passes found, over every crate so far.
#[derive(Default)]
pub struct Found {
    /// Callees some merged function's code names (the others are never invoked).
    pub mentioned: BTreeSet<String>,
    /// For each `--rewrite`, how many literals it changed.
    pub rewritten: Vec<usize>,
    /// `(function, key)` of each `std::env` read now namespaced.
    pub isolated: BTreeSet<(String, String)>,
    /// Differences the merge keeps, each saying what changes.
    pub warnings: Vec<String>,
    /// Exported symbols defined so far (for clashes), and the renames made.
    pub exports: symbols::Exports,
}

/// Phase 1, on one crate before it is linked; the order matters where said.
pub fn per_crate(
    module: &Module<'_>,
    krate: &Crate,
    facts: &Facts,
    found: &mut Found,
) -> Result<()> {
    // A function's bin declares its entry; note which callees its code names.
    if let Some(function) = krate.function {
        dispatch::entry(module, function)?;
        found.mentioned.extend(
            facts
                .callees
                .iter()
                .filter(|c| *c != function && dispatch::mentions(module, c))
                .cloned(),
        );
    }
    // One `main`, and no two definitions of an exported symbol.
    symbols::prepare(module, krate, facts, &mut found.exports)?;
    // A mutable static in a crate several functions link would become one.
    if krate.local && krate.owners.len() > 1 {
        statics::run(module, krate, facts)?;
    }
    // Callee-owned endpoint literals, before `env` adds literals of its own.
    let hits = endpoints::run(module, krate, facts)?;
    found.rewritten.resize(facts.rewrites.len(), 0);
    for (total, n) in found.rewritten.iter_mut().zip(hits) {
        *total += n;
    }
    if krate.local {
        // Callees' std::env reads get their own namespaced names.
        let report = env::run(module, krate, facts);
        found.isolated.extend(report.isolated);
        found.warnings.extend(report.warnings);
        // Hand-written gateway URLs of merged functions still leave the process.
        found
            .warnings
            .extend(dispatch::gateway_urls(module, krate, facts));
    }
    Ok(())
}

/// What phase 2 found.
pub struct Report {
    /// Symbols made internal.
    pub internalized: usize,
    /// The settings each function reads, sorted.
    pub settings: Vec<config::Setting>,
}

/// Phase 2, on the linked module.
pub fn on_module(module: &Module<'_>, facts: &Facts, found: &Found) -> Result<Report> {
    // The allocator shim fmerge links is the default one.
    symbols::check_allocator(module)?;
    // All but `main` internal, so the optimizer sees the whole program.
    let internalized = symbols::run(module);
    // The routes table: merged callees are called in-process.
    dispatch::run(module, &facts.callees)?;
    // What each function reads, after the rewrites changed defaults.
    let mut settings = config::run(module);
    settings.extend(
        found
            .isolated
            .iter()
            .map(|(function, key)| config::Setting {
                function: function.clone(),
                key: key.clone(),
                default: String::new(),
                from_env: true,
            }),
    );
    settings.sort();
    Ok(Report {
        internalized,
        settings,
    })
}
