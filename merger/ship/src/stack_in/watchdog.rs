//! How of-watchdog runs a function of a stack file built by a Dockerfile
//! (`lang: dockerfile`): its `fprocess` and `mode`, read from the
//! Dockerfile's `ENV` lines (never built), under the stack entry's
//! `environment:`, which wins as it does at run time.
//!
//! A function in the watchdog-process form is a plain `main` that
//! of-watchdog starts per request; the merged binary must be started the
//! same way (the same mode, `fprocess` the merged binary), so the image and
//! `stack.merged.yml` need both, and a mode fmerge does not merge is
//! refused before cargo starts ([`Watchdog::check`]).

use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::path::Path;

/// of-watchdog's mode when none is set (its `config.go`).
pub const DEFAULT_MODE: &str = "streaming";

/// The modes whose function is a process per request, which fmerge merges.
pub const PROCESS_MODES: [&str; 2] = ["streaming", "serializing"];

/// The mode whose function serves HTTP itself, started once, which fmerge
/// merges too.
pub const HTTP_MODE: &str = "http";

/// One function's of-watchdog settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watchdog {
    /// The command of-watchdog starts (`fprocess`, or `function_process`,
    /// which of-watchdog reads after it and so wins); `None` when neither
    /// is set.
    pub fprocess: Option<String>,
    /// `mode`, else [`DEFAULT_MODE`].
    pub mode: String,
    /// Where they were read, for people ("its Dockerfile", …).
    pub from: String,
}

impl Watchdog {
    /// From the image's environment (its Dockerfile's `ENV`s) and the
    /// stack's, which wins.
    pub fn from_env(
        image: &BTreeMap<String, String>,
        stack: &BTreeMap<String, String>,
    ) -> Option<Watchdog> {
        let said = |env: &BTreeMap<String, String>| KEYS.iter().any(|k| env.contains_key(*k));
        let from = match (said(image), said(stack)) {
            (false, false) => return None,
            (true, false) => "its Dockerfile",
            (false, true) => "its stack environment",
            (true, true) => "its Dockerfile and stack environment",
        };
        let get = |key: &str| stack.get(key).or_else(|| image.get(key)).cloned();
        Some(Watchdog {
            fprocess: get("function_process").or_else(|| get("fprocess")),
            mode: get("mode")
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| DEFAULT_MODE.into()),
            from: from.into(),
        })
    }

    /// The program `fprocess` starts: its first word (of-watchdog splits
    /// it at spaces), by its file name.
    pub fn program(&self) -> Option<&str> {
        let first = self.fprocess.as_deref()?.split(' ').next()?;
        Path::new(first).file_name()?.to_str()
    }

    /// What follows the program in `fprocess` (its arguments), as written.
    pub fn arguments(&self) -> &str {
        self.fprocess
            .as_deref()
            .and_then(|f| f.split_once(' '))
            .map_or("", |(_, rest)| rest)
    }

    /// Refuses, before cargo starts, a function fmerge cannot merge as
    /// of-watchdog runs it: a mode whose function is neither a process per
    /// request nor its own server, a mode that does not fit its code
    /// (`http_server`: the crate its package serves HTTP with, if any), no
    /// `fprocess`, or an `fprocess` that starts no binary of the function's
    /// package (`bins`: the package's binary names).
    pub fn check(
        &self,
        function: &str,
        package: &str,
        bins: &[String],
        http_server: Option<&str>,
    ) -> Result<()> {
        let mode = self.mode.as_str();
        match (mode == HTTP_MODE, http_server) {
            (true, None) => bail!(
                "function {function} runs in of-watchdog mode `http` ({}), but its package {package} depends on no crate \
                 fmerge knows to serve HTTP with, so fmerge cannot tell how it listens\n\
                 fix: leave {function} out of the group (calls to it keep going through the gateway)",
                self.from
            ),
            (false, Some(server)) if PROCESS_MODES.contains(&mode) => bail!(
                "function {function} runs in of-watchdog mode `{mode}` ({}), one process per request, but its package \
                 {package} serves HTTP itself (it depends on `{server}`)\n\
                 fix: set `mode=http` and `upstream_url` where of-watchdog reads them (its Dockerfile's ENV or its stack \
                 environment), as it must run to answer at all, or leave {function} out of the group",
                self.from
            ),
            _ => {}
        }
        if !PROCESS_MODES.contains(&mode) && mode != HTTP_MODE {
            let what = match mode {
                "static" => "of-watchdog serves files, with no function process",
                "inproc" => "of-watchdog runs a Go handler inside itself",
                "afterburn" => "of-watchdog keeps one process for many requests (a retired mode)",
                _ => "a mode of-watchdog does not know",
            };
            bail!(
                "function {function} runs in of-watchdog mode `{mode}` ({}): {what}, a form fmerge does not merge yet; \
                 fmerge merges functions of-watchdog starts per request (mode streaming or serializing) or proxies to \
                 (mode http)\n\
                 fix: leave {function} out of the group (calls to it keep going through the gateway)",
                self.from
            );
        }
        let Some(program) = self.program() else {
            bail!(
                "function {function} sets of-watchdog's mode ({}) but no `fprocess`, so nothing says which binary of-watchdog runs\n\
                 fix: set `ENV fprocess=<its binary>` in its Dockerfile (or `fprocess:` in its stack environment)",
                self.from
            );
        };
        if !bins.iter().any(|b| b == program) {
            bail!(
                "function {function}: of-watchdog runs `{program}` (fprocess {:?}, from {}), which is not a binary of its package {package} (it has {})\n\
                 fix: merge the package whose binary is `{program}` (point its `handler:` at that package's folder), or correct `fprocess`",
                self.fprocess.as_deref().unwrap_or_default(),
                self.from,
                match bins {
                    [] => "none".to_string(),
                    _ => bins.join(", "),
                }
            );
        }
        Ok(())
    }
}

