//! The options of one merge. Each option is defined once, as a field of a
//! struct deriving clap's `Args` ([`Merge`] and the others of `flags.rs`):
//! that field is its flag, its help, its check, its default, its key in a
//! group file ([`layer`]) and, unless [`NOT_IN_KEY`] names it, its line in
//! the merge cache's key ([`Options::key_inputs`], serialized by serde from
//! the same struct, so an option that changes the binary cannot be left out
//! of the key). Options with a few named values are enums
//! ([`values`]).
//!
//! Flags and keys are spelled alike: `--opt-level` and `opt-level =`.

mod build;
mod flags;
pub mod layer;
pub mod plan;
pub mod stack;
pub mod values;

pub use build::BuildArgs;
pub use flags::{
    CargoFlags, DryRunFlags, ImageFlags, Merge, OutDir, OutputFlags, SharedStaticFlags, heading,
};

use anyhow::{Result, bail};
use fmerge_cargo::{resolve, workspace};
use fmerge_ir as ir;
use fmerge_ship::stack_in::StackIn;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The merge options that do not change the merged binary, each for a
/// reason; every other one is in the merge cache's key.
pub const NOT_IN_KEY: [&str; 6] = [
    // The cache lives in the target dir: another one has its own.
    "target-dir",
    // An extra file beside the binary; the cache checks that it is there.
    "emit-ll",
    // How fast, and how much is printed: the same binary.
    "jobs",
    "quiet",
    // Whether to redo the merge at all.
    "force",
    // A check before the build; the merge of the same members is the same.
    "allow-uncalled",
];

/// The name of a merge that is not given one: `<caller>-merged`, the
/// caller by its OpenFaaS name (a CamelCase package `WriteHomeTimeline`
/// gives `write-home-timeline-merged`, a name an image and a service take).
/// A group file and the command line share it.
pub fn default_name(caller: &str) -> String {
    format!("{}-merged", fmerge_contract::function_name(caller))
}

/// What to merge, and how: the caller, where the functions are, and the
/// merge options (the command line over the group file, resolved), which
/// it reads as its own fields (`opts.opt_level`).
#[derive(Debug, Clone)]
pub struct Options {
    pub caller: String,
    pub manifest_path: Option<PathBuf>,
    /// Functions from separate cargo projects (a stack.yml's handlers, or
    /// several `--manifest-path`s), the caller first: built in a workspace
    /// fmerge writes (see fmerge_cargo::workspace).
    pub sources: Vec<workspace::FunctionProject>,
    /// The of-watchdog mode of each watchdog-process member whose stack
    /// entry says it (by function name); a member not listed runs in
    /// `streaming`, of-watchdog's default.
    pub modes: BTreeMap<String, String>,
    /// The variables the caller's stack entry sets: a watchdog-process
    /// member's process does not see them, as its own pod did not.
    pub caller_env: Vec<String>,
    pub merge: Merge,
}

impl std::ops::Deref for Options {
    type Target = Merge;
    fn deref(&self) -> &Merge {
        &self.merge
    }
}

impl std::ops::DerefMut for Options {
    fn deref_mut(&mut self) -> &mut Merge {
        &mut self.merge
    }
}

impl Options {
    /// `caller` merged with `callees`, every other option at its default.
    pub fn new(caller: &str, callees: &[&str]) -> Self {
        let mut merge: Merge = layer::defaults();
        merge.callees = callees.iter().map(|c| c.to_string()).collect();
        Options::of(caller, merge)
    }

    /// `caller`'s group with `merge`'s options, nothing yet said of where
    /// its functions are.
    fn of(caller: &str, merge: Merge) -> Self {
        Options {
            caller: caller.into(),
            manifest_path: None,
            sources: Vec::new(),
            modes: BTreeMap::new(),
            caller_env: Vec::new(),
            merge,
        }
    }

    /// `caller`'s group with `merge`'s options, each member's project read
    /// from its entry in `stack` (its `handler:` folder), as `fmerge build -f
    /// STACK` finds them; a member of-watchdog runs in a mode fmerge does
    /// not merge, or whose `fprocess` is no binary of its package, is
    /// refused.
    pub fn in_stack(caller: &str, merge: Merge, stack: &StackIn) -> Result<Self> {
        let mut opts = Options::of(caller, merge);
        let mut modes = BTreeMap::new();
        opts.sources = opts
            .members()
            .map(|name| {
                let entry = stack.entry(name)?;
                let project = workspace::entry_project(
                    &entry.name,
                    &entry.handler,
                    entry.template.as_deref(),
                )?;
                // How of-watchdog runs a plain-`main` function (its
                // Dockerfile's or environment's `fprocess` and `mode`),
                // checked before cargo starts.
                if let Some(watchdog) = &entry.watchdog {
                    let own = workspace::own_package(&project)?;
                    if !own.on_runtime {
                        watchdog.check(
                            &entry.name,
                            &own.name,
                            &own.bins,
                            own.http_server.as_deref(),
                        )?;
                        modes.insert(entry.name.clone(), watchdog.mode.clone());
                    }
                }
                Ok(project)
            })
            .collect::<Result<_>>()?;
        opts.modes = modes;
        opts.caller_env = stack
            .entry(caller)?
            .deployment
            .environment
            .keys()
            .cloned()
            .collect();
        Ok(opts)
    }

