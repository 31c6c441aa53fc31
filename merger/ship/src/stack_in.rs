//! A faas-cli `stack.yml` as input (`fmerge build -f stack.yml CALLER
//! CALLEE...`): where each function's code is (its `handler:` folder), what
//! it is deployed with, and the merged stack written back.
//!
//! The merged stack is the input with the caller's entry replaced by the
//! merged image's (see [`merge_into`] for the rules); every other entry,
//! and every other key, is kept as written, so `${…}` values are left for
//! faas-cli to substitute on deploy exactly as before.

mod watchdog;

pub use watchdog::{DEFAULT_MODE, Watchdog, beside_package, dockerfile_env, image_env};

pub use crate::stack_out::Deployment;
use crate::stack_out::{CalleeEnv, StackSpec};
use anyhow::{Context as _, Result, bail};
use fmerge_cargo::artifact;
use serde_yaml_ng::{Mapping, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The label that declares a function an entry point of the application
/// (what its front end or clients call): `fmerge plan` keeps its own
/// deployment whatever it merges. A label because faas-cli passes labels
/// on to the deployment (and `faas-cli describe` shows them) and checks
/// their shape, where a key of fmerge's own would be dropped silently.
pub const ENTRY_LABEL: &str = "com.openfaas.fmerge.entry";

/// The annotation by which OpenFaaS's connectors (cron-connector,
/// kafka-connector, …) find the functions they invoke from outside the
/// application: `fmerge plan` keeps such a function's deployment too.
pub const CONNECTOR_TOPIC: &str = "topic";

/// A loaded stack file.
pub struct StackIn {
    pub path: PathBuf,
    doc: Value,
}

/// One function's entry.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub name: String,
    /// The `handler:` folder, absolute.
    pub handler: PathBuf,
    pub deployment: Deployment,
    /// Declared an entry point ([`ENTRY_LABEL`] is `"true"`).
    pub entry: bool,
    /// How of-watchdog runs it (`fprocess`, `mode`), when its Dockerfile
    /// (`lang: dockerfile`), its template's or its environment says.
    pub watchdog: Option<Watchdog>,
    /// The folder of its `lang`'s template (`template/<lang>` beside the
    /// stack file, as `faas-cli template pull` puts it), if there is one:
    /// what builds a function whose handler is a library.
    pub template: Option<PathBuf>,
}

