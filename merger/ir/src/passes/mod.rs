//! The rewrites and checks of the IR, one file each; each file's doc comment
//! says why the pass exists. Every pass is one `pub fn run` of one of three
//! shapes, registered in [`PASSES`], in the order they run:
//!
//! - a crate pass runs on each crate's module before linking, while fmerge
//!   still knows which merged functions link that crate (a clash, a shared
//!   static or a literal can be pinned on a crate, and only callee-owned
//!   code is rewritten): `run(&Module, &Crate, &Facts, &mut Found)`;
//! - a conclusion runs once after every crate, on what the crate passes
//!   found, and reads no module: `run(&Facts, &mut Found)`;
//! - a module pass changes the linked module: `run(&Module, &Facts, &mut Found)`.
//!   Only a merge that compiles that module links one; the reuse path
//!   (`reuse`) redoes each module pass its own way
//!   ([`REDONE_BY_REUSE`]), so it never links the crates.
//!
//! What passes find goes into one [`Found`], added up across crates; its
//! warnings are worded by the pass that finds them.
//!
//! To add a pass: a file here with a doc comment and `pub fn run`, one line
//! in [`PASSES`], and golden cases in `tests/ir/<name>/` (see `tests/ir.rs`).

pub mod allocator;
pub mod allocator_users;
pub mod blocking;
pub mod call_graph;
pub mod config;
pub mod endpoints;
pub mod entry;
pub mod env;
pub mod exports;
mod fmt_args;
pub mod gateway_urls;
pub mod in_process;
pub mod internalize;
pub mod mentions;
pub mod routes;
pub mod run_entry;
pub mod statics;
pub mod uncalled;
pub mod unmatched_rewrites;

