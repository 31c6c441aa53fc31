//! The `fmerge` command: a thin layer over the library.

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand};
use fmerge::group::Group;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "fmerge", version, about = "Merge Rust OpenFaaS functions at LLVM IR level into one binary, so their RPCs become in-process calls.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Merge CALLER with its CALLEES into one binary (and optionally an image).
    Build(BuildArgs),
}

#[derive(Args)]
struct BuildArgs {
    /// The function whose main the merged binary runs.
    caller: Option<String>,
    /// Functions the caller invokes, to run in-process.
    callees: Vec<String>,
    /// A merge group file (TOML); command-line options override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The workspace's Cargo.toml (default: the one around the current directory).
    #[arg(long, value_name = "PATH")]
    manifest_path: Option<PathBuf>,
    /// The cargo target dir (default: the workspace's).
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// The merged binary's name [default: <CALLER>-merged].
    #[arg(long)]
    name: Option<String>,
    /// Where the binary goes [default: <target>/fmerge/<NAME>/].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Replace FROM with TO in the string literals of callee code (one callee's with CALLEE:).
    #[arg(long, value_name = "[CALLEE:]FROM=TO")]
    rewrite: Vec<String>,
    /// Also write the merged module as readable LLVM IR (<NAME>.ll).
    #[arg(long)]
    emit_ll: bool,
    /// LLVM optimization level for the merged module [default: 3].
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: Option<u8>,
    /// Parallel jobs for cargo.
    #[arg(short, long)]
    jobs: Option<usize>,
    /// Print only the results.
    #[arg(short, long)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn build(args: BuildArgs) -> Result<()> {
    let group = match &args.config {
        Some(path) => Group::load(path)?,
        None => Group::default(),
    };
    let Some(caller) = args.caller.or(group.caller.clone()) else {
        bail!("no functions to merge: run `fmerge build <CALLER> <CALLEE>...` or `fmerge build --config <group.toml>`");
    };
    let callees = if args.callees.is_empty() { group.callees.clone() } else { args.callees };
    let mut opts = fmerge::Options::new(&caller, &[]);
    opts.callees = callees;
    opts.name = args.name.or(group.name.clone());
    opts.out = args.out.or(group.out.clone());
    opts.manifest_path = args.manifest_path.or(group.manifest_path.clone());
    opts.target_dir = args.target_dir.or(group.target_dir.clone());
    opts.rewrites = group.rewrite.iter().cloned().chain(args.rewrite).collect();
    opts.emit_ll = args.emit_ll || group.emit_ll.unwrap_or(false);
    opts.opt_level = args.opt_level.or(group.opt_level).unwrap_or(3);
    opts.jobs = args.jobs.or(group.jobs);
    opts.quiet = args.quiet;

    let merged = fmerge::build(&opts)?;
    if let Some(ll) = &merged.ll {
        println!("{}", ll.display());
    }
    println!("{}", merged.binary.display());
    Ok(())
}
