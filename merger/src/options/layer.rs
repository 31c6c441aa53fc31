//! A TOML file (a group file) under a command line, for any command's
//! options struct: the file's keys are the flags' names; each value is
//! checked by the flag's own clap parser (the one check, with clap's
//! words); a value the command line gave wins, a list adds the command
//! line's to the file's, and a path (a flag with a path `value_hint`) is
//! relative to the file. Defaults are the flags' own ([`defaults`]).

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, Command, FromArgMatches, ValueHint, parser::ValueSource};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// `T` with every flag at its default: clap's `default_value`s, the one
/// place defaults are written.
pub fn defaults<T: Args + FromArgMatches>() -> T {
    let matches = T::augment_args(Command::new("defaults").no_binary_name(true))
        .try_get_matches_from(std::iter::empty::<String>())
        .expect("no flags are valid flags");
    T::from_arg_matches(&matches).expect("the defaults make the options")
}

/// The flags a command line gave (by clap id): by flag, or by environment
/// variable. Either wins over a file.
#[derive(Debug, Clone, Default)]
pub struct ExplicitFlags {
    flags: BTreeSet<String>,
    env: BTreeSet<String>,
}

impl ExplicitFlags {
    pub fn of(matches: &clap::ArgMatches) -> ExplicitFlags {
        let from = |source: ValueSource| -> BTreeSet<String> {
            matches
                .ids()
                .filter(|id| matches.value_source(id.as_str()) == Some(source))
                .map(|id| id.to_string())
                .collect()
        };
        ExplicitFlags {
            flags: from(ValueSource::CommandLine),
            env: from(ValueSource::EnvVariable),
        }
    }

    /// Whether the command line or the environment gave `id`.
    pub fn has(&self, id: &str) -> bool {
        self.flags.contains(id) || self.env.contains(id)
    }

    /// Whether the command line gave `id` as a flag.
    pub fn by_flag(&self, id: &str) -> bool {
        self.flags.contains(id)
    }
}

/// How a file is read: the command whose flags it holds, the keys it may
/// not hold (the command line's only), and where it is.
pub struct File<'a> {
    pub command: &'a Command,
    pub cli_only: &'a [&'a str],
    pub path: &'a Path,
    pub table: &'a toml::Table,
}

/// `cli` (the command line, with `given` its flags) over `file`.
pub fn over<T: Serialize + DeserializeOwned>(
    cli: &T,
    given: &ExplicitFlags,
    file: &File,
) -> Result<T> {
    let Value::Object(mut merged) = serde_json::to_value(cli)? else {
        unreachable!("options are a struct");
    };
    layer(&mut merged, given, file, file.table, "")?;
    serde_json::from_value(Value::Object(merged)).with_context(|| {
        format!(
            "{} is not a valid merge group\nfix: its keys are `fmerge build`'s flags without the dashes (`fmerge build --help`); see examples/",
            file.path.display()
        )
    })
}

fn layer(
    merged: &mut Map<String, Value>,
    given: &ExplicitFlags,
    file: &File,
    table: &toml::Table,
    prefix: &str,
) -> Result<()> {
    for (key, value) in table {
        let name = format!("{prefix}{key}");
        let known = merged
            .get(key)
            .filter(|_| !file.cli_only.contains(&name.as_str()));
        let Some(known) = known else {
            let mut keys: Vec<&String> = merged
                .keys()
                .filter(|k| !file.cli_only.contains(&format!("{prefix}{k}").as_str()))
                .collect();
            keys.sort();
            bail!(
                "{} is not a valid merge group: unknown field `{name}`\nfix: use one of {}",
                file.path.display(),
                keys.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        if let (Value::Object(inner), toml::Value::Table(sub)) = (known, value) {
            let mut inner = inner.clone();
            layer(&mut inner, given, file, sub, &format!("{name}."))?;
            merged.insert(key.clone(), Value::Object(inner));
            continue;
        }
        let id = key.replace('-', "_");
        let arg = file
            .command
            .get_arguments()
            .find(|a| a.get_id() == id.as_str())
            .ok_or_else(|| {
                anyhow!(
                    "{name}: no flag of this command reads it\nfix: drop {name} from {}",
                    file.path.display()
                )
            })?;
        let mut value = serde_json::to_value(value)?;
        check(file, arg, &name, &mut value)?;
        let is_list = known.is_array();
        if is_list && !value.is_array() {
            value = Value::Array(vec![value]);
        }
        if given.has(&id) {
            if let (Value::Array(cli), Value::Array(mut from_file)) = (known.clone(), value) {
                from_file.extend(cli);
                merged.insert(key.clone(), Value::Array(from_file));
            }
        } else {
            merged.insert(key.clone(), value);
        }
    }
    Ok(())
}

/// Each scalar of `value` through `arg`'s own parser; paths made relative
/// to the file.
fn check(file: &File, arg: &clap::Arg, name: &str, value: &mut Value) -> Result<()> {
    let base = file.path.parent().unwrap_or(Path::new("."));
    let is_path = matches!(
        arg.get_value_hint(),
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
    );
    let items: Vec<&mut Value> = match value {
        Value::Array(items) => items.iter_mut().collect(),
        one => vec![one],
    };
    for item in items {
        let text = match &*item {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(_) if !arg.get_action().takes_values() => continue,
            other => other.to_string(),
        };
        // The flag's own parser, alone (without its relations to other flags).
        let alone = clap::Arg::new(arg.get_id().clone())
            .long(arg.get_long().unwrap_or(arg.get_id().as_str()).to_string())
            .value_names(arg.get_value_names().unwrap_or_default().to_vec())
            .value_parser(arg.get_value_parser().clone())
            .action(clap::ArgAction::Set);
        let check = Command::new("fmerge")
            .no_binary_name(true)
            .arg(alone)
            .try_get_matches_from([format!(
                "--{}={text}",
                arg.get_long().unwrap_or(arg.get_id().as_str())
            )]);
        if let Err(e) = check {
            let (cause, fix) = clap_cause(&e);
            let fix = fix.unwrap_or_else(|| {
                format!("give {name} a valid value, as `fmerge build --help` lists")
            });
            bail!(
                "{}: {name} = {item}: {cause}\nfix: {fix}",
                file.path.display()
            );
        }
        if is_path && Path::new(&text).is_relative() {
            *item = Value::String(base.join(&text).display().to_string());
        }
    }
    Ok(())
}

/// A clap error's cause on one line, without its `error: ` and the usage
/// after it, and its `fix: ` line if it has one.
fn clap_cause(e: &clap::Error) -> (String, Option<String>) {
    let text = e.render().to_string();
    let mut cause = Vec::new();
    let mut fix = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        match line.strip_prefix("fix: ") {
            Some(f) => fix = Some(f.to_string()),
            None if !line.is_empty() => cause.push(line.trim_start_matches("error: ")),
            None => {}
        }
    }
    (cause.join(" "), fix)
}
