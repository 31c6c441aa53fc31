//! The image, push and stack.yml part of `fmerge build`: what a merged
//! binary becomes once it is built.

use crate::image::{self, ImageSpec};
use crate::push::{self, Auth, PushOptions};
use crate::stack_in;
use crate::stack_out::{CalleeEnv, StackSpec};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// A merged binary, as shipping needs it.
#[derive(Debug, Clone)]
pub struct MergedBinary<'a> {
    pub name: &'a str,
    pub binary: &'a Path,
    /// The warm-start launcher built beside it (a group whose caller
    /// of-watchdog starts per request), which the image runs it through.
    pub launcher: Option<&'a Path>,
    /// Caller first, then the callees, by their OpenFaaS names.
    pub members: Vec<String>,
    pub settings: Vec<EnvSetting>,
}

/// A setting a merged function reads (fmerge_ir's `Setting`), with the
/// environment variable it is read from.
#[derive(Debug, Clone)]
pub struct EnvSetting {
    pub function: String,
    pub key: String,
    pub default: String,
    /// Read with `std::env` and no default.
    pub from_env: bool,
    pub variable: String,
}

/// How to ship one merged binary, checked before the build.
pub struct Ship {
    pub tag: Option<String>,
    pub registry: Option<String>,
    pub push: bool,
    pub auth: Auth,
    pub progress: push::Progress,
    pub gateway: Option<String>,
    pub revision: Option<String>,
    /// The image's Dockerfile (fmerge's `assets::DOCKERFILE`).
    pub dockerfile: &'static str,
    /// The input stack.yml the group's functions come from, if any.
    pub stack: Option<InputStack>,
    /// For a watchdog-process group: the of-watchdog that runs the merged
    /// binary in the image, in the caller's mode.
    pub watchdog: Option<image::watchdog::Watchdog>,
}

/// The input stack.yml of a merged group, which the merged stack is
/// written from.
pub struct InputStack {
    pub file: stack_in::StackIn,
    /// The group's members' entries in it.
    pub entries: Vec<stack_in::Entry>,
    /// Whether the merged stack drops the callees' own entries.
    pub remove_callees: bool,
}

/// What shipping one merged binary made.
pub struct Shipped {
    /// The reference to deploy (pinned by digest once pushed).
    pub reference: String,
    /// The merged function's stack entry.
    pub spec: StackSpec,
    /// The input stack file to write `spec` into, if any.
    pub stack: Option<InputStack>,
}

/// Writes the input stack with the merged groups' entries beside it, as
/// `stack.merged.yml`, and returns its path; without the entries of
/// `dropped` (the deployments a plan no longer needs).
pub fn write_merged_stack(
    input: &stack_in::StackIn,
    specs: &[StackSpec],
    remove_callees: bool,
    dropped: &[String],
) -> Result<PathBuf> {
    let stem = input
        .path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("stack");
    let path = input.path.with_file_name(format!("{stem}.merged.yml"));
    let text = input.merged_all(specs, remove_callees, dropped)?;
    fmerge_cargo::artifact::write(&path, text.as_bytes())
}

impl Ship {
    /// Builds the image and pushes it if asked.
    pub fn image(self, merged: &MergedBinary, quiet: bool) -> Result<Shipped> {
        let mut spec = ImageSpec::new(
            merged.binary,
            merged.name,
            merged.members.to_vec(),
            self.dockerfile,
        );
        spec.tag = self.tag;
        spec.repository_prefix = self.registry.filter(|p| !p.is_empty());
        spec.source_revision = self.revision.or_else(git_revision);
        let watchdog = self.watchdog.clone().map(|mut w| {
            w.launcher = merged.launcher.map(Path::to_path_buf);
            w
        });
        spec.watchdog = watchdog.clone();
        let built = image::build(&spec)?;
        if !quiet {
            eprintln!("fmerge: {built}");
            if let Some(w) = &watchdog {
                let size = std::fs::metadata(&w.binary).map_or(0, |m| m.len());
                eprintln!(
                    "fmerge: of-watchdog ({}, {:.1} MiB of the image) runs {} in {} mode, as it ran {}",
                    w.binary.display(),
                    size as f64 / (1024.0 * 1024.0),
                    w.fprocess(&image::context::installed(merged.name)),
                    w.mode,
                    merged.members[0]
                );
            }
        }
        let reference = if self.push {
            let options = PushOptions {
                auth: self.auth,
                progress: self.progress,
                ..PushOptions::default()
            };
            push::push_built(&built, &options)?.pinned()
        } else {
            built.reference.clone()
        };
        let mut stack = StackSpec::new(merged.members.to_vec(), &reference);
        if let Some(gateway) = self.gateway {
            stack.gateway = gateway;
        }
        let mut spec = stack_settings(stack, merged);
        if let Some(input) = &self.stack {
            // The stack's own settings win over the code's defaults.
            for note in stack_in::merge_into(&mut spec, &input.entries) {
                if !quiet {
                    eprintln!("fmerge: note: {note}");
                }
            }
        }
        if let Some(w) = &watchdog {
            // Deployed environment wins over the image's: a caller's own
            // `fprocess` (its binary, not in this image) must not stay.
            let env = &mut spec.deployment.environment;
            env.remove("function_process");
            let fprocess = w.fprocess(&image::context::installed(merged.name));
            env.insert("fprocess".into(), fprocess);
            env.insert("mode".into(), w.mode.clone());
        }
        Ok(Shipped {
            reference,
            spec,
            stack: self.stack,
        })
    }
}

/// The settings each member reads, with their (rewritten) defaults: the
/// caller's under their plain names, the callees' namespaced.
fn stack_settings(mut stack: StackSpec, merged: &MergedBinary) -> StackSpec {
    let caller = &merged.members[0];
    // Read with std::env and no default: fmerge has no value to write, so it
    // names the variables the deployment must set (unset stays unset).
    let unset: Vec<String> = merged
        .settings
        .iter()
        .filter(|s| s.from_env)
        .map(|s| s.variable.clone())
        .collect();
    if !unset.is_empty() {
        stack
            .deployment
            .annotations
            .insert("org.fmerge.env-without-default".into(), unset.join(" "));
    }
    // A default with `$` would be substituted by faas-cli on deploy; the code's
    // default applies anyway when the variable is unset, so it is left out.
    for s in merged
        .settings
        .iter()
        .filter(|s| !s.from_env && !s.default.contains('$'))
    {
        if &s.function == caller {
            stack
                .deployment
                .environment
                .insert(s.key.clone(), s.default.clone());
        } else {
            stack.callee_environment.push(CalleeEnv {
                function: s.function.clone(),
                key: s.key.clone(),
                value: s.default.clone(),
            });
        }
    }
    stack
}

/// The source revision for the image labels: `git rev-parse HEAD`.
fn git_revision() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
