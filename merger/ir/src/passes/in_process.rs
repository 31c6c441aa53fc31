//! Whether a watchdog-process callee may run in the caller's process.
//!
//! Each call of a watchdog-process callee had a process of its own: its own
//! exit, environment, panic hook, statics and stdio locks. The shim can run
//! a callee on a thread of the caller's process instead (its run entry,
//! `run_entry`), which saves the fork, only where none of that shows. This
//! conclusion decides it for each callee from the call graph (`call_graph`,
//! every crate of a process-form merge) and the user's crates' statics
//! (`statics`), and records the verdict in [`Found::in_process`]: `Ok`, or
//! the first of these reasons, naming the function, its crate and what it
//! reaches:
//!
//! - no run entry (its `main` has a shape `run_entry` does not know);
//! - reachable from its `main` (any reference: a call, an address taken or
//!   passed), a function that is not std's own code refers to what acts on
//!   the whole process (`process_wide`): `exit` and `abort` in their
//!   forms, `fork` and `exec*`, a change to or a listing of the
//!   environment, the panic hook, the process's logger (`log`'s, `tracing`'s
//!   global default), a signal's handler (`sigaction`, `signal`: tokio's
//!   and signal-hook's streams, actix-web's graceful stop, which would
//!   change what SIGTERM does to the caller's process); or a function of
//!   the user's own crates
//!   aborts or starts a thread (one that would outlive the call; registry
//!   crates join their own threads, as reqwest's blocking client does, and
//!   abort only on a broken invariant, often in std's code inlined into
//!   theirs);
//! - one of the user's crates it links keeps a mutable static, which would
//!   keep its value from one call to the next;
//! - group-wide: the caller's code sets or takes the panic hook, which
//!   every callee run in its process would then panic through;
//! - group-wide: some function of any member (the caller's included) takes
//!   std's stdin, stdout or stderr lock and, while it may hold it, refers to
//!   a function that is not std's or a memory routine (`holds_a_lock`):
//!   that function may be a call to a member, whose own use of that stream
//!   on another thread would then wait for the lock forever. Reading one
//!   line under the lock (`stdin().lock().read_line(..)`) passes; a loop
//!   over `stdin().lock().lines()` that calls another function does not.
//!
//! And for the group, whether a callee run in the caller's process may run
//! on the very thread that calls it, in the middle of its client's `send`
//! (the shim's `inline`), which saves two thread wake-ups a call; recorded
//! in [`Found::not_inline`]. Not where a member's own code drives an async
//! executor (`#[tokio::main]`, `block_on`): a call made from inside one
//! would run the callee inside it, where a blocking client such as
//! `reqwest::blocking` refuses to run. Those calls go to a thread of the
//! shim's own, as a member's own process gave it a thread of its own.
//!
//! And for each callee in a handler-library template, whether its `handle`
//! may be started on the caller's thread (its entry's `.now`: polled there
//! until it first waits), recorded in [`Found::handle_elsewhere`]: not where
//! it reaches tokio's `block_in_place` or `spawn_local`, which panic on a
//! current-thread runtime's thread (actix-web's workers) where its
//! template's multi-threaded server would have run them. Those calls go to
//! a thread of the shim's, which waits for `handle` on its own runtime.
//!
//! Limits: std's generic code that the user's code instantiates counts as
//! std's (a closure inlined into it is not seen as the user's); a call
//! through a function pointer received at run time is not followed; code
//! outside the bitcode is judged by its name.

use crate::ir;
use crate::passes::blocking::names::inherent;
use crate::passes::call_graph::{CallGraph, Id, Ref};
use crate::passes::{Facts, Found};
use anyhow::Result;
use std::collections::{BTreeSet, VecDeque};

/// The locks of std's standard streams.
const LOCKS: &[&str] = &[
    "std::io::stdio::Stdin::lock",
    "std::io::stdio::Stdin::lines",
    "std::io::stdio::Stdout::lock",
    "std::io::stdio::Stderr::lock",
];

