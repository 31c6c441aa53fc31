//! The options of one merge, each defined once ([`OPTIONS`]): its flag, its
//! key in a group file, how the command line and the file combine, how it
//! is checked, and whether it changes the merged binary. The merge cache's
//! key ([`Options::key_inputs`]) is derived from the same rows, so an option
//! that changes the binary cannot be left out of it by forgetting a place.
//!
//! Flags and keys are spelled alike: `--opt-level` and `opt-level =`.

mod flags;

pub use flags::{Cargo, DryRun, Given, ImageFlags, Sharing};

use crate::group::{self, Group};
use anyhow::{Result, bail};
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
    /// Merge a callee no member's code calls (`--allow-uncalled`).
    pub allow_uncalled: bool,
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
            allow_uncalled: false,
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

impl Opt {
    /// An option that is not checked and does not change the binary.
    const fn new(
        flag: &'static str,
        rule: Rule,
        combine: fn(&mut Options, &Given, &Group),
        example: fn(&mut Options),
    ) -> Opt {
        Opt {
            flag,
            rule,
            combine,
            check: None,
            key: None,
            example,
        }
    }

    /// Checked before anything is built, by `check`.
    const fn checked(self, check: fn(&Options) -> Result<()>) -> Opt {
        Opt {
            check: Some(check),
            ..self
        }
    }

    /// Changes the merged binary: `key` is its value in the cache key.
    const fn keyed(self, key: fn(&Options) -> String) -> Opt {
        Opt {
            key: Some(key),
            ..self
        }
    }

    /// Whether a group file has it.
    pub fn in_file(&self) -> bool {
        self.rule != Rule::CliOnly
    }
}

fn cli_wins<T: Clone>(cli: &Option<T>, file: &Option<T>) -> Option<T> {
    cli.clone().or_else(|| file.clone())
}

fn added(file: &[String], cli: &[String]) -> Vec<String> {
    file.iter().chain(cli).cloned().collect()
}

/// Every option of a merge, in `--help`'s order.
pub const OPTIONS: &[Opt] = &[
    // Given to `combine` (it is required).
    Opt::new(
        "caller",
        Rule::CliWins,
        |_, _, _| {},
        |o| o.caller = "other".into(),
    )
    .keyed(|o| o.caller.clone()),
    Opt::new(
        "callees",
        Rule::CliWins,
        |o, cli, file| {
            o.callees = if cli.callees.is_empty() {
                file.callees.clone()
            } else {
                cli.callees.clone()
            }
        },
        |o| o.callees.push("another".into()),
    )
    .keyed(|o| format!("{:?}", o.callees)),
    Opt::new(
        "--name",
        Rule::CliWins,
        |o, cli, file| o.name = cli_wins(&cli.name, &file.name),
        |o| o.name = Some("renamed".into()),
    )
    .checked(|o| {
        let name = o.label();
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            bail!("--name {name:?} is not a file name: use letters, digits and dashes");
        }
        Ok(())
    })
    // Where the kept binary is: a merge under another name is another binary.
    .keyed(|o| format!("{:?}", o.name)),
    Opt::new(
        "--out",
        Rule::CliWins,
        |o, cli, file| o.out = cli_wins(&cli.out, &file.out),
        |o| o.out = Some("elsewhere".into()),
    )
    .keyed(|o| format!("{:?}", o.out)),
    // Not in the key: the cache lives in the target dir, another one has its own.
    Opt::new(
        "--target-dir",
        Rule::CliWins,
        |o, cli, file| o.target_dir = cli_wins(&cli.cargo.target_dir, &file.target_dir),
        |o| o.target_dir = Some("elsewhere".into()),
    ),
    Opt::new(
        "--jobs",
        Rule::CliWins,
        |o, cli, file| o.jobs = cli_wins(&cli.cargo.jobs, &file.jobs),
        |o| o.jobs = Some(3),
    )
    .checked(|o| {
        if o.jobs == Some(0) {
            bail!("-j 0: give at least one job, or leave -j out for one per core");
        }
        Ok(())
    }),
    Opt::new(
        "--quiet",
        Rule::Either,
        |o, cli, file| o.quiet = cli.cargo.quiet || file.quiet.unwrap_or(false),
        |o| o.quiet = true,
    ),
    // Checked by `Options::check`, which parses them against the members.
    Opt::new(
        "--rewrite",
        Rule::Added,
        |o, cli, file| o.rewrites = added(&file.rewrite, &cli.rewrite),
        |o| o.rewrites.push("a=b".into()),
    )
    .keyed(|o| format!("{:?}", o.rewrites)),
    // Not in the key: an extra file beside the binary; the cache checks that it is there.
    Opt::new(
        "--emit-ll",
        Rule::Either,
        |o, cli, file| o.emit_ll = cli.emit_ll || file.emit_ll.unwrap_or(false),
        |o| o.emit_ll = true,
    ),
    Opt::new(
        "--opt-level",
        Rule::CliWins,
        |o, cli, file| o.opt_level = cli_wins(&cli.opt_level, &file.opt_level).unwrap_or(3),
        |o| o.opt_level = 1,
    )
    .checked(|o| {
        anyhow::ensure!(
            o.opt_level <= 3,
            "--opt-level {}: use 0, 1, 2 or 3",
            o.opt_level
        );
        Ok(())
    })
    .keyed(|o| o.opt_level.to_string()),
    Opt::new(
        "--lto",
        Rule::CliWins,
        |o, cli, file| o.lto = cli_wins(&cli.lto, &file.lto),
        |o| o.lto = Some(ir::Lto::Fat),
    )
    .keyed(|o| format!("{:?}", o.lto)),
    Opt::new(
        "--allow-shared-static",
        Rule::Added,
        |o, cli, file| {
            o.allow_shared_static =
                added(&file.allow_shared_static, &cli.sharing.allow_shared_static)
        },
        |o| o.allow_shared_static.push("a::B".into()),
    )
    .keyed(|o| format!("{:?}", o.allow_shared_static)),
    Opt::new(
        "--force",
        Rule::CliOnly,
        |o, cli, _| o.force = cli.force,
        |o| o.force = true,
    ),
    // Not in the key: it lets a build go ahead, and changes nothing it builds.
    Opt::new(
        "--allow-uncalled",
        Rule::CliOnly,
        |o, cli, _| o.allow_uncalled = cli.allow_uncalled,
        |o| o.allow_uncalled = true,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The options that do not change the merged binary, each for a reason
    /// (see its row). Anything else must change the cache key.
    const NOT_IN_KEY: [&str; 6] = [
        "--target-dir",
        "--emit-ll",
        "--jobs",
        "--quiet",
        "--force",
        "--allow-uncalled",
    ];

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
        for option in OPTIONS.iter().filter(|o| o.in_file()) {
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
