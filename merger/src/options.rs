//! The options of one merge, each defined once ([`OPTIONS`]): its flag, its
//! key in a group file, how the command line and the file combine, how it
//! is checked, and whether it changes the merged binary. The merge cache's
//! key ([`Options::key_inputs`]) is derived from the same rows, so an option
//! that changes the binary cannot be left out of it by forgetting a place.
//!
//! Flags and keys are spelled alike: `--opt-level` and `opt-level =`.

use crate::group::{self, Group};
use anyhow::{Result, bail};
use clap::Args;
use fmerge_cargo::workspace;
use fmerge_ir as ir;
use std::path::PathBuf;

/// What to merge, and how: the command line over the group file, resolved.
#[derive(Debug, Clone)]
pub struct Options {
    pub caller: String,
    pub callees: Vec<String>,
    /// The merged binary's name; `<caller>-merged` by default.
    pub name: Option<String>,
    /// Where the binary goes; `<target>/fmerge/<name>/` by default.
    pub out: Option<PathBuf>,
    pub manifest_path: Option<PathBuf>,
    /// The cargo target dir to build in; the workspace's by default.
    pub target_dir: Option<PathBuf>,
    /// `[CALLEE:]FROM=TO`, as given.
    pub rewrites: Vec<String>,
    pub emit_ll: bool,
    pub opt_level: u8,
    /// Whole-program LTO over the merged module; by default, what the
    /// workspace's `profile.release.lto` asks for (see [`ir::Lto`]).
    pub lto: Option<ir::Lto>,
    pub jobs: Option<usize>,
    pub quiet: bool,
    /// Statics (`crate::path::NAME`) or whole crates that merged functions
    /// may share, although each had its own copy unmerged.
    pub allow_shared_static: Vec<String>,
    /// Redo the merge even if nothing changed since the last one.
    pub force: bool,
    /// Functions from separate cargo projects (a stack.yml's handlers, or
    /// several `--manifest-path`s), the caller first: built in a workspace
    /// fmerge writes (see fmerge_cargo::workspace).
    pub sources: Vec<workspace::Source>,
}

impl Options {
    pub fn new(caller: &str, callees: &[&str]) -> Self {
        Options {
            caller: caller.into(),
            callees: callees.iter().map(|c| c.to_string()).collect(),
            name: None,
            out: None,
            manifest_path: None,
            target_dir: None,
            rewrites: Vec::new(),
            emit_ll: false,
            opt_level: 3,
            lto: None,
            jobs: None,
            quiet: false,
            allow_shared_static: Vec::new(),
            force: false,
            sources: Vec::new(),
        }
    }

    /// The command line (`cli`) over the group file: each option by its
    /// row's rule. The caller (and where the functions are) the CLI decides.
    pub fn combine(caller: &str, cli: &Given, file: &Group) -> Options {
        let mut opts = Options::new(caller, &[]);
        for option in OPTIONS {
            (option.combine)(&mut opts, cli, file);
        }
        opts
    }

    /// Every row's check, and the rewrites' syntax; nothing is built.
    pub fn check(&self) -> Result<Vec<ir::Rewrite>> {
        for option in OPTIONS {
            if let Some(check) = option.check {
                check(self)?;
            }
        }
        let members: Vec<String> = std::iter::once(&self.caller)
            .chain(&self.callees)
            .cloned()
            .collect();
        let rewrites = self
            .rewrites
            .iter()
            .map(|r| ir::Rewrite::parse(r, &members))
            .collect::<Result<Vec<_>>>()?;
        for r in &rewrites {
            if r.callee.as_deref() == Some(self.caller.as_str()) {
                bail!(
                    "--rewrite {}: {} is the caller, and fmerge never changes the caller's code; scope the rewrite to a callee",
                    r.from,
                    self.caller
                );
            }
        }
        Ok(rewrites)
    }

    /// The merge's name: `--name`, or `<caller>-merged`.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| group::default_name(&self.caller))
    }

    /// The options' part of the merge cache's key: one line for each option
    /// that changes the binary. `lto` is the mode the merge runs (the
    /// option, or what the profile asks for).
    pub fn key_inputs(&self, lto: ir::Lto) -> Vec<String> {
        let resolved = Options {
            lto: Some(lto),
            ..self.clone()
        };
        OPTIONS
            .iter()
            .filter_map(|o| o.key.map(|key| format!("{} {}", o.flag, key(&resolved))))
            .collect()
    }
}