impl StackIn {
    pub fn load(path: &Path) -> Result<StackIn> {
        let doc: Value = artifact::read_parsed(
            path,
            |text| serde_yaml_ng::from_str(text),
            || {
                format!(
                    "cannot read the stack file {}\nfix: check the -f path",
                    path.display()
                )
            },
            || {
                format!(
                    "{} is not valid YAML\nfix: correct it (`faas-cli generate -f {}` shows the same error)",
                    path.display(),
                    path.display()
                )
            },
        )?;
        let provider = doc
            .get("provider")
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str);
        if provider != Some("openfaas") {
            bail!(
                "{}: provider.name is {provider:?}, and faas-cli only deploys `openfaas`\nfix: set `provider: {{name: openfaas}}`",
                path.display()
            );
        }
        if !doc.get("functions").is_some_and(Value::is_mapping) {
            bail!(
                "{} has no `functions:` map, so it is not a faas-cli stack file\nfix: pass the stack.yml that lists your functions under `functions:`",
                path.display()
            );
        }
        Ok(StackIn {
            path: path.canonicalize()?,
            doc,
        })
    }

    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("/"))
    }

    pub fn names(&self) -> Vec<String> {
        self.doc["functions"]
            .as_mapping()
            .into_iter()
            .flat_map(|m| m.keys())
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    }

    /// The entry of function `name`.
    pub fn entry(&self, name: &str) -> Result<Entry> {
        let Some(f) = self.doc["functions"].get(name) else {
            bail!(
                "{}",
                fmerge_cargo::resolve::unknown_function(
                    name,
                    &self.names(),
                    &self.path.display().to_string(),
                    ", or give another stack file with -f"
                )
            );
        };
        let handler = f.get("handler").and_then(Value::as_str).with_context(|| {
            format!(
                "{}: function {name} has no `handler:` folder, so fmerge cannot find its code\nfix: set its `handler:` to the folder that holds its Cargo.toml",
                self.path.display()
            )
        })?;
        let handler = self.dir().join(handler);
        if !handler.join("Cargo.toml").is_file() {
            bail!(
                "{}: function {name}'s handler {} holds no Cargo.toml\n\
                 fix: point `handler:` at the function's cargo package (fmerge merges Rust functions), or create one with `fmerge template && faas-cli new --lang rust-fmerge {name}`",
                self.path.display(),
                handler.display()
            );
        }
        let mut entry = Entry {
            name: name.to_string(),
            handler: handler.canonicalize()?,
            ..Entry::default()
        };
        let d = &mut entry.deployment;
        for file in strings(f.get("environment_file")) {
            let path = self.dir().join(&file);
            let env: Value = artifact::read_parsed(
                &path,
                |text| serde_yaml_ng::from_str(text),
                || {
                    format!(
                        "{}: cannot read environment_file {}",
                        self.path.display(),
                        path.display()
                    )
                },
                || format!("{} is not valid YAML", path.display()),
            )?;
            d.environment.extend(map(env.get("environment")));
        }
        d.environment.extend(map(f.get("environment")));
        d.secrets = strings(f.get("secrets"));
        d.labels = map(f.get("labels"));
        entry.entry = match d.labels.get(ENTRY_LABEL).map(String::as_str) {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => bail!(
                "{}: function {name}'s label {ENTRY_LABEL} is `{other}`, and it declares an entry point with \"true\" only\nfix: write `{ENTRY_LABEL}: \"true\"`, or drop the label",
                self.path.display()
            ),
        };
        d.annotations = map(f.get("annotations"));
        self.check_quantities(name)?;
        d.limits = map(f.get("limits"));
        d.requests = map(f.get("requests"));
        d.constraints = strings(f.get("constraints"));
        let lang = f.get("lang").and_then(Value::as_str);
        entry.template = lang
            .filter(|l| *l != "dockerfile")
            .map(|l| self.dir().join("template").join(l))
            .filter(|t| t.is_dir());
        let image = watchdog::image_env(&entry.handler, lang, entry.template.as_deref())?;
        entry.watchdog = Watchdog::from_env(&image, &entry.deployment.environment);
        // The image's `ENV`s are the function's environment too, under the
        // stack's: a merged image is fmerge's own and carries none of them,
        // so the merged stack must (a callee's `exec_timeout`, a caller's
        // `RUST_LOG`). The watchdog's own keys are the merged image's.
        for (key, value) in image {
            if !watchdog::KEYS.contains(&key.as_str()) {
                entry.deployment.environment.entry(key).or_insert(value);
            }
        }
        Ok(entry)
    }

    /// Every `limits`/`requests` memory and cpu of function `name` parses as
    /// a Kubernetes quantity: one that does not is an error naming the
    /// function and the field, never a limit silently taken as unset.
    pub fn check_quantities(&self, name: &str) -> Result<()> {
        let f = &self.doc["functions"][name];
        for field in ["limits", "requests"] {
            let values = map(f.get(field));
            for resource in ["memory", "cpu"] {
                if let Some(text) = values.get(resource) {
                    crate::quantity::parse(text.trim()).with_context(|| {
                        format!(
                            "{}: function {name}, {field}.{resource}",
                            self.path.display()
                        )
                    })?;
                }
            }
        }
        Ok(())
    }

    /// [`Self::check_quantities`] of every function.
    pub fn check_every_quantity(&self) -> Result<()> {
        self.names()
            .iter()
            .try_for_each(|n| self.check_quantities(n))
    }

    /// The stack with `merged` (the caller's new entry) in place of the
    /// caller's, and without the callees when `remove_callees`.
    pub fn merged(&self, spec: &StackSpec, remove_callees: bool) -> Result<String> {
        self.merged_all(std::slice::from_ref(spec), remove_callees, &[])
    }

    /// The stack with several merged functions (`fmerge build --plan`): each
    /// group's caller entry becomes its merged image; a callee's entry goes
    /// when it is in `dropped` (the plan's: only its groups call it), and
    /// with `remove_callees` every callee's does, unless it is another
    /// group's caller.
    pub fn merged_all(
        &self,
        specs: &[StackSpec],
        remove_callees: bool,
        dropped: &[String],
    ) -> Result<String> {
        let mut doc = self.doc.clone();
        let functions = doc["functions"].as_mapping_mut().expect("checked in load");
        for spec in specs {
            functions.insert(
                Value::from(spec.members[0].as_str()),
                crate::stack_out::entry(spec)?,
            );
        }
        let callers: BTreeSet<&str> = specs.iter().map(|s| s.members[0].as_str()).collect();
        for callee in specs.iter().flat_map(|s| &s.members[1..]) {
            if (remove_callees || dropped.contains(callee)) && !callers.contains(callee.as_str()) {
                functions.shift_remove(callee.as_str()); // the others keep their order
            }
        }
        Ok(serde_yaml_ng::to_string(&doc)?)
    }
}