    /// `caller`'s group with `merge`'s options, its functions in the cargo
    /// workspace of `manifests` (none: the one around the current
    /// directory), or, with several, each in the one project that has it.
    pub fn in_workspace(caller: &str, merge: Merge, manifests: &[PathBuf]) -> Result<Self> {
        let mut opts = Options::of(caller, merge);
        if manifests.len() > 1 {
            let members: Vec<String> = opts.members().map(String::from).collect();
            opts.sources = workspace::locate(&members, manifests)?;
        } else {
            opts.manifest_path = manifests.first().cloned();
        }
        Ok(opts)
    }

    /// The options' checks clap cannot make alone (the rewrites' syntax
    /// against the members, the name); nothing is built.
    pub fn check(&self) -> Result<Vec<ir::Rewrite>> {
        let name = self.label();
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            bail!(
                "--name {name:?} is not a file name\nfix: give a name of letters, digits and dashes"
            );
        }
        let members: Vec<String> = self.members().map(String::from).collect();
        let rewrites = self
            .rewrite
            .iter()
            .map(|r| ir::Rewrite::parse(r, &members))
            .collect::<Result<Vec<_>>>()?;
        for r in &rewrites {
            if r.callee.as_deref() == Some(self.caller.as_str()) {
                bail!(
                    "--rewrite {}: {} is the caller, and fmerge never changes the caller's code\nfix: scope the rewrite to a callee (CALLEE:FROM=TO)",
                    r.from,
                    self.caller
                );
            }
        }
        Ok(rewrites)
    }

    /// The group's functions, the caller first ([`resolve::members`]).
    pub fn members(&self) -> impl Iterator<Item = &str> + Clone {
        resolve::members(&self.caller, &self.callees)
    }

    /// The merge's name: `--name`, or `<caller>-merged`.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| default_name(&self.caller))
    }

    /// The LTO mode asked for, if any (else the profile's).
    pub fn lto(&self) -> Option<ir::Lto> {
        self.merge.lto.map(Into::into)
    }

    /// The options' part of the merge cache's key: the caller, then one
    /// line for each merge option but [`NOT_IN_KEY`]'s. `lto` is the mode
    /// the merge runs (the option, or what the profile asks for).
    pub fn key_inputs(&self, lto: ir::Lto) -> Vec<String> {
        let serde_json::Value::Object(fields) =
            serde_json::to_value(&self.merge).expect("options serialize")
        else {
            unreachable!("a struct");
        };
        let mut lines = vec![format!("caller {:?}", self.caller)];
        for (key, value) in fields {
            if NOT_IN_KEY.contains(&key.as_str()) {
                continue;
            }
            let value = match key.as_str() {
                "lto" => format!("{lto:?}"),
                _ => value.to_string(),
            };
            lines.push(format!("{key} {value}"));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args as _, Command, FromArgMatches as _};

    /// `Merge` from a command line, as `fmerge build CALLER ...` reads it.
    fn parse(args: &[String]) -> Merge {
        let command = Merge::augment_args(Command::new("build").no_binary_name(true));
        let matches = command.try_get_matches_from(args).unwrap();
        Merge::from_arg_matches(&matches).unwrap()
    }

    /// Every flag of `Merge` (as clap lists them: none can be forgotten),
    /// given a value other than its default, changes the key unless
    /// [`NOT_IN_KEY`] names it.
    #[test]
    fn every_option_that_changes_the_binary_changes_the_cache_key() {
        let base = Options::new("front", &["back"]);
        let key = base.key_inputs(ir::Lto::Off);
        let command = Merge::augment_args(Command::new("build"));
        let mut seen = 0;
        for arg in command.get_arguments() {
            let mut args = vec!["back".to_string()];
            let name = match arg.get_long() {
                Some(long) => {
                    args.push(format!("--{long}"));
                    long.to_string()
                }
                None => arg.get_id().to_string(),
            };
            if arg.get_action().takes_values() {
                let default = arg.get_default_values().first().cloned();
                let example = arg
                    .get_possible_values()
                    .into_iter()
                    .map(|v| v.get_name().to_string())
                    .find(|v| Some(std::ffi::OsStr::new(v)) != default.as_deref())
                    .unwrap_or_else(|| "1".to_string());
                args.push(example);
            }
            let changed = Options {
                merge: parse(&args),
                ..base.clone()
            };
            let lto = changed.lto().unwrap_or(ir::Lto::Off);
            let in_key = changed.key_inputs(lto) != key;
            assert_eq!(
                in_key,
                !NOT_IN_KEY.contains(&name.as_str()),
                "{name}: changing it {} the cache key",
                if in_key { "changes" } else { "does not change" }
            );
            seen += 1;
        }
        assert!(seen >= 12, "every flag was tried");
        // The caller is in the key, and the LTO the merge runs, also when the profile chose it.
        assert_ne!(
            Options::new("other", &["back"]).key_inputs(ir::Lto::Off),
            key
        );
        assert_ne!(base.key_inputs(ir::Lto::Fat), key);
    }

    #[test]
    fn a_merge_without_a_name_is_named_after_its_caller() {
        assert_eq!(default_name("compose-post"), "compose-post-merged");
        assert_eq!(
            default_name("WriteHomeTimeline"),
            "write-home-timeline-merged"
        );
    }

    #[test]
    fn every_key_not_in_the_cache_key_is_a_flag() {
        let fields = serde_json::to_value(Options::new("a", &[]).merge).unwrap();
        for key in NOT_IN_KEY {
            assert!(fields.get(key).is_some(), "{key} is no merge option");
        }
    }
}
