//! The plan file `fmerge plan` writes and `fmerge build --plan` reads.

use super::model::{Model, Plan, bit};
use crate::group::Group;
use anyhow::{Context as _, Result, bail};
use fmerge_cargo::artifact;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A plan file: the stack and the groups.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PlanFile {
    /// The stack file, relative to the plan file.
    pub stack: Option<PathBuf>,
    pub hop_ms: Option<f64>,
    /// `--allow-shared-static`, as the graph was read with: every group's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_shared_static: Vec<String>,
    /// The callees whose own deployment the plan no longer needs (only
    /// their groups call them, in-process): `fmerge build --plan` leaves
    /// them out of the merged stack and keeps every other entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// Per dropped deployment, what shows nothing but its groups needs it
    /// (for people: the build reads `dropped`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<String, String>,
    #[serde(default)]
    pub group: Vec<PlanGroup>,
}

/// One group of a plan file: the keys of a group file it sets.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PlanGroup {
    pub caller: String,
    pub callees: Vec<String>,
    pub name: Option<String>,
    /// The merged pod's `requests` and `limits` (`memory`, `cpu`), as the
    /// plan made them (`fmerge_plan::model::Model::pod`): the merged stack
    /// writes them. Without them the build adds up the members'.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, String>,
}

/// A plan file as read, and its groups as `fmerge build` takes them.
pub struct LoadedPlan {
    pub file: PlanFile,
    pub groups: Vec<Group>,
}

impl PlanFile {
    /// Reads a plan file; each group is checked as a group file would be.
    pub fn load(path: &Path) -> Result<LoadedPlan> {
        let mut plan: PlanFile = artifact::read_parsed(
            path,
            |text| toml::from_str(text),
            || {
                format!(
                    "cannot read the plan {}\nfix: check the --plan path",
                    path.display()
                )
            },
            || {
                format!(
                    "{} is not a plan file\nfix: give a plan written by `fmerge plan` (`stack`, `hop-ms` and [[group]] tables with caller, callees, name)",
                    path.display()
                )
            },
        )?;
        let base = path.parent().unwrap_or(Path::new("."));
        if let Some(stack) = &mut plan.stack
            && stack.is_relative()
        {
            *stack = base.join(&stack);
        }
        for (key, values) in plan
            .group
            .iter()
            .flat_map(|g| [("requests", &g.requests), ("limits", &g.limits)])
        {
            for (resource, text) in values {
                anyhow::ensure!(
                    matches!(resource.as_str(), "memory" | "cpu"),
                    "{}: a group's {key} has `{resource}`, and a plan gives only memory and cpu\nfix: drop it, or plan again with `fmerge plan`",
                    path.display()
                );
                fmerge_ship::quantity::parse(text)
                    .with_context(|| format!("{}: a group's {key}.{resource}", path.display()))?;
            }
        }
        for name in &plan.dropped {
            let copied = plan.group.iter().any(|g| g.callees.contains(name));
            let is_caller = plan.group.iter().any(|g| &g.caller == name);
            anyhow::ensure!(
                copied && !is_caller,
                "{}: `dropped` names {name}, which {}, so its deployment cannot go\nfix: drop it from `dropped`, or plan again with `fmerge plan`",
                path.display(),
                if is_caller {
                    "is a group's caller"
                } else {
                    "no group holds"
                }
            );
        }
        let mut callers = std::collections::BTreeSet::new();
        let mut groups = Vec::new();
        for g in &plan.group {
            if !callers.insert(g.caller.clone()) {
                bail!(
                    "{}: two groups have the caller {}, and a function's deployment can be in one group only\nfix: merge the two groups into one, or drop one",
                    path.display(),
                    g.caller
                );
            }
            let mut group = Group {
                caller: Some(g.caller.clone()),
                ..Group::default()
            };
            group.merge.callees = g.callees.clone();
            group.merge.name = g.name.clone();
            group.merge.sharing.allow_shared_static = plan.allow_shared_static.clone();
            groups.push(group);
        }
        Ok(LoadedPlan { file: plan, groups })
    }
}

impl PlanFile {
    /// The group whose caller is `caller`, if any.
    pub fn group(&self, caller: &str) -> Option<&PlanGroup> {
        self.group.iter().find(|g| g.caller == caller)
    }

    /// This file's groups as a plan of `model`, valued as the searches value
    /// theirs (`fmerge plan --evaluate`: the figures of groups already
    /// chosen, under the model's traffic).
    pub fn plan(&self, model: &Model) -> Result<Plan> {
        let mut groups: Vec<_> = (0..model.n()).map(bit).collect();
        for g in &self.group {
            let index = |name: &str| {
                model.index(name).with_context(|| {
                    format!(
                        "the plan's group of {} names {name}, which is not in the call graph\nfix: give the graph of the plan's own stack",
                        g.caller
                    )
                })
            };
            let r = index(&g.caller)?;
            for c in &g.callees {
                groups[r] |= bit(index(c)?);
            }
        }
        let removed = model.value(&groups).removed;
        let gain_ms = model.gain_ms(&groups);
        Ok(Plan {
            groups,
            removed,
            gain_ms,
        })
    }
}
