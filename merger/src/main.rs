//! `fmerge-llvm`, the `fmerge` command the launcher starts with libLLVM on
//! the library path: the command line itself is [`fmerge::cli::app`].

use std::process::ExitCode;

mod version;

/// mimalloc for fmerge and, through the overridden `malloc`, for libLLVM: most
/// of a merge is LLVM allocating, and glibc's allocator is the slower one there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    fmerge::cli::app::main(version::SHORT)
}