/// C memory and allocation routines: a lock holder may call them.
const MEMORY: &[&str] = &["memcpy", "memmove", "memset", "memcmp", "bcmp"];
/// The allocator's entries (`__rust_alloc`, `__rust_alloc_zeroed`, …),
/// by prefix.
const ALLOCATOR: &[&str] = &[
    "__rust_alloc",
    "__rust_dealloc",
    "__rust_realloc",
    "__rust_no_alloc_shim_is_unstable",
];

/// Records the verdict for each callee of a merge of watchdog processes.
pub fn run(facts: &Facts, found: &mut Found) -> Result<()> {
    if !facts.process {
        return Ok(());
    }
    let graph = &found.calls;
    let mut paths = Paths::new(graph);
    let lock = holds_a_lock(graph, &mut paths);
    let hook = first_reaching(graph, "main", &mut paths, |path, _| {
        sets_the_panic_hook(path).then_some(
            "and so every callee run in its process would panic through that hook, \
             where its own process had std's",
        )
    })
    .map(|why| format!("the caller: {why}"));
    for callee in &facts.callees {
        // A callee that serves HTTP itself runs once, for the process's
        // life, as its own process did: its statics and threads live as
        // long as they did there.
        let serving = facts.serving.contains(callee);
        let verdict = match found.run_entries.get(callee) {
            None => Err(format!("no `main` of {callee} was found to run")),
            Some(Err(why)) => Err(why.clone()),
            Some(Ok(())) => Ok(()),
        }
        .and_then(
            |()| match process_wide(graph, callee, serving, &mut paths) {
                Some(why) => Err(why),
                None => Ok(()),
            },
        )
        .and_then(|()| {
            match found
                .mutable_statics
                .iter()
                .find(|c| !serving && c.owners.contains(callee))
            {
                Some(c) => Err(format!(
                    "crate {} keeps mutable static {}{}, which in one process keeps its value \
                     from one call to the next, where each call had a fresh process",
                    c.crate_name,
                    c.statics[0],
                    match c.statics.len() {
                        1 => String::new(),
                        n => format!(" (and {} more)", n - 1),
                    }
                )),
                None => Ok(()),
            }
        })
        // A server's stdio is the process's, not a call's: no lock of it
        // waits for a call.
        .and_then(
            |()| match lock.as_ref().filter(|_| !serving).or(hook.as_ref()) {
                Some(why) => Err(why.clone()),
                None => Ok(()),
            },
        );
        found.in_process.insert(callee.clone(), verdict);
    }
    let mains = std::iter::once("main".to_string()).chain(
        facts
            .callees
            .iter()
            .map(|c| fmerge_contract::main_symbol(c)),
    );
    found.not_inline = mains
        .into_iter()
        .find_map(|main| first_reaching(graph, &main, &mut paths, drives_an_executor));
    for callee in &facts.callees {
        let now = format!("{}.now", fmerge_contract::handle_symbol(callee));
        if let Some(why) = first_reaching(graph, &now, &mut paths, needs_its_runtimes_thread) {
            found.handle_elsewhere.insert(callee.clone(), why);
        }
    }
    Ok(())
}

/// Whether `path` works only on a thread of a multi-threaded tokio runtime
/// (`block_in_place`) or of a `LocalSet` (`spawn_local`): where a
/// template's server polls `handle`, not on every thread that calls it.
fn needs_its_runtimes_thread(path: &str, _local: bool) -> Option<&'static str> {
    let last = path.rsplit("::").next().unwrap_or(path);
    (path.starts_with("tokio::") && matches!(last, "block_in_place" | "spawn_local")).then_some(
        "which works only on a thread of the runtime its template's server polls it on, \
         where the caller's thread may be a current-thread runtime's (actix-web's)",
    )
}

/// Whether `path` runs an async executor on the calling thread, when the
/// user's own code calls it (registry crates run theirs on threads of
/// their own, as `reqwest::blocking` does).
fn drives_an_executor(path: &str, local: bool) -> Option<&'static str> {
    let last = path.rsplit("::").next().unwrap_or(path);
    let executor = [
        "tokio::",
        "futures_executor::",
        "async_std::",
        "smol::",
        "pollster::",
    ]
    .iter()
    .any(|p| path.starts_with(p));
    (local && executor && (last == "block_on" || last.starts_with("enter_runtime"))).then_some(
        "which drives an async executor on the calling thread, where a callee's blocking \
         client (`reqwest::blocking`) refuses to run",
    )
}