/// Folds the members' entries (the caller first) into the merged function's
/// spec:
/// - environment: the caller's as is, each callee's as `<CALLEE>__KEY`
///   (what the runtime reads for a merged callee);
/// - secrets: the union (a callee reading `/var/openfaas/secrets/x` must
///   still find it);
/// - labels, annotations, constraints: the caller's (the merged function is
///   deployed as the caller), plus fmerge's member labels;
/// - limits and requests: for `memory` and `cpu`, the sum of the members'
///   values, since one process now does all their work; when a member sets
///   none, or a value is not a quantity fmerge reads, the caller's is kept
///   and a note says so.
///
/// Returns notes for people.
pub fn merge_into(spec: &mut StackSpec, entries: &[Entry]) -> Vec<String> {
    let mut notes = Vec::new();
    let (caller, callees) = entries.split_first().expect("the caller");
    let (own, out) = (&caller.deployment, &mut spec.deployment);
    out.environment.extend(own.environment.clone());
    for callee in callees {
        let environment = &callee.deployment.environment;
        spec.callee_environment
            .extend(environment.iter().map(|(k, v)| CalleeEnv {
                function: callee.name.clone(),
                key: k.clone(),
                value: v.clone(),
            }));
    }
    let secrets: BTreeSet<String> = out
        .secrets
        .iter()
        .cloned()
        .chain(
            entries
                .iter()
                .flat_map(|e| e.deployment.secrets.iter().cloned()),
        )
        .collect();
    out.secrets = secrets.into_iter().collect();
    out.labels.extend(own.labels.clone());
    out.annotations.extend(own.annotations.clone());
    out.constraints = own.constraints.clone();
    for (field, get) in [
        (
            "limits",
            (|e: &Entry| &e.deployment.limits) as fn(&Entry) -> &BTreeMap<String, String>,
        ),
        ("requests", |e: &Entry| &e.deployment.requests),
    ] {
        let mut totals = get(caller).clone();
        for resource in ["memory", "cpu"] {
            let values: Vec<Option<&String>> =
                entries.iter().map(|e| get(e).get(resource)).collect();
            if values.iter().all(Option::is_none) {
                continue;
            }
            let summed = values
                .iter()
                .map(|v| v.and_then(|v| quantity(v)))
                .collect::<Option<Vec<f64>>>()
                .map(|q| q.iter().sum::<f64>());
            match summed {
                Some(total) => {
                    totals.insert(resource.into(), crate::quantity::format(resource, total));
                }
                None => notes.push(format!(
                    "{field}.{resource}: not every member sets a value fmerge can add up; the merged function keeps the caller's ({})",
                    get(caller).get(resource).map_or("none", String::as_str)
                )),
            }
        }
        match field {
            "limits" => out.limits = totals,
            _ => out.requests = totals,
        }
    }
    notes
}

/// A memory or cpu quantity of stack.yml's: bytes or cores, `None` if it
/// is not one ([`StackIn::entry`] refuses those first).
pub fn quantity(text: &str) -> Option<f64> {
    crate::quantity::parse(text.trim()).ok()
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_mapping)
        .map(|m: &Mapping| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), scalar(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_sequence)
        .map(|s| s.iter().filter_map(scalar).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
