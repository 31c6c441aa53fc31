//! The build operation's request ([`ops::build::Request`]) of `fmerge
//! build`'s options ([`BuildArgs`]).

use crate::ops;
use crate::ops::build::Request;
use crate::options::layer::ExplicitFlags;
use crate::options::stack::default_stack;
use crate::options::values::MessageFormat;
use crate::options::{BuildArgs, ImageFlags, Options};
use anyhow::{Result, bail};
use fmerge_ship::ship::InputStack;
use fmerge_ship::stack_in::StackIn;
use std::path::PathBuf;

/// Where the functions are when nothing says: the stack file in the
/// current directory, if any (else the cargo workspace around it).
pub(super) fn stack_path(args: &BuildArgs) -> Option<PathBuf> {
    let said = !args.manifest_path.is_empty() || args.config.is_some() || args.plan.is_some();
    args.stack
        .yaml
        .clone()
        .or_else(|| (!said).then(default_stack).flatten())
}

/// The build of one group: the command line (with `explicit` the flags it
/// gave) over the group file, where the functions are, and the image, all
/// checked before anything is built.
pub(super) fn request(args: BuildArgs, explicit: &ExplicitFlags) -> Result<Request> {
    let yaml = stack_path(&args);
    let args = match &args.config {
        // The file, then the command line again as clap read it (`explicit`).
        Some(path) => BuildArgs::under(explicit, path)?,
        None => args,
    };
    let Some(caller) = args.caller.as_deref() else {
        bail!(
            "no functions to merge\nfix: run `fmerge build <CALLER> <CALLEE>...` or `fmerge build --config <group.toml>`"
        );
    };
    let stack = yaml.as_deref().map(StackIn::load).transpose()?;
    let opts = match &stack {
        Some(stack) => {
            anyhow::ensure!(
                args.manifest_path.is_empty(),
                "-f and --manifest-path both say where the functions are\nfix: give one of them"
            );
            Options::in_stack(caller, args.merge.clone(), stack)?
        }
        None => Options::in_workspace(caller, args.merge.clone(), &args.manifest_path)?,
    };
    opts.check()?;
    let entries = match &stack {
        Some(file) => opts
            .members()
            .map(|m| file.entry(m))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    if !opts.cargo.quiet {
        say_watchdogs(&entries);
    }
    let ship = if args.image.image || args.image.push {
        let stack = stack.map(|file| InputStack {
            entries,
            file,
            remove_callees: args.remove_callees,
        });
        Some(ops::ship::prepare(&args.image, &opts, stack)?)
    } else {
        // Image options given without an image are a mistake, not a no-op
        // (from the environment, such as OPENFAAS_URL, they are not given).
        for (id, flag) in ImageFlags::shaping() {
            anyhow::ensure!(
                !explicit.by_flag(&id),
                "{flag} applies to the image, and no image is built\nfix: add --image (or --push), or drop {flag}"
            );
        }
        None
    };
    crate::preflight::check(
        &opts,
        ship.as_ref().map(|s| crate::preflight::Image {
            tag: s.tag.as_deref(),
            registry: s.registry.as_deref(),
            push: s.push.then_some(&s.auth),
        }),
    )?;
    Ok(Request {
        opts,
        ship,
        json: args.output.message_format == MessageFormat::Json,
    })
}

/// Says how of-watchdog runs each member the stack builds by a Dockerfile,
/// as the merged binary will be run in its place.
fn say_watchdogs(entries: &[fmerge_ship::stack_in::Entry]) {
    for e in entries {
        if let Some(w) = &e.watchdog {
            eprintln!(
                "fmerge: {}: of-watchdog runs `{}` in {} mode (from {})",
                e.name,
                w.fprocess.as_deref().unwrap_or_default(),
                w.mode,
                w.from
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args as _, Command, FromArgMatches as _};

    /// Each image option (as the struct lists them), given as a flag
    /// without --image or --push, is refused by its name before anything
    /// is read.
    #[test]
    fn every_image_option_without_an_image_is_refused() {
        let command = BuildArgs::augment_args(Command::new("build").no_binary_name(true));
        let shaping = ImageFlags::shaping();
        for (id, flag) in &shaping {
            let arg = command
                .get_arguments()
                .find(|a| a.get_id() == id.as_str())
                .expect("an image option is a flag of build");
            let value = arg.get_possible_values().first().map_or_else(
                || "http://127.0.0.1:1".to_string(),
                |v| v.get_name().to_string(),
            );
            let line = ["a", "b", flag.as_str(), &value];
            let matches = command.clone().try_get_matches_from(line).unwrap();
            let args = BuildArgs::from_arg_matches(&matches).unwrap();
            let e = request(args, &ExplicitFlags::of(&matches))
                .err()
                .unwrap_or_else(|| panic!("{flag} without an image is accepted"))
                .to_string();
            assert!(
                e.starts_with(&format!("{flag} applies to the image")),
                "{e}"
            );
        }
        let flags: Vec<&str> = shaping.iter().map(|(_, flag)| flag.as_str()).collect();
        for named in ["--tag", "--gateway", "--registry-auth", "--watchdog"] {
            assert!(flags.contains(&named), "{flags:?}");
        }
        assert!(!flags.contains(&"--image") && !flags.contains(&"--push"));
    }
}