/// Each function's demangled path, made once.
struct Paths<'a> {
    graph: &'a CallGraph,
    made: Vec<Option<String>>,
}

impl<'a> Paths<'a> {
    fn new(graph: &'a CallGraph) -> Self {
        Paths {
            graph,
            made: vec![None; graph.names.len()],
        }
    }

    fn of(&mut self, id: Id) -> &str {
        let graph = self.graph;
        self.made[id as usize]
            .get_or_insert_with(|| inherent(&ir::demangle(&graph.names[id as usize])))
    }

    /// `path (crate c)`, for people.
    fn describe(&mut self, id: Id) -> String {
        let krate = self
            .graph
            .crate_of(id)
            .map(|c| format!(" (crate {})", c.name))
            .unwrap_or_default();
        format!("{}{krate}", self.of(id))
    }
}

/// std's own code (`std::…`, `core::…`, `alloc::…`, and their impls such
/// as `<alloc::string::String as core::fmt::Display>::fmt`, or for a
/// primitive type: `<usize as core::fmt::Display>::fmt`).
pub fn is_std(path: &str) -> bool {
    let mut p = path;
    loop {
        let next = p
            .trim_start_matches(['<', '&', '*', '[', '('])
            .trim_start_matches("mut ")
            .trim_start_matches("const ")
            .trim_start_matches("dyn ");
        if next == p {
            break;
        }
        p = next;
    }
    let std_path = |p: &str| {
        ["std::", "core::", "alloc::"]
            .iter()
            .any(|s| p.starts_with(s))
    };
    let head = p
        .split([' ', '>', ']', ';', ',', ')', '<'])
        .next()
        .unwrap_or("");
    if PRIMITIVES.contains(&head) || p.starts_with(')') {
        return true;
    }
    if !head.is_empty() && !head.contains("::") {
        // A type parameter (`<&T as core::fmt::Display>::fmt`, as legacy
        // mangling names a blanket impl): the impl is the trait's crate's.
        return p
            .split_once(" as ")
            .is_some_and(|(_, t)| std_path(t.trim_start_matches(['<', '&'])));
    }
    std_path(p)
}

/// Rust's primitive types, whose impls are std's.
const PRIMITIVES: &[&str] = &[
    "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f16", "f32", "f64", "f128", "!",
];

/// What a function the callee reaches does to the whole process, if it
/// does: the consequence, worded for the reason. `local`: the referrer is
/// one of the user's own crates (a thread or an abort counts there only).
fn acts_on_process(path: &str, local: bool) -> Option<&'static str> {
    let last = path.rsplit("::").next().unwrap_or(path);
    let c = |names: &[&str]| names.contains(&path);
    let sys = |name: &str| path.starts_with("std::sys::") && last == name;
    if c(&["std::process::exit", "exit", "_exit", "_Exit", "quick_exit"])
        // std and registry crates abort on a broken invariant alone (a
        // panic while panicking), often in std's code inlined into theirs:
        // the user's own call counts.
        || (c(&["std::process::abort", "abort"]) && local)
    {
        return Some("which would end the caller's process");
    }
    if path == "fork" {
        return Some("which would copy the caller's process, every thread but this one lost");
    }
    if path.starts_with("execv") || path.starts_with("execl") {
        return Some("which would replace the caller's process");
    }
    if c(&[
        "std::env::set_var",
        "std::env::remove_var",
        "std::env::_set_var",
        "std::env::_remove_var",
        "setenv",
        "unsetenv",
        "putenv",
        "clearenv",
    ]) || sys("setenv")
        || sys("unsetenv")
    {
        return Some("which would change the caller's environment");
    }
    if c(&["std::env::vars", "std::env::vars_os"]) {
        return Some("which would list the caller's environment, not the callee's own");
    }
    if sets_the_panic_hook(path) {
        return Some("which would change the panic hook of the caller's process");
    }
    if c(&[
        "log::set_logger",
        "log::set_boxed_logger",
        "log::set_logger_racy",
        "tracing_core::dispatcher::set_global_default",
    ]) {
        return Some(
            "which sets the logger of the whole process once: in the caller's process it would \
             take the caller's logs, or fail where the caller or an earlier call set one",
        );
    }
    if c(&["sigaction", "signal", "sysv_signal", "bsd_signal", "sigset"]) {
        return Some(
            "which sets a signal's handler for the whole process: SIGTERM (or the signal it \
             takes) would no longer do to the caller's process what the caller's own code has \
             it do",
        );
    }
    if starts_a_thread(path) && local {
        return Some("which would start a thread that outlives the call in the caller's process");
    }
    None
}

