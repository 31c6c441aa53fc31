//! Callees that block their thread, found by what their code does.
//!
//! Unmerged, a function that calls `std::thread::sleep` or synchronous I/O
//! holds up only its own process. Merged, it would hold up the threads that
//! serve the caller's own requests (see docs/PERFORMANCE.md). This
//! conclusion walks the call graph the `call_graph` pass gathered, breadth
//! first, from each callee's handler entry (`fmerge.entry.<callee>`: its
//! request path, through the runtime's generic code into the handler's
//! future and everything it calls or takes the address of, in every crate),
//! and finds what really waits ([`names::judge`]):
//!
//! - at the bottom, a primitive that waits: the C library's sleeps, waits,
//!   `poll`/`select`/`epoll_wait`, and its reads, writes, connects and
//!   accepts on descriptors and files; std's functions that wrap them
//!   (`thread::sleep`, `park`, `JoinHandle::join`, `Condvar::wait`, channel
//!   receives, `process::Command::output`, `std::fs`, `std::net`'s socket
//!   calls), judged by name since std's code is not in the bitcode;
//! - a busy loop in the callee's own code ([`Spin`](crate::passes::call_graph::Spin)).
//!
//! It does not count, since none of them waits on a request's path: one-time
//! initialisation (the closures of `Once`, `OnceLock`, `LazyLock`,
//! `once_cell` and `lazy_static`, not followed, nor any reference passed to
//! them, nor a function pointer kept in a mutable static); work handed to
//! another thread (`tokio::task::spawn_blocking`, a task whose vtable the
//! function hands to tokio's blocking pool, `block_in_place`,
//! `std::thread::spawn`); closing a descriptor (`OwnedFd`'s drop, whose debug
//! check is `fcntl`); the async runtime's own I/O (mio and tokio make every
//! descriptor non-blocking, so a descriptor call below them, through socket2
//! at most, returns at once; `epoll_wait` is in the reactor, not on the
//! request path: [`names::Io`]); and getrandom's fallback to the kernel's
//! random device, which never waits once the kernel seeded it at boot.
//!
//! The work is linear: each callee's walk visits a function at most twice
//! (reached through the runtime's I/O or not), and each function's name is
//! demangled and judged once for all callees. The `routes` pass marks a
//! callee found blocking to run on threads of its own, and the warning names
//! the chain of calls from the handler to what waits.
//!
//! Limits: a call through a function pointer the code receives at run time
//! (not a constant it refers to) is not followed; the graph
//! over-approximates (a function taking another's address is taken to call
//! it), so a wait on a path that never runs may still be reported; code
//! outside the bitcode (C libraries, std's private functions) is judged by
//! its entry's name; a loop that polls through an opaque call, or spins on
//! `std::hint::spin_loop` alone, is not a busy loop to it. The runtime's
//! `FMERGE_ISOLATE` overrides either way.

pub mod names;

use crate::ir;
use crate::passes::call_graph::{CallGraph, Id, Ref, Reference};
use crate::passes::{Facts, Found};
use anyhow::Result;
use fmerge_contract::ENTRY_PREFIX;
use names::{Judged, Wait};
use std::collections::{BTreeMap, VecDeque};

/// Frames of a chain kept on each side of an elision.
const CHAIN_ENDS: usize = 3;

/// What a callee's handler reaches that blocks its thread.
#[derive(Debug, Clone)]
pub struct BlockingCall {
    /// The function that waits.
    pub target: String,
    /// The chain of calls from the handler to it.
    pub chain: String,
}

/// Records each callee whose handler reaches a wait (into `found.blocking`,
/// with one warning each).
pub fn run(facts: &Facts, found: &mut Found) -> Result<()> {
    let mut judged: Vec<Option<(Judged, String)>> = vec![None; found.calls.names.len()];
    for callee in &facts.callees {
        let entry = fmerge_contract::entry_symbol(callee);
        let Some(root) = found.calls.get(&entry) else {
            continue;
        };
        let Some((chain, what)) = first_wait(&found.calls, root, &mut judged) else {
            continue;
        };
        let own = found.calls.own_crate.get(callee).cloned();
        let target = chain.last().cloned().unwrap_or_default();
        let chain = shorten(callee, chain);
        let krate = own.map(|c| format!(" (crate {c})")).unwrap_or_default();
        found.warnings.push(format!(
            "{callee}{krate} blocks its thread: {chain} ({what}); merged, it would hold up {caller}'s \
             requests, so it runs on threads of its own (one hop between thread pools per call; \
             `FMERGE_ISOLATE` at run time overrides)\n\
             fix: use the async equivalent (tokio::time::sleep, tokio::net, tokio::fs, an async client) \
             or move the call into tokio::task::spawn_blocking",
            caller = facts.caller,
        ));
        found
            .blocking
            .insert(callee.clone(), BlockingCall { target, chain });
    }
    Ok(())
}