/// The merge options of `fmerge build`'s command line (beside where the
/// functions are, the group file and the image options).
#[derive(Args, Clone, Debug, Default)]
pub struct Given {
    /// Functions the caller invokes, to run in-process.
    pub callees: Vec<String>,
    /// The merged binary's name [default: <CALLER>-merged].
    #[arg(long)]
    pub name: Option<String>,
    /// Where the binary goes [default: <target>/fmerge/<NAME>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The cargo target dir (default: the workspace's).
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Replace FROM with TO in the string literals of callee code (one callee's with CALLEE:).
    #[arg(long, value_name = "[CALLEE:]FROM=TO")]
    pub rewrite: Vec<String>,
    /// Also write the merged module as readable LLVM IR (<NAME>.ll).
    #[arg(long)]
    pub emit_ll: bool,
    /// LLVM optimization level for the merged module [default: 3].
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: Option<u8>,
    /// Whole-program LTO over the merged module: `fat` (LLVM's lto<O3> across
    /// all crates, on one thread) or `off` (each crate as rustc optimized it)
    /// [default: what profile.release.lto says; cargo's default is off].
    #[arg(long, value_name = "MODE", value_parser = lto_mode())]
    pub lto: Option<ir::Lto>,
    /// Parallel jobs for cargo, and at most this many objects compiled at once
    /// [default: one per core].
    #[arg(short, long)]
    pub jobs: Option<usize>,
    /// Print only the results.
    #[arg(short, long)]
    pub quiet: bool,
    /// Let merged functions share a mutable static of a crate they all link
    /// (`crate::path::NAME`, or a crate name for all of its statics), which
    /// unmerged each had its own copy of. Repeatable.
    #[arg(long, value_name = "STATIC")]
    pub allow_shared_static: Vec<String>,
    /// Redo the merge even when nothing changed since the last one.
    #[arg(long)]
    pub force: bool,
}

/// `--lto`'s values, by [`group::LTO_MODES`] (listed in `--help` and in the error).
fn lto_mode() -> impl clap::builder::TypedValueParser<Value = ir::Lto> {
    use clap::builder::{PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new(group::LTO_MODES.map(|(name, _)| name))
        .map(|name: String| group::parse_lto(&name).expect("one of LTO_MODES"))
}

/// How the command line and the group file combine, per option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The command line's value, else the file's.
    CliWins,
    /// The file's values, then the command line's.
    Added,
    /// Set if either sets it.
    Either,
    /// The command line's only (no key in a file).
    CliOnly,
}

/// One option, defined once.
pub struct Opt {
    /// The flag; the group file's key is the same without the dashes.
    pub flag: &'static str,
    /// Whether a group file has it.
    pub in_file: bool,
    pub rule: Rule,
    /// Sets the option from the command line and the file, by `rule`.
    pub combine: fn(&mut Options, &Given, &Group),
    /// Checked before anything is built.
    pub check: Option<fn(&Options) -> Result<()>>,
    /// For an option that changes the merged binary: its value in the
    /// cache key. `None`: the option does not change the binary.
    pub key: Option<fn(&Options) -> String>,
    /// Gives the option a value other than its default (for the test that
    /// the key follows every option that changes the binary).
    pub example: fn(&mut Options),
}

fn cli_wins<T: Clone>(cli: &Option<T>, file: &Option<T>) -> Option<T> {
    cli.clone().or_else(|| file.clone())
}

fn added(file: &[String], cli: &[String]) -> Vec<String> {
    file.iter().chain(cli).cloned().collect()
}

/// Every option of a merge, in `--help`'s order.
pub const OPTIONS: &[Opt] = &[
    Opt {
        flag: "caller",
        in_file: true,
        rule: Rule::CliWins,
        combine: |_, _, _| {}, // given to `combine` (it is required)
        check: None,
        key: Some(|o| o.caller.clone()),
        example: |o| o.caller = "other".into(),
    },
    Opt {
        flag: "callees",
        in_file: true,
        rule: Rule::CliWins,
        combine: |o, cli, file| {
            o.callees = if cli.callees.is_empty() {
                file.callees.clone()
            } else {
                cli.callees.clone()
            }
        },
        check: None,
        key: Some(|o| format!("{:?}", o.callees)),
        example: |o| o.callees.push("another".into()),
    },
    Opt {
        flag: "--name",
        in_file: true,
        rule: Rule::CliWins,
        combine: |o, cli, file| o.name = cli_wins(&cli.name, &file.name),
        check: Some(|o| {
            let name = o.label();
            if name.is_empty() || name.contains('/') || name.starts_with('.') {
                bail!("--name {name:?} is not a file name: use letters, digits and dashes");
            }
            Ok(())
        }),
        // Where the kept binary is: a merge under another name is another binary.
        key: Some(|o| format!("{:?}", o.name)),
        example: |o| o.name = Some("renamed".into()),
    },
    Opt {
        flag: "--out",
        in_file: true,
        rule: Rule::CliWins,
        combine: |o, cli, file| o.out = cli_wins(&cli.out, &file.out),
        check: None,
        key: Some(|o| format!("{:?}", o.out)),
        example: |o| o.out = Some("elsewhere".into()),
    },
    Opt {
        flag: "--target-dir",
        in_file: true,
        rule: Rule::CliWins,
        combine: |o, cli, file| o.target_dir = cli_wins(&cli.target_dir, &file.target_dir),
        check: None,
        // The cache lives in the target dir: another one has its own.
        key: None,
        example: |o| o.target_dir = Some("elsewhere".into()),
    },
    Opt {
        flag: "--rewrite",
        in_file: true,
        rule: Rule::Added,
        combine: |o, cli, file| o.rewrites = added(&file.rewrite, &cli.rewrite),
        check: None, // `Options::check` parses them against the members
        key: Some(|o| format!("{:?}", o.rewrites)),
        example: |o| o.rewrites.push("a=b".into()),
    },
    Opt {
        flag: "--emit-ll",
        in_file: true,
        rule: Rule::Either,
        combine: |o, cli, file| o.emit_ll = cli.emit_ll || file.emit_ll.unwrap_or(false),
        check: None,
        // An extra file beside the binary; the cache checks that it is there.
        key: None,
        example: |o| o.emit_ll = true,
    },
    Opt {
        flag: "--opt-level",
        in_file: true,
        rule: Rule::CliWins,
        combine: |o, cli, file| {
            o.opt_level = cli_wins(&cli.opt_level, &file.opt_level).unwrap_or(3)
        },
        check: Some(|o| {
            anyhow::ensure!(
                o.opt_level <= 3,
                "--opt-level {}: use 0, 1, 2 or 3",
                o.opt_level
            );
            Ok(())
        }),
        key: Some(|o| o.opt_level.to_string()),
        example: |o| o.opt_level = 1,
    },
    Opt {
        flag: "--lto",
        in_file: true,
        rule: Rule::CliWins,
        combine: |o, cli, file| o.lto = cli_wins(&cli.lto, &file.lto),
        check: None,
        key: Some(|o| format!("{:?}", o.lto)),
        example: |o| o.lto = Some(ir::Lto::Fat),
    },
    Opt {
        flag: "--jobs",
        in_file: true,
        rule: Rule::CliWins,
        combine: |o, cli, file| o.jobs = cli_wins(&cli.jobs, &file.jobs),
        check: Some(|o| {
            if o.jobs == Some(0) {
                bail!("-j 0: give at least one job, or leave -j out for one per core");
            }
            Ok(())
        }),
        key: None,
        example: |o| o.jobs = Some(3),
    },
    Opt {
        flag: "--quiet",
        in_file: true,
        rule: Rule::Either,
        combine: |o, cli, file| o.quiet = cli.quiet || file.quiet.unwrap_or(false),
        check: None,
        key: None,
        example: |o| o.quiet = true,
    },
    Opt {
        flag: "--allow-shared-static",
        in_file: true,
        rule: Rule::Added,
        combine: |o, cli, file| {
            o.allow_shared_static = added(&file.allow_shared_static, &cli.allow_shared_static)
        },
        check: None,
        key: Some(|o| format!("{:?}", o.allow_shared_static)),
        example: |o| o.allow_shared_static.push("a::B".into()),
    },
    Opt {
        flag: "--force",
        in_file: false,
        rule: Rule::CliOnly,
        combine: |o, cli, _| o.force = cli.force,
        check: None,
        key: None,
        example: |o| o.force = true,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The options that do not change the merged binary, each for a reason
    /// (see its row). Anything else must change the cache key.
    const NOT_IN_KEY: [&str; 5] = ["--target-dir", "--emit-ll", "--jobs", "--quiet", "--force"];

    #[test]
    fn every_option_that_changes_the_binary_changes_the_cache_key() {
        let base = Options::new("front", &["back"]);
        let key = base.key_inputs(ir::Lto::Off);
        for option in OPTIONS {
            let mut changed = base.clone();
            (option.example)(&mut changed);
            let lto = changed.lto.unwrap_or(ir::Lto::Off);
            let in_key = changed.key_inputs(lto) != key;
            assert_eq!(
                in_key,
                !NOT_IN_KEY.contains(&option.flag),
                "{}: changing it {} the cache key",
                option.flag,
                if in_key { "changes" } else { "does not change" }
            );
        }
        // The LTO the merge runs is in the key, also when the profile chose it.
        assert_ne!(base.key_inputs(ir::Lto::Fat), key);
    }

    #[test]
    fn every_flag_and_every_file_key_has_one_row() {
        use clap::CommandFactory as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            given: Given,
        }
        let rows: Vec<String> = OPTIONS
            .iter()
            .map(|o| o.flag.trim_start_matches('-').to_string())
            .collect();
        for arg in Cli::command().get_arguments() {
            let name = arg.get_long().unwrap_or(arg.get_id().as_str()).to_string();
            assert_eq!(rows.iter().filter(|r| **r == name).count(), 1, "{name}");
        }
        for option in OPTIONS.iter().filter(|o| o.in_file) {
            let key = option.flag.trim_start_matches('-');
            let value = match key {
                "callees" | "rewrite" | "allow-shared-static" => "[]",
                "emit-ll" | "quiet" => "true",
                "opt-level" | "jobs" => "1",
                "lto" => "\"off\"",
                _ => "\"x\"",
            };
            toml::from_str::<Group>(&format!("{key} = {value}"))
                .unwrap_or_else(|e| panic!("{key} is not a group file key: {e}"));
        }
    }
}