/// The variables that say how of-watchdog runs the function: the merged
/// image sets its own (its binary, the caller's mode).
pub const KEYS: [&str; 3] = ["fprocess", "function_process", "mode"];

/// The environment the image of the function whose `handler:` folder is
/// `handler` starts with: its Dockerfile's `ENV`s when it is built by
/// `lang: dockerfile`, its template's (`template`: the folder of its
/// `lang`, as `faas-cli template pull` puts it) when it is built from one,
/// else none that fmerge can read.
pub fn image_env(
    handler: &Path,
    lang: Option<&str>,
    template: Option<&Path>,
) -> Result<BTreeMap<String, String>> {
    let dockerfile = match (lang, template) {
        (Some("dockerfile"), _) => handler.join("Dockerfile"),
        (_, Some(template)) => template.join("Dockerfile"),
        _ => return Ok(BTreeMap::new()),
    };
    if !dockerfile.is_file() {
        return Ok(BTreeMap::new());
    }
    let text = std::fs::read_to_string(&dockerfile).map_err(|e| {
        anyhow::anyhow!(
            "cannot read {}: {e}\nfix: make it readable (fmerge reads its ENV lines, never builds it)",
            dockerfile.display()
        )
    })?;
    Ok(dockerfile_env(&text))
}

/// How of-watchdog runs the function whose package is in `dir` when no
/// stack file says it: from the `Dockerfile` beside its `Cargo.toml`, as
/// faas-cli's `dockerfile` template lays a function out; `None` without one,
/// or with one that sets neither `fprocess` nor `mode`.
pub fn beside_package(dir: &Path) -> Result<Option<Watchdog>> {
    Ok(Watchdog::from_env(
        &image_env(dir, Some("dockerfile"), None)?,
        &BTreeMap::new(),
    ))
}

/// The environment a Dockerfile's final stage sets with `ENV` (a stage
/// `FROM` an earlier stage starts with that stage's), as BuildKit reads
/// it: `ENV k=v k2="v 2"` or `ENV k v w`, keywords in any case, `\` line
/// continuations, comment lines. Values are taken as written: `$VAR` is
/// not expanded.
pub fn dockerfile_env(text: &str) -> BTreeMap<String, String> {
    let mut stages: Vec<(Option<String>, BTreeMap<String, String>)> = Vec::new();
    for line in logical_lines(text) {
        let line = line.trim();
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        match word.to_ascii_lowercase().as_str() {
            "from" => {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let image = words.iter().find(|w| !w.starts_with("--"));
                let base = image.and_then(|image| {
                    let image = image.to_ascii_lowercase();
                    stages
                        .iter()
                        .rev()
                        .find(|(name, _)| name.as_deref() == Some(image.as_str()))
                        .map(|(_, env)| env.clone())
                });
                let name = match words.as_slice() {
                    [.., as_, name] if as_.eq_ignore_ascii_case("as") => {
                        Some(name.to_ascii_lowercase())
                    }
                    _ => None,
                };
                stages.push((name, base.unwrap_or_default()));
            }
            "env" => {
                if stages.is_empty() {
                    stages.push((None, BTreeMap::new()));
                }
                let env = &mut stages.last_mut().expect("a stage").1;
                env.extend(env_pairs(rest));
            }
            _ => {}
        }
    }
    stages.pop().map(|(_, env)| env).unwrap_or_default()
}

/// The instructions of a Dockerfile: comment lines dropped, lines ending
/// in `\` joined with the next.
fn logical_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// The pairs of one `ENV`'s arguments.
fn env_pairs(args: &str) -> Vec<(String, String)> {
    let words = shell_words(args);
    let first_is_pair = args
        .split_whitespace()
        .next()
        .is_some_and(|w| w.contains('='));
    if !first_is_pair {
        // `ENV key value with spaces`: one key, the rest its value.
        let (key, value) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        let value = shell_words(value.trim()).join(" ");
        return vec![(key.to_string(), value)];
    }
    words
        .into_iter()
        .filter_map(|w| {
            let (k, v) = w.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// Words split at unquoted whitespace, quotes removed: `"…"` (where `\`
/// escapes a character), `'…'`, and `\` outside quotes.
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (Some(q), c) if c == q => quote = None,
            (None, '\\') => word.get_or_insert_default().extend(chars.next()),
            // In double quotes `\` escapes only `"`, `$` and itself.
            (Some('"'), '\\') => {
                let w = word.get_or_insert_default();
                match chars.next() {
                    Some(next @ ('"' | '$' | '\\')) => w.push(next),
                    Some(next) => w.extend(['\\', next]),
                    None => w.push('\\'),
                }
            }
            (_, c) => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    words
}