/// The shortest chain of functions (demangled) from `root` to one that
/// waits, and what waits; `judged` caches each function's judgement.
fn first_wait(
    graph: &CallGraph,
    root: Id,
    judged: &mut [Option<(Judged, String)>],
) -> Option<(Vec<String>, &'static str)> {
    // A state is a function, and whether it is reached through the async
    // runtime's I/O with nothing of the user's between ([`names::Io`]).
    type State = (Id, bool);
    let mut parent: BTreeMap<State, State> = BTreeMap::new();
    let mut todo = VecDeque::from([(root, false)]);
    parent.insert((root, false), (root, false));
    let mut judge = |id: Id| -> (Judged, String) {
        judged[id as usize]
            .get_or_insert_with(|| {
                let symbol = &graph.names[id as usize];
                let path = ir::demangle(symbol);
                (
                    names::judge(symbol, &path, graph.defined[id as usize]),
                    path,
                )
            })
            .clone()
    };
    let chain = |parent: &BTreeMap<State, State>,
                 mut at: State,
                 judge: &mut dyn FnMut(Id) -> (Judged, String)| {
        let mut out = vec![judge(at.0).1];
        while parent[&at] != at {
            at = parent[&at];
            out.push(judge(at.0).1);
        }
        out.reverse();
        out
    };
    while let Some((at, io)) = todo.pop_front() {
        let (verdict, path) = judge(at);
        if let Some(spin) = graph.spins.get(&at) {
            return Some((chain(&parent, (at, io), &mut judge), spin.describe()));
        }
        match verdict {
            Judged::HandsOff => continue,
            // The async runtime's descriptors are non-blocking.
            Judged::Waits(Wait::OnDescriptor) if io => continue,
            Judged::Waits(wait) => {
                let what = match wait {
                    Wait::Always => "it waits",
                    Wait::OnDescriptor => "it waits on a descriptor or a file",
                };
                return Some((chain(&parent, (at, io), &mut judge), what));
            }
            Judged::Plain => {}
        }
        let here = (at, io);
        let io = match names::io(&path) {
            names::Io::Runtime => true,
            names::Io::Wrapper => io,
            names::Io::Other => false,
        };
        let refs = &graph.refs[at as usize];
        for &Reference { to, how } in refs {
            if parent.contains_key(&(to, io)) {
                continue;
            }
            let handed = match how {
                Ref::Arg(callee) => judge(callee).0 == Judged::HandsOff,
                Ref::Taken => {
                    judge(to).1.starts_with(names::TASK_POLL)
                        && refs
                            .iter()
                            .any(|r| judge(r.to).1.starts_with(names::BLOCKING_POOL))
                }
                Ref::Call => false,
            };
            if !handed {
                parent.insert((to, io), here);
                todo.push_back((to, io));
            }
        }
    }
    None
}

/// The chain as people read it: from the callee's handler (the entry and
/// the runtime's glue that polls the handler's future, into which rustc
/// inlines the handler's body, read as "<callee>'s handler"), each frame
/// once, the middle elided when long.
fn shorten(callee: &str, chain: Vec<String>) -> String {
    let glue = |f: &String| {
        f.starts_with(ENTRY_PREFIX) || f.contains(" as fmerge_runtime::handler::Handler<")
    };
    let start = chain.iter().rposition(glue).map_or(0, |i| i + 1);
    let mut frames: Vec<String> = vec![format!("{callee}'s handler")];
    for f in &chain[start..] {
        let f = format!("`{f}`");
        if frames.last() != Some(&f) {
            frames.push(f);
        }
    }
    if frames.len() > 2 * CHAIN_ENDS + 1 {
        let tail = frames.split_off(frames.len() - CHAIN_ENDS);
        frames.truncate(CHAIN_ENDS);
        frames.push("…".into());
        frames.extend(tail);
    }
    frames.join(" → ")
}
