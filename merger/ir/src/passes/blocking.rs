//! Callees that block their thread.
//!
//! Unmerged, a function that calls `std::thread::sleep` or synchronous I/O
//! holds up only its own process. Merged, it would hold up the threads that
//! serve the caller's own requests (measured: a callee blocking 200 ms under
//! 50 concurrent requests made the caller's cheap requests wait up to 5 s).
//! In the code only callees link (a callee's own crates), this pass finds
//! calls to functions known to block a thread; the `routes` pass then marks
//! that callee to run on threads of its own, and the warning names the
//! callee, the blocking function, the Rust item that calls it and the fix.
//! It looks at direct calls only: blocking code reached through a crate the
//! caller also links, or through a function pointer, is not seen (the
//! runtime's `FMERGE_ISOLATE` covers those).

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::Result;
use inkwell::module::Module;

/// Demangled paths (generics removed) of functions that block the calling
/// thread, by prefix. std's small functions are inlined across crates, so
/// its internal paths are listed too (`std::thread::sleep` is called as
/// `std::thread::functions::sleep`, `Path::exists` as `std::sys::fs::metadata`).
const BLOCKING: &[&str] = &[
    "std::thread::sleep",
    "std::thread::park",
    "std::thread::functions::sleep",
    "std::thread::functions::park",
    "std::sys::fs::",
    "std::sys::net::",
    "std::sys::process::",
    "std::sys::stdio::",
    "std::thread::JoinHandle::join",
    "std::net::",
    "<std::net::",
    "std::fs::",
    "<std::fs::",
    "std::io::stdio::Stdin",
    "<std::io::stdio::Stdin",
    "std::process::Command::output",
    "std::process::Command::status",
    "std::process::Child::wait",
    "std::sync::mpsc::Receiver",
    "<std::sync::mpsc::Receiver",
    "std::sync::Condvar::wait",
    "std::sync::Barrier::wait",
    "reqwest::blocking::",
    "<reqwest::blocking::",
    "ureq::",
    "<ureq::",
    "postgres::",
    "<postgres::",
    "redis::Connection",
    "<redis::Connection",
    "redis::Client::get_connection",
];

/// The blocking function `path` names, if it is one.
pub fn blocking(path: &str) -> Option<&'static str> {
    BLOCKING
        .iter()
        .copied()
        .find(|prefix| path.starts_with(prefix))
}

/// Records, for a crate a single callee links, the blocking functions it
/// calls (into `found.blocking`, with one warning).
pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    let Some(callee) = krate.callee_owner(facts) else {
        return Ok(());
    };
    if found.blocking.contains_key(callee) {
        return Ok(());
    }
    let mut calls = Vec::new();
    for f in module.get_functions() {
        let name = f.get_name().to_string_lossy().into_owned();
        let path = ir::demangle(&name);
        // `std::fs::write::inner`: the non-generic half of `std::fs::write`.
        let path = path.split("::<").next().unwrap_or_default();
        let path = path.strip_suffix("::inner").unwrap_or(path);
        if blocking(path).is_none() {
            continue;
        }
        let value =
            inkwell::values::AsValueRef::as_value_ref(&f.as_global_value().as_pointer_value());
        for (user, _) in ir::uses(value) {
            if ir::is_call(user) && ir::callee_name(user).as_deref() == Some(name.as_str()) {
                let site = ir::demangle(&ir::enclosing_function(user));
                // std's generic code instantiated in this crate: its caller is what counts.
                if blocking(site.split("::<").next().unwrap_or_default()).is_none() {
                    calls.push((site, path.to_string()));
                }
            }
        }
    }
    calls.sort();
    let Some((site, _)) = calls.first().cloned() else {
        return Ok(());
    };
    let targets: std::collections::BTreeSet<String> = calls.into_iter().map(|(_, t)| t).collect();
    let targets: Vec<String> = targets.into_iter().collect();
    let named = targets
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ");
    found.warnings.push(format!(
        "{callee} (crate {}) calls {named} (first in `{site}`), which block its thread: merged, it would hold up \
         {caller}'s requests, so it runs on threads of its own (one hop between thread pools per call; \
         `FMERGE_ISOLATE` at run time overrides)\nfix: use the async equivalent (tokio::time::sleep, tokio::net, \
         tokio::fs) or tokio::task::spawn_blocking",
        krate.name,
        caller = facts.caller,
    ));
    found
        .blocking
        .insert(callee.to_string(), (targets.join(", "), site));
    Ok(())
}
