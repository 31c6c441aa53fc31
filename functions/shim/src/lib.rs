//! The shim linked into a merged binary of watchdog-process functions.
//!
//! Each member is an ordinary `fn main()` run once per request by of-watchdog
//! and calls the others over HTTP through the gateway, with whatever client
//! it likes. The shim keeps those calls inside the pod without touching the
//! functions' code:
//! - [`gateway`] knows the gateway's names and addresses, and the
//!   `interpose` module (merged builds only) redirects `connect`s to them to an
//!   in-process stand-in;
//! - [`server`] is that stand-in: a call to a member runs the member as
//!   of-watchdog would ([`mod@member`]): in this process on a thread of its
//!   own where fmerge allows it ([`inproc`]), else in a process of its own
//!   forked from the binary's start ([`zygote`]); a call to a member that
//!   serves HTTP itself (of-watchdog's `http` mode) goes to its server,
//!   started in this process ([`servers`]), or, for a handler library whose
//!   `handle` fmerge exports, to that `handle`, called directly
//!   ([`handles`]); anything else is relayed to the real gateway ([`relay`]);
//! - at start, a constructor forks the warm server the launcher asked for
//!   ([`warm`]: later starts of the caller are its forks), forks that
//!   zygote, and runs the member named by [`RUN_MEMBER_VAR`] instead of the
//!   caller's `main`.
//!
//! Only std: fmerge compiles `src/` with a bare `rustc` against its own
//! generated `table.rs` (see that file for the interface).
//!
//! What the merged binary's link must give the shim: the std of the same
//! rustc, each callee's C `main` under `fmerge.main.<name>` (the caller's
//! stays `main`) and, where fmerge lets it run in the caller's process, its
//! entry `fmerge.run.<name>` ([`inproc`]), and `connect`, `getaddrinfo`,
//! `getenv`, `secure_getenv` and `pthread_create` exported from the
//! executable (linker-scripts/process.ver), so that a shared library such
//! as libcurl binds to these definitions and not to libc's.

use std::ffi::c_void;

pub mod cgi;
pub mod deadlines;
// The merge contract's own source, as a module: the shim is compiled alone,
// std only, and the `<FUNCTION>__KEY` rule must be the contract's, not a
// copy (fmerge writes the file beside the shim's sources, at this path).
#[allow(dead_code)]
#[path = "../../contract/src/lib.rs"]
mod contract;
pub mod gateway;
pub mod handles;
pub mod http;
pub mod inline;
pub mod inproc;
#[cfg(fmerge_merged)]
mod interpose;
pub mod member;
pub mod relay;
pub mod rewrite;
pub mod server;
pub mod servers;
mod sys;
mod table;
pub mod warm;
pub mod wire;
pub mod zygote;

/// The variable that makes the binary run a member instead of the caller:
/// set by the stand-in on the process it spawns for a call.
pub const RUN_MEMBER_VAR: &str = "FMERGE_RUN_MEMBER";

/// One function merged into this binary.
pub struct Member {
    /// The function's name, as in `/function/<name>`.
    pub name: &'static str,
    /// Its C `main` (renamed by fmerge for every member but the caller).
    pub main: unsafe extern "C" fn(i32, *const *const u8) -> i32,
    /// The of-watchdog mode it was deployed with.
    pub mode: Mode,
    /// Its Rust `main` with std's exit-code mapping, callable in this
    /// process (`fmerge.run.<package>`, the contract's `run_symbol`); `None`
    /// where fmerge found a reason the member needs a process of its own
    /// (the build says it).
    pub run: Option<unsafe extern "C-unwind" fn() -> i32>,
    /// For a member in a handler-library template, its library's `handle`
    /// as fmerge exports it ([`handles`]).
    pub handle: Option<Handle>,
}

/// A handler library's `handle`, as fmerge exports it
/// (`fmerge.handle.<name>`, its `.now` and its `.shape`; written by
/// fmerge's `workspace::handle`, whose code must agree with these types).
pub struct Handle {
    /// Calls `handle` and waits for its reply ([`HandleCall`]).
    pub call: HandleCall,
    /// Starts `handle` on the calling thread, never waiting ([`HandleNow`]);
    /// `None` where fmerge found it reaches what works only on a thread of
    /// its own runtime.
    pub now: Option<HandleNow>,
    /// Which shape `handle` has: 0 for one the entry does not take.
    pub shape: unsafe extern "C" fn() -> i32,
}

