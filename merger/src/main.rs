//! The `fmerge` command: parses the command line and dispatches to one
//! module of [`fmerge::cli`] per command.

use clap::{Parser, Subcommand};
use fmerge::cli;
use std::process::ExitCode;

mod version;

#[derive(Parser)]
#[command(
    name = "fmerge",
    version = version::SHORT,
    about = "Merge Rust OpenFaaS functions at LLVM IR level into one binary, so their RPCs become in-process calls."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Merge CALLER with its CALLEES into one binary (and optionally an image).
    Build(Box<cli::build::BuildArgs>),
    /// Install the faas-cli template `rust-fmerge` into ./template/, so that
    /// `faas-cli new --lang rust-fmerge NAME` makes a function fmerge can merge.
    Template(cli::template::TemplateArgs),
    /// The application's static call graph from the functions' code (JSON, DOT, a picture).
    Graph(cli::graph::GraphArgs),
    /// Propose the merge groups that remove the most gateway hops, and write them as group files.
    Plan(Box<cli::plan::PlanArgs>),
}

/// mimalloc for fmerge and, through the overridden `malloc`, for libLLVM: most
/// of a merge is LLVM allocating, and glibc's allocator is the slower one there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Build(args) => cli::build::run(*args),
        Command::Template(args) => cli::template::run(args),
        Command::Graph(args) => cli::graph::run(args),
        Command::Plan(args) => cli::plan::run(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