/// Whether the function at `path` is written in crate `krate`: its path
/// (or the type of its `<… as …>` impl) starts with the crate's name.
fn written_in(path: &str, krate: &str) -> bool {
    let path = path.trim_start_matches('<');
    path.split("::").next() == Some(krate)
}

/// Whether `path` is std's start of a thread.
fn starts_a_thread(path: &str) -> bool {
    ["std::thread::spawn", "std::thread::Builder::spawn"]
        .iter()
        .any(|p| path.starts_with(p))
        || path.starts_with("std::thread::lifecycle::spawn")
        // std's spawn inlined: the OS thread's creation.
        || (path.starts_with("std::sys::") && path.ends_with("::Thread::new"))
}

/// std's functions that set or take the process's panic hook.
fn sets_the_panic_hook(path: &str) -> bool {
    let last = path.rsplit("::").next().unwrap_or(path);
    ["set_hook", "take_hook", "update_hook"].contains(&last)
        && (path.starts_with("std::panic::") || path.starts_with("std::panicking::"))
}

/// The first function reachable from the callee's `main` that acts on the
/// whole process, as the reason.
fn process_wide(
    graph: &CallGraph,
    callee: &str,
    serving: bool,
    paths: &mut Paths,
) -> Option<String> {
    first_reaching(
        graph,
        &fmerge_contract::main_symbol(callee),
        paths,
        |path, local| acts_on_process(path, local).filter(|_| !(serving && starts_a_thread(path))),
    )
}

/// The first reference, from a function reachable from `root` that is not
/// std's own code, to a function `acts` judges (given whether the referrer
/// is one of the user's crates), as the reason.
fn first_reaching(
    graph: &CallGraph,
    root: &str,
    paths: &mut Paths,
    acts: impl Fn(&str, bool) -> Option<&'static str>,
) -> Option<String> {
    let root = graph.get(root)?;
    let mut seen = BTreeSet::from([root]);
    let mut todo = VecDeque::from([root]);
    while let Some(at) = todo.pop_front() {
        let from_std = is_std(paths.of(at));
        // The user's own code: a function of one of their crates, not a
        // registry crate's generic code their crate instantiated (which
        // keeps its own crate's path).
        let local = graph
            .crate_of(at)
            .is_some_and(|c| c.local && written_in(paths.of(at), &c.name));
        for reference in &graph.refs[at as usize] {
            let to = reference.to;
            if !from_std && let Some(why) = acts(paths.of(to), local) {
                let verb = match reference.how {
                    Ref::Call => "calls",
                    _ => "refers to",
                };
                let to = paths.of(to).to_string();
                return Some(format!("{} {verb} {to}, {why}", paths.describe(at)));
            }
            if seen.insert(to) {
                todo.push_back(to);
            }
        }
    }
    None
}

