//! Endpoint rewrite: a callee's data-store addresses, changed in its literals.
//!
//! A callee moved into the caller's binary now runs where the caller runs,
//! and the address it was built with (`sn-redis-master…:6379` inside its own
//! cluster) may not be reachable from there. `--rewrite FROM=TO` replaces
//! FROM inside the string literals of callee-owned code only.
//!
//! A Rust `&str` is a pointer and a length, and the length lives at each use,
//! not in the literal. Optimized code spreads one length over unrelated
//! constants (a `memcpy` size, a heap allocation, a `String`'s capacity), so
//! fmerge has cargo build callee-owned crates unoptimized (`emit`), where
//! every use is one of three shapes whose length it can see and fix:
//! - a call's `(ptr, len)` argument pair (`String::from`, `to_string`,
//!   `Client::open`, `config!`), never an LLVM intrinsic such as `memcpy`;
//! - a constant struct field pair `ptr, [len as 8 bytes, …]`, which is how
//!   rustc writes a `&str` inside a `static` or a `const` aggregate;
//! - a `format!` template handed to `core::fmt::Arguments::new`, whose
//!   literal pieces carry their own length prefix.
//!
//! Any other use stops the merge with the function, crate and Rust item that
//! made it, rather than leave a wrong length behind. The pass runs on each
//! crate's module before linking, when it still knows which crate owns each
//! literal: a literal in a crate the caller links too is never changed.
//!
//! This file holds the flag and the pass's walk over a crate's literals;
//! `uses.rs` finds each use of a literal and its length, `literal.rs`
//! writes the rewritten literal and fixes every use.

mod literal;
mod uses;

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::{Result, bail};
use inkwell::module::Module;
use std::collections::BTreeSet;

/// One `--rewrite [CALLEE:]FROM=TO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// Only this callee's code, or every callee's when `None`.
    pub callee: Option<String>,
    pub from: String,
    pub to: String,
}

impl Rewrite {
    /// Parses `[CALLEE:]FROM=TO`. FROM often holds a `:` itself (`host:port`),
    /// so a prefix counts as CALLEE only when it names a merged function.
    pub fn parse(arg: &str, functions: &[String]) -> Result<Rewrite> {
        let usage = "fix: write [CALLEE:]FROM=TO, e.g. --rewrite social-graph-get-followers:sn-redis-master.openfaas-fn.svc.cluster.local:6379=10.0.0.7:6379";
        let (mut from, to) = match arg.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => (from, to),
            _ => bail!("malformed --rewrite `{arg}`\n{usage}"),
        };
        let mut callee = None;
        if let Some((prefix, rest)) = from.split_once(':')
            && functions.iter().any(|f| f == prefix)
        {
            callee = Some(prefix.to_string());
            from = rest;
        }
        if from.is_empty() {
            bail!("malformed --rewrite `{arg}`: FROM is empty\n{usage}");
        }
        if from == to {
            bail!("--rewrite `{arg}` replaces `{from}` with itself\nfix: drop it, or correct TO");
        }
        Ok(Rewrite {
            callee,
            from: from.to_string(),
            to: to.to_string(),
        })
    }

    /// The functions whose code this rewrite may change.
    pub fn targets(&self, callees: &[String]) -> BTreeSet<String> {
        match &self.callee {
            Some(c) => BTreeSet::from([c.clone()]),
            None => callees.iter().cloned().collect(),
        }
    }
}

/// A rewrite of a watchdog-process callee applied in its own process, for a
/// literal in a crate others link too ([`fmerge_shim::rewrite`]): a host
/// name or a file path FROM used as TO.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AtRunTime {
    pub callee: String,
    pub from: String,
    pub to: String,
}

/// Whether the shim can apply FROM=TO at run time: both absolute paths, or
/// both host names, with a port on both sides or on neither.
fn at_run_time(from: &str, to: &str) -> bool {
    use fmerge_shim::rewrite::{Target, target};
    match (target(from), target(to)) {
        (Some(Target::Path(_)), Some(Target::Path(_))) => true,
        (Some(Target::Host { port: a, .. }), Some(Target::Host { port: b, .. })) => {
            a.is_some() == b.is_some()
        }
        _ => false,
    }
}

/// Where one rewrite may apply: the crate being rewritten and the merged
/// functions that link it (named in every refusal).
struct Scope<'a> {
    crate_name: &'a str,
    functions: String,
    rewrite: &'a Rewrite,
}

/// Rewrites the literals of one crate's module, and adds how many literals
/// each of `facts.rewrites` changed to `found.rewritten`.
pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    let (crate_name, owners) = (krate.name, krate.owners);
    found.rewritten.resize(facts.rewrites.len(), 0);
    for (i, rewrite) in facts.rewrites.iter().enumerate() {
        let targets = rewrite.targets(&facts.callees);
        if owners.is_disjoint(&targets) {
            continue;
        }
        let functions = owners
            .intersection(&targets)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let scope = Scope {
            crate_name,
            functions,
            rewrite,
        };
        for global in ir::globals(module) {
            let Some(bytes) = ir::string_bytes(global) else {
                continue;
            };
            if positions(&bytes, rewrite.from.as_bytes()).is_empty() {
                continue;
            }
            if !owners.is_subset(&targets) {
                let others: Vec<_> = owners.difference(&targets).cloned().collect();
                if facts.process && at_run_time(&rewrite.from, &rewrite.to) {
                    // Each process-form callee runs in a process of its own:
                    // the rewrite applies there, where the literal is used.
                    let callees: Vec<String> = owners.intersection(&targets).cloned().collect();
                    for callee in &callees {
                        found.at_run_time.insert(AtRunTime {
                            callee: callee.clone(),
                            from: rewrite.from.clone(),
                            to: rewrite.to.clone(),
                        });
                    }
                    found.notes.push(format!(
                        "--rewrite {}: `{}` is in crate {crate_name}, which {} link too: in {}'s own process the \
                         name resolves, or the file opens, as `{}`; the others' code is unchanged",
                        rewrite.from,
                        rewrite.from,
                        others.join(", "),
                        callees.join(", "),
                        rewrite.to
                    ));
                    found.rewritten[i] += 1;
                    break;
                }
                bail!(
                    "--rewrite {}: `{}` is in a literal of crate {crate_name}, which {} link too, so rewriting it would change them as well\n\
                     fix: make FROM specific to the callee's own literal, or move the address into the callee's own crate \
                     (a `config!(\"REDIS_URL\", \"...\")` default there), or set it at deploy time through the callee's namespaced variable",
                    rewrite.from,
                    rewrite.from,
                    others.join(", ")
                );
            }
            // Whether or not it changes: a literal up for rewriting is enough.
            found.touched = true;
            if literal::rewrite(module, global, &bytes, &scope)? {
                found.rewritten[i] += 1;
            }
        }
    }
    Ok(())
}

pub(crate) fn positions(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + needle.len() <= haystack.len() {
        if haystack[at..at + needle.len()] == *needle {
            out.push(at);
            at += needle.len();
        } else {
            at += 1;
        }
    }
    out
}

pub(crate) fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for m in positions(bytes, from) {
        out.extend_from_slice(&bytes[last..m]);
        out.extend_from_slice(to);
        last = m + from.len();
    }
    out.extend_from_slice(&bytes[last..]);
    out
}

fn refusal(scope: &Scope, what: &str, fix: &str) -> String {
    format!(
        "--rewrite {}: cannot rewrite the literal holding `{}` in function {} (crate {}): {what}\nfix: {fix}",
        scope.rewrite.from, scope.rewrite.from, scope.functions, scope.crate_name
    )
}
