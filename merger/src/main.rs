//! The `fmerge` command: parses the command line, dispatches to one module
//! of [`fmerge::cli`] per command, and renders the outcome: `error: …` then
//! `fix: …` on stderr (and with `--message-format json`, the `finished`
//! record on stdout). Exit codes: 0 success, 1 failure, 2 a usage error
//! (clap's; every bad flag value is one).

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use fmerge::cli;
use fmerge::cli::message::{self, Message, Rendered};
use fmerge::options::layer::Given;
use fmerge::options::values::MessageFormat;
use std::process::ExitCode;

mod version;
/// `fmerge --help`'s examples.
const EXAMPLES: &str = "Examples:
  fmerge build write-home-timeline social-graph-get-followers
  fmerge graph -f functions/stack.yml
  fmerge plan -f functions/stack.yml --max-memory 512Mi
  fmerge build -f functions/stack.yml --all --filter 'compose-*'
  fmerge completions bash > ~/.local/share/bash-completion/completions/fmerge

Exit status: 0 on success, 1 when the command fails, 2 on a usage error
(an unknown flag, a bad value).";

#[derive(Parser)]
#[command(
    name = "fmerge",
    version = version::SHORT,
    about = "Merge Rust OpenFaaS functions at LLVM IR level into one binary, so their RPCs become in-process calls.",
    after_help = EXAMPLES
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
    Graph(Box<cli::graph::GraphArgs>),
    /// Propose the merge groups that serve the objective best (by default the most
    /// expected latency removed per request of the application), and write them as group files.
    Plan(Box<cli::plan::PlanArgs>),
    /// Print a shell completion script for fmerge, e.g. `fmerge completions bash`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// mimalloc for fmerge and, through the overridden `malloc`, for libLLVM: most
/// of a merge is LLVM allocating, and glibc's allocator is the slower one there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        // --help and --version, on stdout.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprint!("{}", message::usage(&e));
            return ExitCode::from(2);
        }
    };
    let parsed = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let given = matches
        .subcommand()
        .map(|(_, sub)| Given::of(sub))
        .unwrap_or_default();
    let format = match &parsed.command {
        Command::Build(args) => args.message_format,
        Command::Graph(args) => args.message_format,
        Command::Plan(args) => args.message_format,
        Command::Template(_) | Command::Completions { .. } => MessageFormat::Human,
    };
    let result = match parsed.command {
        Command::Build(args) => cli::build::run(*args, &given),
        Command::Template(args) => cli::template::run(args),
        Command::Graph(args) => cli::graph::run(*args),
        Command::Plan(args) => cli::plan::run(*args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "fmerge", &mut script);
            // A closed pipe (`| head`) is the reader's choice, not a failure.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            Ok(())
        }
    };
    let json = format == MessageFormat::Json;
    match result {
        Ok(()) => {
            if json {
                Message::Finished {
                    success: true,
                    error: None,
                    fix: None,
                }
                .print();
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let rendered = Rendered::of(&e);
            eprint!("{}", rendered.human());
            if json {
                rendered.finished().print();
            }
            ExitCode::FAILURE
        }
    }
}
