//! fmerge-cargo drives cargo and the Rust toolchain for fmerge, with no LLVM
//! in it: the toolchain, the functions' cargo build with per-crate bitcode and
//! the native libraries they link, the final native link, the merge cache, the
//! compiled-object cache and atomic outputs, and the shim that process-form
//! functions' merged binaries link.

pub mod artifact;
pub mod cache;
pub mod emit;
pub mod native;
pub mod objects;
pub mod profile;
pub mod resolve;
pub mod shim;
pub mod suggest;
pub mod toolchain;
pub mod workspace;
