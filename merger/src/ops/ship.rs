//! How a merged group is shipped: the image options checked against the
//! group before anything is built (the gateway, the names an image and a
//! stack entry take, the tag, the watchdog a watchdog-process group's image
//! needs), and the merged binary as shipping sees it.

use crate::options::values::Progress;
use crate::options::{ImageFlags, Options};
use crate::pipeline::MergedGroup;
use anyhow::{Context as _, Result, bail};
use fmerge_cargo::resolve::{self, Form};
use fmerge_cargo::workspace;
use fmerge_ship::image::ImageRef;
use fmerge_ship::image::watchdog::{self, Watchdog};
use fmerge_ship::push;
use fmerge_ship::ship::{EnvSetting, InputStack, MergedBinary, Ship};
use fmerge_ship::stack_out;

/// The shipping `flags` ask of `opts`' group, checked; `stack`: the input
/// stack file the group's functions come from, if any. Every image option
/// is named here (no `..`), so a new one cannot be left out of [`Ship`].
pub fn prepare(flags: &ImageFlags, opts: &Options, stack: Option<InputStack>) -> Result<Ship> {
    let ImageFlags {
        // Whether to ship at all: the caller's decision.
        image: _,
        push: and_push,
        tag,
        registry,
        progress,
        source_revision,
        registry_auth,
        gateway,
        watchdog,
    } = flags;
    let progress: push::Progress = if opts.cargo.quiet {
        push::Progress::Quiet
    } else {
        progress.unwrap_or(Progress::Auto).into()
    };
    if let Some(gateway) = gateway {
        stack_out::validate_gateway(gateway)?;
    }
    stack_out::validate_function_name(&opts.label())
        .context("the merge name (--name) is also the image's name")?;
    for member in opts.members() {
        stack_out::validate_function_name(&fmerge_contract::function_name(member))?;
    }
    if let Some(tag) = tag {
        let reference = ImageRef::parse(tag)?;
        anyhow::ensure!(
            reference.digest().is_none(),
            "cannot tag an image with a digest reference ({tag})\nfix: give a tag like `repo/name:v1`"
        );
        if *and_push {
            reference.check_pushable()?;
        }
    }
    let watchdog = watchdog_of(watchdog.as_deref(), opts, stack.as_ref())?;
    Ok(Ship {
        watchdog,
        tag: tag.clone(),
        registry: registry.clone().filter(|p| !p.is_empty()),
        push: *and_push,
        auth: registry_auth.map(Into::into).unwrap_or_default(),
        progress,
        gateway: gateway.clone(),
        revision: source_revision.clone(),
        dockerfile: crate::assets::DOCKERFILE,
        stack,
    })
}

/// For a group in the watchdog-process form, how its image runs the
/// merged binary: by the of-watchdog `given` by `--watchdog` (required, and
/// static), in the caller's mode with its `fprocess`'s arguments (from its
/// stack entry, else from the Dockerfile beside its package; else
/// of-watchdog's default mode). `None` for the runtime's
/// form, whose binary serves HTTP itself.
fn watchdog_of(
    given: Option<&std::path::Path>,
    opts: &Options,
    stack: Option<&InputStack>,
) -> Result<Option<Watchdog>> {
    let Some((form, dir)) = caller_form(opts).filter(|(f, _)| f.shimmed()) else {
        return Ok(None);
    };
    let caller = &opts.caller;
    let Some(path) = given else {
        bail!(
            "{caller} is {}, so its image needs \
             of-watchdog to run the merged binary as it ran {caller}, and no --watchdog is given\n\
             fix: add --watchdog PATH, a static of-watchdog binary (the `fwatchdog` of its release images), \
             or `watchdog = \"PATH\"` under [image] in the group file; or build without --image/--push",
            form.says()
        );
    };
    watchdog::check(path)?;
    // Its stack entry's; without a stack, the Dockerfile beside its package.
    let (beside, read);
    let (own, env) = match stack {
        Some(s) => {
            let entry = s.entries.iter().find(|e| &e.name == caller);
            (
                entry.and_then(|e| e.watchdog.as_ref()),
                entry.map(|e| &e.deployment.environment),
            )
        }
        None => {
            read = match &dir {
                Some(dir) => fmerge_ship::stack_in::image_env(dir, Some("dockerfile"), None)?,
                None => Default::default(),
            };
            beside = fmerge_ship::stack_in::Watchdog::from_env(&read, &Default::default());
            (beside.as_ref(), Some(&read))
        }
    };
    // of-watchdog reads `http_upstream_url` after `upstream_url`.
    let upstream_url = env.and_then(|env| {
        ["http_upstream_url", "upstream_url"]
            .iter()
            .find_map(|k| env.get(*k).cloned())
    });
    Ok(Some(Watchdog {
        binary: std::path::absolute(path)?,
        mode: own
            .map_or(fmerge_ship::stack_in::DEFAULT_MODE, |w| &w.mode)
            .into(),
        arguments: own.map_or("", |w| w.arguments()).into(),
        upstream_url: (form == Form::Http).then_some(upstream_url).flatten(),
        // The merge builds it; the image takes it from there.
        launcher: None,
    }))
}

/// The caller's form, and its package folder in a build without a stack
/// file, read without a build (`cargo metadata`); `None` when they cannot
/// be read, and the build's own resolve says why.
fn caller_form(opts: &Options) -> Option<(Form, Option<std::path::PathBuf>)> {
    match opts.sources.iter().find(|s| s.function == opts.caller) {
        Some(source) => workspace::own_package(source).ok().map(|p| {
            let form = match (p.on_runtime, &p.http_server) {
                (true, _) => Form::Runtime,
                (false, Some(_)) => Form::Http,
                (false, None) => Form::Process,
            };
            (form, None)
        }),
        None => resolve::code(
            opts.manifest_path.as_deref(),
            std::slice::from_ref(&opts.caller),
        )
        .ok()?
        .first()
        .map(|c| (c.form, Some(c.own.clone()))),
    }
}

/// The merged binary as shipping sees it: each setting with the variable
/// it is read from.
pub fn shipped(merged: &MergedGroup) -> MergedBinary<'_> {
    let caller = &merged.members[0];
    MergedBinary {
        name: &merged.name,
        binary: &merged.binary,
        launcher: merged.launcher.as_deref(),
        // A CamelCase package (a watchdog-process function built without a
        // stack) is deployed under its kebab-case name.
        members: merged
            .members
            .iter()
            .map(|m| fmerge_contract::function_name(m))
            .collect(),
        settings: merged
            .settings
            .iter()
            .map(|s| EnvSetting {
                function: s.function.clone(),
                key: s.key.clone(),
                default: s.default.clone(),
                from_env: s.from_env,
                variable: s.variable(caller),
            })
            .collect(),
    }
}
