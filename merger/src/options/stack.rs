//! Which stack file, and which of its functions, as faas-cli reads them:
//! `-f` ([`StackFile`]) defaults to `./stack.yaml`, then `./stack.yml`
//! ([`default_stack`]), and `--filter` (a wildcard) or `--regex` selects
//! functions by name ([`Select`]); each defined once, for `build`, `graph`
//! and `plan`.

use super::heading;
use anyhow::{Result, bail};
use clap::{Args, ValueHint};
use std::path::PathBuf;

/// The stack file in the current directory, when there is one: faas-cli's
/// order (`stack.yaml` first, as its `checkAndSetDefaultYaml` does), so that
/// where both exist fmerge and faas-cli read the same file.
pub fn default_stack() -> Option<PathBuf> {
    ["stack.yaml", "stack.yml"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// `-f`, defined once for `build`, `graph` and `plan`.
#[derive(Args, Clone, Debug, Default)]
pub struct StackFile {
    /// A faas-cli stack file: the functions are found by their entries
    /// (`handler:` folder), and `build --image` or `--push` writes a merged
    /// stack beside it [default: ./stack.yaml, then ./stack.yml; for build,
    /// when neither --manifest-path, --config nor --plan says where the
    /// functions are].
    #[arg(short = 'f', long = "yaml", value_name = "STACK", value_hint = ValueHint::FilePath,
          help_heading = heading::INPUT)]
    pub yaml: Option<PathBuf>,
}

/// `--filter` and `--regex`, defined once for `build --all`, `graph` and `plan`.
#[derive(Args, Clone, Debug, Default)]
pub struct Select {
    /// Only the stack's functions whose name matches this wildcard (`*` for
    /// any characters), as faas-cli's --filter.
    #[arg(long, value_name = "WILDCARD", conflicts_with = "regex", help_heading = heading::INPUT)]
    pub filter: Option<String>,
    /// Only the stack's functions whose name this regular expression
    /// matches (anywhere in it), as faas-cli's --regex.
    #[arg(long, value_name = "REGEX", help_heading = heading::INPUT)]
    pub regex: Option<String>,
}

impl Select {
    /// Whether any selection is given.
    pub fn is_some(&self) -> bool {
        self.filter.is_some() || self.regex.is_some()
    }

    /// The names of `names` selected: all, without --filter or --regex.
    pub fn apply(&self, names: Vec<String>) -> Result<Vec<String>> {
        let keep: Box<dyn Fn(&str) -> bool> = match (&self.filter, &self.regex) {
            (Some(filter), _) => {
                let filter = filter.clone();
                Box::new(move |name| wildcard(&filter, name))
            }
            (None, Some(regex)) => match regex::Regex::new(regex) {
                Ok(re) => Box::new(move |name| re.is_match(name)),
                Err(e) => bail!(
                    "--regex {regex:?} is not a regular expression: {e}\nfix: give a regular expression (Rust's regex syntax, as Go's)"
                ),
            },
            (None, None) => return Ok(names),
        };
        let kept: Vec<String> = names.iter().filter(|n| keep(n)).cloned().collect();
        if kept.is_empty() {
            bail!(
                "no function of the stack matches --filter/--regex (it has {})\nfix: give a wildcard or a regular expression that names some of them",
                names.join(", ")
            );
        }
        Ok(kept)
    }
}

/// Whether `name` matches `pattern` whole, `*` matching any characters (go-glob's rule).
fn wildcard(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == name;
    }
    if !name.starts_with(first) || !name[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    name.len() >= first.len() + last.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_and_regex_select_as_faas_cli_does() {
        assert!(wildcard("compose-*", "compose-post"));
        assert!(wildcard("*-get-*", "social-graph-get-followers"));
        assert!(!wildcard("compose", "compose-post"));
        assert!(!wildcard("a*a", "a"));
        let names = || vec!["compose-post".to_string(), "url-shorten".to_string()];
        let select = |filter: Option<&str>, regex: Option<&str>| Select {
            filter: filter.map(str::to_string),
            regex: regex.map(str::to_string),
        };
        assert_eq!(
            select(Some("url-*"), None).apply(names()).unwrap(),
            ["url-shorten"]
        );
        assert_eq!(
            select(None, Some("post$")).apply(names()).unwrap(),
            ["compose-post"]
        );
        let none = select(Some("x*"), None).apply(names()).unwrap_err();
        assert!(
            none.to_string()
                .contains("no function of the stack matches")
        );
        assert_eq!(select(None, None).apply(names()).unwrap().len(), 2);
    }
}
