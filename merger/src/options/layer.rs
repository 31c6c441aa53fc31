//! A TOML file (a group file) under a command line, for any command's
//! options struct, parsed once, by clap, with the command's own
//! definition. The file's keys are the flags' names (a nested table's,
//! such as `[image]`, those of the flags it holds). The file becomes
//! arguments (`File::args`: `--flag=value`, one per item of a list,
//! `--flag` for a switch set `true`, a path, a flag with a path
//! `value_hint`, made relative to the file), the command line's own
//! follow them (`ExplicitFlags::args`), and clap's rules make the merge:
//! every value is checked by its flag's parser, in clap's words; a flag
//! given again wins (the later one, the command line's); a list collects
//! the file's items, then the command line's. A flag the environment sets
//! is not read from the file: the environment wins over the file, and the
//! file over a default (the flags' own, [`defaults`]).

use anyhow::{Result, anyhow, bail};
use clap::error::{ContextKind, ContextValue};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches, ValueHint};
use std::ffi::{OsStr, OsString};
use std::path::Path;

/// `T` with every flag at its default: clap's `default_value`s, the one
/// place defaults are written.
pub fn defaults<T: Args + FromArgMatches>() -> T {
    let matches = T::augment_args(Command::new("defaults").no_binary_name(true))
        .try_get_matches_from(std::iter::empty::<String>())
        .expect("no flags are valid flags");
    T::from_arg_matches(&matches).expect("the defaults make the options")
}

/// A command line as clap read it (one command's matches): the flags it
/// gave, by flag or by environment variable (either wins over a file),
/// and their values as written. The default is an empty command line.
#[derive(Debug, Clone, Default)]
pub struct ExplicitFlags {
    matches: Option<ArgMatches>,
}

impl ExplicitFlags {
    pub fn of(matches: &ArgMatches) -> ExplicitFlags {
        ExplicitFlags {
            matches: Some(matches.clone()),
        }
    }

    /// Where the value of `id` came from, if it has one.
    fn source(&self, id: &str) -> Option<ValueSource> {
        let matches = self.matches.as_ref()?;
        // Only an id the matches hold is asked about (another one panics).
        matches
            .ids()
            .any(|held| held == id)
            .then(|| matches.value_source(id))
            .flatten()
    }

    /// Whether the command line gave `id` as a flag.
    pub fn by_flag(&self, id: &str) -> bool {
        self.source(id) == Some(ValueSource::CommandLine)
    }

    /// Whether the environment gave `id` (its flag's `env` variable).
    fn by_env(&self, id: &str) -> bool {
        self.source(id) == Some(ValueSource::EnvVariable)
    }

    /// The flags the command line gave, as arguments of `command` ([`flag`]),
    /// each value as it was written.
    fn args(&self, command: &Command) -> Vec<OsString> {
        let Some(matches) = &self.matches else {
            return Vec::new();
        };
        let mut args = Vec::new();
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if !self.by_flag(id) {
                continue;
            }
            if arg.get_action().takes_values() {
                let values = matches.get_raw(id).into_iter().flatten();
                args.extend(values.map(|value| flag(arg, Some(value))));
            } else {
                args.push(flag(arg, None));
            }
        }
        args
    }
}

/// The name of `arg` in a file: its long flag without the dashes (for a
/// positional argument, its id in kebab-case).
fn key(arg: &Arg) -> String {
    arg.get_long()
        .map(str::to_string)
        .unwrap_or_else(|| arg.get_id().as_str().replace('_', "-"))
}

/// `arg` as one argument of [`File::command`]: `--key=value`, or `--key`
/// for a switch.
fn flag(arg: &Arg, value: Option<&OsStr>) -> OsString {
    let mut flag = OsString::from(format!("--{}", key(arg)));
    if let Some(value) = value {
        flag.push("=");
        flag.push(value);
    }
    flag
}

/// How a file is read: the command whose flags it holds, its nested
/// tables (each a name and the command of the flags under it), the keys
/// it may not hold (the command line's only), and where it is.
pub struct File<'a> {
    pub command: &'a Command,
    pub tables: &'a [(&'a str, &'a Command)],
    pub cli_only: &'a [&'a str],
    pub path: &'a Path,
    pub table: &'a toml::Table,
}

