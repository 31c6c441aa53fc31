//! How a merged group is shipped: the image options checked against the
//! group before anything is built (the gateway, the names an image and a
//! stack entry take, the tag), and the merged binary as shipping sees it.

use crate::options::values::Progress;
use crate::options::{ImageFlags, Options};
use crate::pipeline::MergedGroup;
use anyhow::{Context as _, Result};
use fmerge_ship::image::ImageRef;
use fmerge_ship::push;
use fmerge_ship::ship::{EnvSetting, InputStack, MergedBinary, Ship};
use fmerge_ship::stack_out;

/// The shipping `flags` ask of `opts`' group, checked; `stack`: the input
/// stack file the group's functions come from, if any.
pub fn prepare(flags: &ImageFlags, opts: &Options, stack: Option<InputStack>) -> Result<Ship> {
    let progress: push::Progress = if opts.cargo.quiet {
        push::Progress::Quiet
    } else {
        flags.progress.unwrap_or(Progress::Auto).into()
    };
    if let Some(gateway) = &flags.gateway {
        stack_out::validate_gateway(gateway)?;
    }
    stack_out::validate_function_name(&opts.label())
        .context("the merge name (--name) is also the image's name")?;
    for member in opts.members() {
        stack_out::validate_function_name(member)?;
    }
    if let Some(tag) = &flags.tag {
        let reference = ImageRef::parse(tag)?;
        anyhow::ensure!(
            reference.digest().is_none(),
            "cannot tag an image with a digest reference ({tag})\nfix: give a tag like `repo/name:v1`"
        );
        if flags.push {
            reference.check_pushable()?;
        }
    }
    Ok(Ship {
        tag: flags.tag.clone(),
        registry: flags.registry.clone().filter(|p| !p.is_empty()),
        push: flags.push,
        auth: flags.registry_auth.map(Into::into).unwrap_or_default(),
        progress,
        gateway: flags.gateway.clone(),
        revision: flags.source_revision.clone(),
        dockerfile: crate::assets::DOCKERFILE,
        stack,
    })
}

/// The merged binary as shipping sees it: each setting with the variable
/// it is read from.
pub fn shipped(merged: &MergedGroup) -> MergedBinary<'_> {
    let caller = &merged.members[0];
    MergedBinary {
        name: &merged.name,
        binary: &merged.binary,
        members: &merged.members,
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