/// A function that takes one of std's stream locks and, while it may hold
/// it, refers (through std's code the graph defines) to a function that is
/// neither std's nor a memory routine, as the reason.
fn holds_a_lock(graph: &CallGraph, paths: &mut Paths) -> Option<String> {
    // The stream names are in either mangling: demangle those alone.
    let locks: BTreeSet<Id> = (0..graph.names.len() as Id)
        .filter(|&id| {
            let name = &graph.names[id as usize];
            ["Stdin", "Stdout", "Stderr"]
                .iter()
                .any(|s| name.contains(s))
                && LOCKS.contains(&paths.of(id))
        })
        .collect();
    if locks.is_empty() {
        return None;
    }
    for holder in 0..graph.names.len() as Id {
        let refs = &graph.refs[holder as usize];
        let Some(lock) = refs
            .iter()
            .find(|r| r.how == Ref::Call && locks.contains(&r.to))
        else {
            continue;
        };
        // Breadth first: the holder's own references are named first.
        let mut seen: BTreeSet<Id> = locks.clone();
        let mut todo: VecDeque<Id> = refs.iter().map(|r| r.to).collect();
        while let Some(to) = todo.pop_front() {
            if !seen.insert(to) {
                continue;
            }
            let path = paths.of(to).to_string();
            let last = path.rsplit("::").next().unwrap_or(&path);
            if MEMORY.contains(&last) || ALLOCATOR.iter().any(|a| last.starts_with(a)) {
                continue;
            }
            if !is_std(&path) {
                let lock = paths.of(lock.to).to_string();
                return Some(format!(
                    "{} takes {lock} and may call {path} while it holds it; in one process, a \
                     callee using that stream on another thread would wait for that lock forever",
                    paths.describe(holder),
                ));
            }
            if graph.defined[to as usize] {
                todo.extend(graph.refs[to as usize].iter().map(|r| r.to));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn std_code_is_told_from_the_users_by_its_path() {
        for path in [
            "std::io::stdio::Stdin::lock",
            "core::ptr::drop_in_place<UserFilter::Query>",
            "<alloc::string::String as core::fmt::Display>::fmt",
            "<usize as core::fmt::Display>::fmt",
            "<&T as core::fmt::Display>::fmt",
            "<[u8] as core::fmt::Debug>::fmt",
            "<() as std::process::Termination>::report",
        ] {
            assert!(is_std(path), "{path} is std's");
        }
        for path in [
            "UserFilter::main",
            "<redis::errors::ServerError as core::fmt::Display>::fmt",
            "<&UserFilter::Query as core::fmt::Debug>::fmt",
            "<T as serde::Serialize>::serialize",
            "exit",
        ] {
            assert!(!is_std(path), "{path} is not std's");
        }
    }

    #[test]
    fn an_inherent_method_reads_alike_in_both_manglings() {
        let v0 = "_RNvMs1_NtNtCsjrHSEGnQ3l9_3std2io5stdioNtB5_5Stdin4lock";
        assert_eq!(inherent(&ir::demangle(v0)), "std::io::stdio::Stdin::lock");
        let impl_of_trait = "<std::io::stdio::StdinLock as std::io::BufRead>::read_line";
        assert_eq!(inherent(impl_of_trait), impl_of_trait);
    }

    #[test]
    fn a_registry_crates_generic_code_is_not_the_users_own() {
        assert!(written_in("price::handle::{{closure}}", "price"));
        assert!(written_in(
            "<price::Item as core::fmt::Debug>::fmt",
            "price"
        ));
        assert!(!written_in(
            "hyper_util::client::legacy::client::Client<C,B>::send_request::{{closure}}",
            "price"
        ));
        assert!(!written_in(
            "<alloc::vec::Vec<price::Item> as core::ops::drop::Drop>::drop",
            "price"
        ));
    }

    #[test]
    fn an_abort_or_a_thread_counts_in_the_users_own_crates_only() {
        let thread = "std::sys::thread::unix::Thread::new";
        assert!(acts_on_process(thread, true).is_some());
        assert!(acts_on_process(thread, false).is_none());
        assert!(acts_on_process("std::process::abort", true).is_some());
        assert!(acts_on_process("std::process::abort", false).is_none());
        assert!(acts_on_process("std::process::exit", false).is_some());
        assert!(acts_on_process("execvp", false).is_some());
        assert!(acts_on_process("std::sys::env::unix::setenv", false).is_some());
        assert!(acts_on_process("std::env::var_os", true).is_none());
    }
}