use anyhow::Result;
use inkwell::module::Module;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A pass that runs on one crate's module before linking.
pub type CratePass = fn(&Module<'_>, &Crate, &Facts, &mut Found) -> Result<()>;
/// A pass that runs once after every crate, on what they found.
pub type Conclusion = fn(&Facts, &mut Found) -> Result<()>;
/// A pass that changes the linked module.
pub type ModulePass = fn(&Module<'_>, &Facts, &mut Found) -> Result<()>;

/// How a pass runs.
#[derive(Clone, Copy)]
pub enum Run {
    Crate(CratePass),
    Conclusion(Conclusion),
    Module(ModulePass),
}

/// A registered pass: its name (its file's, and its golden cases' folder).
#[derive(Clone, Copy)]
pub struct Pass {
    pub name: &'static str,
    pub run: Run,
}

/// Every pass, in the order they run: all crate passes, on each crate, then
/// the module passes. The order matters where a pass says so.
pub const PASSES: &[Pass] = &[
    Pass {
        name: "entry",
        run: Run::Crate(entry::run),
    },
    Pass {
        name: "mentions",
        run: Run::Crate(mentions::run),
    },
    Pass {
        name: "exports",
        run: Run::Crate(exports::run),
    },
    // After `exports`, which renames the `main` it reads; before
    // `call_graph`, which then sees the entry.
    Pass {
        name: "run_entry",
        run: Run::Crate(run_entry::run),
    },
    Pass {
        name: "statics",
        run: Run::Crate(statics::run),
    },
    // Before `env`, which adds literals of its own.
    Pass {
        name: "endpoints",
        run: Run::Crate(endpoints::run),
    },
    Pass {
        name: "env",
        run: Run::Crate(env::run),
    },
    Pass {
        name: "gateway_urls",
        run: Run::Crate(gateway_urls::run),
    },
    // For `blocking` and `in_process`.
    Pass {
        name: "call_graph",
        run: Run::Crate(call_graph::run),
    },
    // Before linking: two allocators would be two definitions of one symbol.
    Pass {
        name: "allocator",
        run: Run::Crate(allocator::run),
    },
    // Last of the crate passes: after the rewrites changed defaults.
    Pass {
        name: "config",
        run: Run::Crate(config::run),
    },
    // Before `routes`, which marks what it finds.
    Pass {
        name: "blocking",
        run: Run::Conclusion(blocking::run),
    },
    Pass {
        name: "in_process",
        run: Run::Conclusion(in_process::run),
    },
    Pass {
        name: "uncalled",
        run: Run::Conclusion(uncalled::run),
    },
    Pass {
        name: "unmatched_rewrites",
        run: Run::Conclusion(unmatched_rewrites::run),
    },
    Pass {
        name: "allocator_users",
        run: Run::Conclusion(allocator_users::run),
    },
    Pass {
        name: "internalize",
        run: Run::Module(internalize::run),
    },
    Pass {
        name: "routes",
        run: Run::Module(routes::run),
    },
];

/// The registered pass of that name.
pub fn named(name: &str) -> Option<&'static Pass> {
    PASSES.iter().find(|p| p.name == name)
}

/// The module passes, each of which the reuse path (`--lto off`, see
/// `reuse`) makes its own way instead of compiling the merged
/// module: `internalize` (skipped: each crate keeps its symbols, so that the
/// objects cargo compiled still reach them) and `routes` (the table becomes
/// an object of its own). A pass that only reads is a crate pass or a
/// conclusion, so the reuse path needs no linked module.
pub const REDONE_BY_REUSE: &[&str] = &["internalize", "routes"];

/// Runs every crate pass on one crate, in order; `found.touched` then says
/// whether any of them changed it.
pub fn on_crate(
    module: &Module<'_>,
    krate: &Crate,
    facts: &Facts,
    found: &mut Found,
) -> Result<()> {
    found.touched = false;
    found.dropped_main = false;
    for pass in PASSES {
        if let Run::Crate(run) = pass.run {
            run(module, krate, facts, found)?;
        }
    }
    Ok(())
}

/// Runs every conclusion, in order, once every crate went through
/// [`on_crate`].
pub fn conclude(facts: &Facts, found: &mut Found) -> Result<()> {
    for pass in PASSES {
        if let Run::Conclusion(run) = pass.run {
            run(facts, found)?;
        }
    }
    Ok(())
}

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
    /// The members are watchdog processes (plain `main`s, stdin in, stdout
    /// out): each callee's `main` stays callable as `fmerge.main.<name>`
    /// and runs in a process of its own, with its own environment, so
    /// there is no handler entry, dispatch table, settings rewrite or
    /// shared static to see to; where `in_process` allows it, a callee
    /// runs in the caller's process instead (`fmerge.run.<name>`).
    pub process: bool,
    /// The callees (by package) that serve HTTP themselves, of a `process`
    /// merge: each runs its `main` once, for as long as the caller's
    /// process, in it (`in_process` judges them as such).
    pub serving: BTreeSet<String>,
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

/// The crate a crate pass runs on.
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

    /// The crate for people: `function (crate name)` for a function's bin,
    /// `crate name (linked by …)` otherwise.
    pub fn describe(&self) -> String {
        match self.function {
            Some(function) => format!("{function} (crate {})", self.name),
            None => format!(
                "crate {} (linked by {})",
                self.name,
                self.owners.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// What the passes found, over every crate so far, then the conclusions
/// and the module.
#[derive(Default)]
pub struct Found {
    /// Differences the merge keeps, each saying what changes (worded by
    /// the pass that finds them).
    pub warnings: Vec<String>,
    /// What the merge did, for people (`rewrote … in 2 literal(s)`).
    pub notes: Vec<String>,
    /// Callees some merged function's code names (`mentions`).
    pub mentioned: BTreeSet<String>,
    /// For each `--rewrite`, how many literals it changed (`endpoints`).
    pub rewritten: Vec<usize>,
    /// Rewrites of process-form callees applied in their own processes
    /// (`endpoints`), for literals in crates others link too.
    pub at_run_time: BTreeSet<endpoints::AtRunTime>,
    /// What each function of the crates callees link refers to (`call_graph`).
    pub calls: call_graph::CallGraph,
    /// Callees whose handler reaches a function that blocks its thread, with
    /// that call (`blocking`).
    pub blocking: BTreeMap<String, blocking::BlockingCall>,
    /// The gateway URLs a process-form member's code holds (`gateway_urls`):
    /// calls made to them are answered in the pod when they name a member.
    pub gateway_urls: BTreeSet<String>,
    /// Each `std::env` read now namespaced (`env`).
    pub isolated: BTreeSet<env::EnvRead>,
    /// For each watchdog-process callee, whether its `fmerge.run.<package>`
    /// is defined, or why not (`run_entry`).
    pub run_entries: BTreeMap<String, Result<(), String>>,
    /// The mutable statics of the user's crates, in a merge of watchdog
    /// processes (`statics`).
    pub mutable_statics: Vec<statics::CrateStatics>,
    /// For each watchdog-process callee: `Ok` where it may run in the
    /// caller's process, else why it runs in a process of its own
    /// (`in_process`).
    pub in_process: BTreeMap<String, Result<(), String>>,
    /// Why a call between members may not be run on the calling thread
    /// (the shim's `inline`), if so (`in_process`).
    pub not_inline: Option<String>,
    /// For each callee whose handler library's `handle` may not be started
    /// on its caller's thread (the entry's `.now`), why (`in_process`).
    pub handle_elsewhere: BTreeMap<String, String>,
    /// Unmangled symbols defined so far, with who defines them (`exports`).
    pub exported: HashMap<String, exports::Definer>,
    /// The `#[global_allocator]` the merged binary uses, if a member sets
    /// one (`allocator`).
    pub allocator: Option<allocator::Allocator>,
    /// Symbols made internal (`internalize`).
    pub internalized: usize,
    /// Routes in the dispatch table (`routes`, or the reuse path's table).
    pub routes: usize,
    /// The settings each function reads, over every crate so far (`config`).
    pub settings: BTreeSet<config::Setting>,
    /// A crate pass changed the crate it runs on (reset for each crate by
    /// [`on_crate`]): that crate is then compiled from its IR, not linked from
    /// the object cargo compiled. Every crate pass that changes a module sets
    /// it; the golden tests check that none forgets.
    pub touched: bool,
    /// `exports` dropped this crate's `main` (a callee's bin; reset for each
    /// crate by [`on_crate`]): unless `touched` too, the reuse path links
    /// cargo's object with `main` made weak, which is the same change.
    pub dropped_main: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reuse path links no module, so a module pass it does not redo
    /// would silently not run there.
    #[test]
    fn every_module_pass_is_one_the_reuse_path_redoes() {
        for pass in PASSES {
            if let Run::Module(_) = pass.run {
                assert!(
                    REDONE_BY_REUSE.contains(&pass.name),
                    "module pass {} reads or changes the linked module, which the reuse path does not make: \
                     make it a crate pass or a conclusion, or redo it in reuse.rs",
                    pass.name
                );
            }
        }
    }
}
