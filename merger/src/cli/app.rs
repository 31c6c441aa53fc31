//! The `fmerge` command line: parses it, dispatches to one module of
//! [`crate::cli`] per command, and renders the outcome: `error: …` then
//! `fix: …` on stderr (and with `--message-format json`, the `finished`
//! record on stdout). Exit codes: 0 success, 1 failure, 2 a usage error
//! (clap's; every bad flag value is one).

use super::error::{self, Rendered};
use crate::message::{self, FinishedRecord};
use crate::options::layer::ExplicitFlags;
use crate::options::values::MessageFormat;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use std::process::ExitCode;

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
    Build(Box<crate::options::BuildArgs>),
    /// Install the faas-cli template `rust-fmerge` into ./template/, so that
    /// `faas-cli new --lang rust-fmerge NAME` makes a function fmerge can merge.
    Template(super::template::TemplateArgs),
    /// The application's static call graph from the functions' code (JSON, DOT, a picture).
    Graph(Box<super::graph::GraphArgs>),
    /// Propose the merge groups that serve the objective best (by default the most
    /// expected latency removed per request of the application), and write them as group files.
    Plan(Box<super::plan::PlanArgs>),
    /// Print a shell completion script for fmerge, e.g. `fmerge completions bash`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

impl Command {
    /// What stdout gets.
    fn message_format(&self) -> MessageFormat {
        match self {
            Command::Build(args) => args.output.message_format,
            Command::Graph(args) => args.output.message_format,
            Command::Plan(args) => args.output.message_format,
            Command::Template(_) | Command::Completions { .. } => MessageFormat::Human,
        }
    }

    /// Runs the command; `explicit`: the flags its command line gave.
    fn run(self, explicit: &ExplicitFlags, version: &'static str) -> anyhow::Result<()> {
        match self {
            Command::Build(args) => super::build::run(*args, explicit),
            Command::Template(args) => super::template::run(args),
            Command::Graph(args) => super::graph::run(*args),
            Command::Plan(args) => super::plan::run(*args),
            Command::Completions { shell } => {
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut command(version), "fmerge", &mut script);
                // A closed pipe (`| head`) is the reader's choice, not a failure.
                let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
                Ok(())
            }
        }
    }
}

/// The command line's definition; `version`: what `--version` says.
fn command(version: &'static str) -> clap::Command {
    Cli::command().version(version)
}

/// `fmerge` with the process's arguments; `version`: what `--version` says.
pub fn main(version: &'static str) -> ExitCode {
    let matches = match command(version).try_get_matches() {
        Ok(matches) => matches,
        // --help and --version, on stdout.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprint!("{}", error::usage(&e));
            return ExitCode::from(2);
        }
    };
    let parsed = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let explicit = matches
        .subcommand()
        .map(|(_, sub)| ExplicitFlags::of(sub))
        .unwrap_or_default();
    let json = parsed.command.message_format() == MessageFormat::Json;
    match parsed.command.run(&explicit, version) {
        Ok(()) => {
            if json {
                message::emit(&FinishedRecord::success());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let rendered = Rendered::of(&e);
            eprint!("{}", rendered.human());
            if json {
                message::emit(&rendered.finished());
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A flag several commands take is one definition flattened into each
    /// (`options::OutputFlags`, `stack::StackFile`, `Select`, `CargoFlags`
    /// ...): the same short, value name and help everywhere. `build --out`
    /// is another option by the same name (the merged binary's folder, as
    /// its help says), so only graph's and plan's are compared.
    #[test]
    fn a_flag_several_commands_take_says_the_same_in_each() {
        let cli = command("test");
        let mut seen: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for sub in cli.get_subcommands() {
            for arg in sub.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if long == "help" || (long == "out" && sub.get_name() == "build") {
                    continue;
                }
                let said = format!(
                    "{:?} {:?} {:?} {:?}",
                    arg.get_short(),
                    arg.get_value_names(),
                    arg.get_help().map(ToString::to_string),
                    arg.get_long_help().map(ToString::to_string),
                );
                seen.entry(long.to_string())
                    .or_default()
                    .push((sub.get_name().to_string(), said));
            }
        }
        let mut shared = 0;
        for (long, uses) in &seen {
            if uses.len() > 1 {
                shared += 1;
                let first = &uses[0].1;
                for (sub, said) in uses {
                    assert_eq!(said, first, "--{long} of {sub} and of {}", uses[0].0);
                }
            }
        }
        // -f, --filter, --regex, --message-format, --out, the cargo flags…
        assert!(shared >= 9, "{seen:?}");
    }
}