impl Handle {
    /// Whether the entry takes its `handle`'s shape: else the member's
    /// server serves it ([`servers`]).
    pub fn takes_its_shape(&self) -> bool {
        // SAFETY: the entry fmerge generated; it only names a constant.
        unsafe { (self.shape)() != 0 }
    }
}

/// Where a handle entry sends the reply: (context, status,
/// `Name: value\r\n` header lines, body).
pub type HandleReply = unsafe extern "C" fn(*mut c_void, u16, *const u8, usize, *const u8, usize);

/// A handler library's `handle` entry: (method, target, `Name: value\r\n`
/// header lines, body, each as pointer and length; the limit in ms, 0 for
/// none; the context and [`HandleReply`]) → 0 replied, 1 `handle`
/// panicked, 2 past the limit, 3 a request `http` does not take.
pub type HandleCall = unsafe extern "C" fn(
    *const u8,
    usize,
    *const u8,
    usize,
    *const u8,
    usize,
    *const u8,
    usize,
    u64,
    *mut c_void,
    HandleReply,
) -> i32;

/// Where [`HandleNow`] gives `handle`'s outcome, once: (context; 0 a
/// reply, 1 `handle` panicked, 3 a request `http` does not take; the
/// reply's status, `Name: value\r\n` header lines and body, valid for
/// reads during the call).
pub type HandleDone =
    unsafe extern "C" fn(*mut c_void, i32, u16, *const u8, usize, *const u8, usize);

/// A handler library's `handle`, started on the calling thread: (method,
/// target, header lines, body, each as pointer and length; the context and
/// [`HandleDone`]) → 0: `done` was called before this returned (`handle`
/// was ready at its first poll); 1: `handle` goes on, on its runtime, and
/// `done` is called once, from another thread, maybe before this returns;
/// 2: not taken here (a `handle` that is not async), `done` never called:
/// [`HandleCall`] from a thread that may wait.
pub type HandleNow = unsafe extern "C" fn(
    *const u8,
    usize,
    *const u8,
    usize,
    *const u8,
    usize,
    *const u8,
    usize,
    *mut c_void,
    HandleDone,
) -> i32;

/// The of-watchdog mode a member was deployed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// of-watchdog's default: stdout is streamed back, always with 200.
    Streaming,
    /// Output buffered; a failure answers 500 with the error.
    Serializing,
    /// The member serves HTTP itself, started once ([`servers`]).
    Http,
}

/// The members of this binary, from the generated table.
pub fn members() -> &'static [Member] {
    table::MEMBERS
}

/// The member whose `main` is the binary's own `main` (empty in cargo builds).
pub fn caller() -> &'static str {
    table::CALLER
}

/// The member called `name`, if it is one.
pub fn member_named(name: &str) -> Option<&'static Member> {
    members().iter().find(|m| m.name == name)
}

/// Gateway base URLs found as literals in the members' code.
pub fn gateway_urls() -> &'static [&'static str] {
    table::GATEWAY_URLS
}

/// Each member's rewrites of its data stores and secrets ([`rewrite`]).
pub fn rewrites() -> &'static [rewrite::Rewrite] {
    table::REWRITES
}

/// The variables the caller's own deployment sets (its stack entry's
/// `environment`): a member's process does not see them, as its own pod
/// did not; its own settings come from `<MEMBER>__KEY`.
pub fn caller_env() -> &'static [&'static str] {
    table::CALLER_ENV
}

/// Environment variables whose values the members use as the gateway's URL.
pub fn gateway_vars() -> &'static [&'static str] {
    table::GATEWAY_VARS
}

/// Whether calls to members may be answered on the calling thread
/// ([`inline`]): fmerge found no member's code driving an async executor.
pub fn inline_calls() -> bool {
    table::INLINE_CALLS
}