/// One argument from the file ([`flag`]), with the key it is under
/// (`image.tag`) and its value as the file writes it, for an error to name.
struct FromFile {
    arg: OsString,
    long: String,
    text: Option<String>,
    name: String,
    item: toml::Value,
}

impl FromFile {
    /// `arg` given `text` (none: a switch) by the key `name` of the file.
    fn new(arg: &Arg, name: &str, item: &toml::Value, text: Option<String>) -> FromFile {
        FromFile {
            arg: flag(arg, text.as_deref().map(OsStr::new)),
            long: key(arg),
            text,
            name: name.to_string(),
            item: item.clone(),
        }
    }
}

/// The command line (`given`) over `file`: the file's arguments, then the
/// command line's, parsed together by the file's command.
pub fn over<T: FromArgMatches>(given: &ExplicitFlags, file: &File) -> Result<T> {
    let from_file = file.args(given)?;
    let args = from_file
        .iter()
        .map(|a| a.arg.clone())
        .chain(given.args(file.command));
    let matches = file
        .parser()
        .try_get_matches_from(args)
        .map_err(|e| file.explain(&e, &from_file))?;
    T::from_arg_matches(&matches).map_err(|e| file.explain(&e, &from_file))
}

impl File<'_> {
    /// The command that reads the file and the command line together:
    /// [`File::command`], where a flag given again replaces the first
    /// (a list adds to it), and a positional argument (or one with a short
    /// flag only) also has the long flag of its key, as the file gives it.
    fn parser(&self) -> Command {
        let mut command = self
            .command
            .clone()
            .no_binary_name(true)
            .args_override_self(true);
        let unnamed: Vec<String> = self
            .command
            .get_arguments()
            .filter(|a| a.get_long().is_none())
            .map(|a| a.get_id().to_string())
            .collect();
        for id in unnamed {
            command = command.mut_arg(id, |arg| {
                let long = key(&arg);
                arg.long(long)
            });
        }
        command
    }

    /// The file's keys as arguments, checked against the flags there are.
    fn args(&self, given: &ExplicitFlags) -> Result<Vec<FromFile>> {
        let nested = |arg: &&Arg| {
            self.tables.iter().any(|(_, flags)| {
                flags
                    .get_arguments()
                    .any(|inner| inner.get_id() == arg.get_id())
            })
        };
        let top: Vec<&Arg> = self
            .command
            .get_arguments()
            .filter(|a| !nested(a))
            .collect();
        let mut args = Vec::new();
        self.table_args(given, self.table, "", &top, &mut args)?;
        Ok(args)
    }

    /// The arguments of `table`, whose keys (after `prefix`) are `flags`,
    /// and at the top, the nested tables.
    fn table_args(
        &self,
        given: &ExplicitFlags,
        table: &toml::Table,
        prefix: &str,
        flags: &[&Arg],
        args: &mut Vec<FromFile>,
    ) -> Result<()> {
        let path = self.path.display();
        let tables: &[(&str, &Command)] = if prefix.is_empty() { self.tables } else { &[] };
        for (written, value) in table {
            let name = format!("{prefix}{written}");
            if let Some((_, command)) = tables.iter().find(|(t, _)| t == written) {
                let toml::Value::Table(inner) = value else {
                    bail!(
                        "{path}: {name} = {value}: [{name}] is a table of flags\nfix: write them under a line `[{name}]`, e.g. `{name} = true` there"
                    );
                };
                let flags: Vec<&Arg> = command.get_arguments().collect();
                self.table_args(given, inner, &format!("{name}."), &flags, args)?;
                continue;
            }
            let allowed = |k: &str| !self.cli_only.contains(&format!("{prefix}{k}").as_str());
            let Some(arg) = flags
                .iter()
                .find(|a| key(a) == *written)
                .filter(|_| allowed(written))
            else {
                let mut keys: Vec<String> = flags
                    .iter()
                    .map(|a| key(a))
                    .chain(tables.iter().map(|(t, _)| t.to_string()))
                    .filter(|k| allowed(k))
                    .collect();
                keys.sort();
                bail!(
                    "{path} is not a valid merge group: unknown field `{name}`\nfix: use one of {}",
                    keys.iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            };
            if given.by_env(arg.get_id().as_str()) {
                continue;
            }
            let list = matches!(arg.get_action(), ArgAction::Append);
            let items = match value {
                toml::Value::Array(items) if list => items.iter().collect(),
                toml::Value::Array(_) => bail!(
                    "{path}: {name} = {value}: {name} takes one value, not a list\nfix: give {name} one value"
                ),
                one => vec![one],
            };
            for item in items {
                args.extend(self.arg(arg, &name, item)?);
            }
        }
        Ok(())
    }

    /// `item`, the value of `arg` under `name`, as an argument: none for a
    /// switch set `false`.
    fn arg(&self, arg: &Arg, name: &str, item: &toml::Value) -> Result<Option<FromFile>> {
        let path = self.path.display();
        let switch = !arg.get_action().takes_values();
        let text = match item {
            toml::Value::Boolean(on) if switch => {
                return Ok(on.then(|| FromFile::new(arg, name, item, None)));
            }
            _ if switch => bail!(
                "{path}: {name} = {item}: {name} is a switch, true or false\nfix: write {name} = true, or leave it out"
            ),
            toml::Value::String(text) => text.clone(),
            toml::Value::Array(_) | toml::Value::Table(_) => bail!(
                "{path}: {name} = {item}: a flag's value is a string, a number or a boolean\nfix: give {name} such a value"
            ),
            other => other.to_string(),
        };
        let is_path = matches!(
            arg.get_value_hint(),
            ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
        );
        let text = if is_path && Path::new(&text).is_relative() {
            let base = self.path.parent().unwrap_or(Path::new("."));
            base.join(&text).display().to_string()
        } else {
            text
        };
        Ok(Some(FromFile::new(arg, name, item, Some(text))))
    }

    /// Clap's error on the file's arguments, naming the key and its value
    /// in the file, and its fix, if it has one.
    fn explain(&self, e: &clap::Error, from_file: &[FromFile]) -> anyhow::Error {
        let (cause, fix) = clap_cause(e);
        let said = |kind| match e.get(kind) {
            Some(ContextValue::String(s)) => Some(s.as_str()),
            _ => None,
        };
        // `--opt-level <OPT_LEVEL>`: the flag, then its value's name.
        let long = said(ContextKind::InvalidArg)
            .and_then(|arg| arg.strip_prefix("--"))
            .map(|arg| arg.split([' ', '=']).next().unwrap_or(arg));
        let value = said(ContextKind::InvalidValue);
        let path = self.path.display();
        let culprit = from_file.iter().find(|a| {
            Some(a.long.as_str()) == long && (value.is_none() || a.text.as_deref() == value)
        });
        match culprit {
            Some(FromFile { name, item, .. }) => {
                let fix = fix.unwrap_or_else(|| {
                    format!("give {name} a valid value, as `fmerge build --help` lists")
                });
                anyhow!("{path}: {name} = {item}: {cause}\nfix: {fix}")
            }
            None => {
                let fix = fix.unwrap_or_else(|| {
                    "check the file's keys against `fmerge build --help`".to_string()
                });
                anyhow!("{path}, with the command line: {cause}\nfix: {fix}")
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A flag read from an environment variable every process has.
    #[derive(clap::Args, Debug)]
    struct Probe {
        #[arg(long, env = "PATH")]
        search: Option<String>,
    }

    /// `Probe` of the command line `cli` over a file holding `search = "file"`.
    fn probe(cli: Option<&[&str]>) -> Option<String> {
        let command = Probe::augment_args(Command::new("probe").no_binary_name(true));
        let given = match cli {
            Some(cli) => ExplicitFlags::of(&command.clone().try_get_matches_from(cli).unwrap()),
            None => ExplicitFlags::default(),
        };
        let table: toml::Table = toml::from_str("search = \"file\"").unwrap();
        let file = File {
            command: &command,
            tables: &[],
            cli_only: &[],
            path: Path::new("probe.toml"),
            table: &table,
        };
        over::<Probe>(&given, &file).unwrap().search
    }

    #[test]
    fn the_environment_wins_over_a_file_and_a_flag_over_both() {
        let env = std::env::var("PATH").expect("PATH is set");
        assert_eq!(probe(Some(&[])), Some(env), "set by its variable");
        assert_eq!(probe(Some(&["--search", "cli"])).as_deref(), Some("cli"));
        // The file alone (no command line read): the file's.
        assert_eq!(probe(None).as_deref(), Some("file"));
    }
}
