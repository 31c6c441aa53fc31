//! The test harness of fmerge and its functions (`fmerge-testkit`).
//!
//! It runs the real thing on 127.0.0.1 only: a `redis-server`, an `nginx`
//! standing in for the OpenFaaS gateway, and each function as its own
//! process, built once per test process with the same flags as the merger
//! uses. Every process is killed and every temp dir removed on `Drop`.
//!
//! - [`free_port`], [`post`], [`get`]: ports and a blocking HTTP client.
//! - [`Redis`]: a throwaway redis-server; [`Redis::dump`] snapshots it.
//! - [`Gateway`]: nginx routing `/function/<name>` to a port, counting calls.
//! - [`Function`]: one function process; [`Stub`]: a fake function.
//! - [`function_binary`]: the unmerged binaries, built once.
//! - [`Deployment`]: socialNetwork behind one gateway, unmerged or with any
//!   set of (merged) binaries.
//! - [`seed_social_network`], [`SAMPLE_POSTS`]: a standard data set.
//! - [`Redis::keys`], [`Redis::zrange`], [`Redis::get`]: what a test reads
//!   back; [`unmerged_replies`]: the unmerged system's replies and state;
//!   [`assert_ok`]: a 200 with the expected body.
//! - [`seed`]: a data set of any size, made through the functions (the
//!   `seed` binary runs it).
//! - [`watchdog`]: functions in the watchdog-process form behind
//!   of-watchdog, in a network and mount namespace of the test's own.
//! - [`layers`]: the check that a crate's modules import only from the
//!   layers below their own (each crate's `tests/layers.rs`).
//!
//! Needs `redis-server` and `nginx` on PATH (Debian: packages `redis-server`
//! and `nginx`); `bash .ci/run` installs them. Without them the tests panic,
//! they never skip.

mod build;
pub mod dataplane;
mod fixture;
mod gateway;
pub(crate) mod http;
mod inspect;
pub mod layers;
pub(crate) mod process;
mod seed;
mod social;
mod store;
pub mod watchdog;

pub use build::*;
pub use fixture::*;
pub use gateway::*;
pub use http::wait_http;
pub use http::{HttpReply, free_port, get, post, try_post};
pub use inspect::*;
pub use process::{CALLER_KEY, Function, Stub, exit_within, need, run_ok, wait_for};
pub use seed::*;
pub use social::*;
pub use store::*;
