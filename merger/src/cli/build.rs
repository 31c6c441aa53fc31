//! `fmerge build`: the command line and the group file in, one merge (or
//! every group of a plan) out, then the image and stack.yml if asked.

use crate::group::Group;
use crate::options::{Given, ImageFlags};
use crate::pipeline::stages;
use anyhow::{Context as _, Result, bail};
use clap::Args;
use fmerge_ship::image;
use fmerge_ship::push::{self, Auth};
use fmerge_ship::ship::{Ship, write_merged_stack};
use fmerge_ship::stack_in;
use fmerge_ship::stack_out;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct BuildArgs {
    /// The function whose main the merged binary runs.
    caller: Option<String>,
    /// Build every group of a plan (`fmerge plan`'s plan.toml) with ONE cargo
    /// build (one per lock file when the callers' projects lock differently),
    /// merging the groups in parallel; with --image/--push, one
    /// stack.merged.yml for the whole application.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["caller", "config", "all"])]
    plan: Option<PathBuf>,
    /// Plan the application of -f STACK with the default constraints (into
    /// plan/ beside it), then build every group as --plan does.
    #[arg(long, requires = "yaml", conflicts_with_all = ["caller", "config"])]
    all: bool,
    /// The merge options (the same in a group file).
    #[command(flatten)]
    merge: Given,
    /// A merge group file (TOML); command-line options override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A Cargo.toml of the functions' workspace (default: the one around the
    /// current directory). Repeat it for functions in separate projects.
    #[arg(long, value_name = "PATH")]
    manifest_path: Vec<PathBuf>,
    /// A faas-cli stack file: functions are found by their entries (`handler:`
    /// folder), and a merged stack is written beside it (with --image or --push).
    #[arg(short = 'f', long = "yaml", value_name = "STACK")]
    yaml: Option<PathBuf>,
    /// In the merged stack, drop the callees' own entries (by default they stay
    /// deployed, since other callers may still call them over the gateway).
    #[arg(long)]
    remove_callees: bool,
    /// What stdout gets: `human` (the paths written, the binary's last) or
    /// `json` (cargo's convention: one JSON object per line, the last with
    /// `"reason": "merged"`). Progress and warnings always go to stderr.
    #[arg(long, value_name = "FMT", default_value = "human", value_parser = ["human", "json"])]
    message_format: String,
    /// The image options (in a group file, its `[image]` table).
    #[command(flatten)]
    ship: ImageFlags,
}

/// Everything one build needs, from the command line over the group file,
/// checked before anything is built: a typo in an image option must not cost
/// a whole build first.
struct Request {
    opts: crate::Options,
    ship: Option<Ship>,
    json: bool,
}

fn request(args: BuildArgs) -> Result<Request> {
    let group = match &args.config {
        Some(path) => Group::load(path)?,
        None => Group::default(),
    };
    let Some(caller) = args.caller.or(group.caller.clone()) else {
        bail!(
            "no functions to merge: run `fmerge build <CALLER> <CALLEE>...` or `fmerge build --config <group.toml>`"
        );
    };
    let mut opts = crate::Options::combine(&caller, &args.merge, &group);
    let stack_in = match &args.yaml {
        Some(path) => Some(stack_in::StackIn::load(path)?),
        None => None,
    };
    let members: Vec<String> = std::iter::once(&caller)
        .chain(&opts.callees)
        .cloned()
        .collect();
    let mut entries = Vec::new();
    if let Some(stack) = &stack_in {
        anyhow::ensure!(
            args.manifest_path.is_empty(),
            "-f and --manifest-path both say where the functions are; fix: give one of them"
        );
        for name in &members {
            entries.push(stack.entry(name)?);
        }
        opts.sources = entries
            .iter()
            .map(|e| fmerge_cargo::workspace::Source {
                function: e.name.clone(),
                manifest: e.handler.join("Cargo.toml"),
            })
            .collect();
    } else if args.manifest_path.len() > 1 {
        opts.sources = fmerge_cargo::workspace::locate(&members, &args.manifest_path)?;
    } else {
        opts.manifest_path = args
            .manifest_path
            .into_iter()
            .next()
            .or(group.manifest_path.clone());
    }
    crate::pipeline::validate(&opts)?;

    let shipping = args.ship.over(&group.image.clone().unwrap_or_default());
    let ship = if shipping.image {
        let auth: Auth = shipping
            .registry_auth
            .as_deref()
            .unwrap_or("auto")
            .parse()?;
        let progress: push::Progress = if opts.quiet {
            push::Progress::Quiet
        } else {
            shipping.progress.as_deref().unwrap_or("auto").parse()?
        };
        if let Some(gateway) = &shipping.gateway {
            anyhow::ensure!(
                gateway.starts_with("http://") || gateway.starts_with("https://"),
                "--gateway {gateway:?} is not an http(s) URL"
            );
        }
        stack_out::validate_function_name(&opts.label())
            .context("the merge name (--name) is also the image's name")?;
        for member in std::iter::once(&caller).chain(&opts.callees) {
            stack_out::validate_function_name(member)?;
        }
        if let Some(tag) = &shipping.tag {
            let reference = image::ImageRef::parse(tag)?;
            anyhow::ensure!(
                reference.digest().is_none(),
                "cannot tag an image with a digest reference ({tag}); fix: give a tag like `repo/name:v1`"
            );
            if shipping.push {
                reference.check_pushable()?;
            }
        }
        let stack = stack_in.map(|s| (s, entries, args.remove_callees));
        Some(Ship {
            tag: shipping.tag,
            registry: shipping.registry.filter(|p| !p.is_empty()),
            push: shipping.push,
            auth,
            progress,
            gateway: shipping.gateway,
            revision: shipping.source_revision,
            dockerfile: crate::assets::DOCKERFILE,
            stack,
        })
    } else {
        // Image options without an image are a mistake, not a no-op.
        for (flag, given) in [
            ("--tag", args.ship.tag.is_some()),
            ("--gateway", args.ship.gateway.is_some()),
            ("--progress", args.ship.progress.is_some()),
            ("--registry-auth", args.ship.registry_auth.is_some()),
        ] {
            anyhow::ensure!(
                !given,
                "{flag} applies to the image, and no image is built; fix: add --image (or --push), or drop {flag}"
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
        json: args.message_format == "json",
    })
}

/// The options `fmerge build -f STACK` merges a plan's group with, by the
/// same code as a build (`fmerge plan`'s dry run checks exactly those).
pub(super) fn group_options(
    stack: &std::path::Path,
    caller: &str,
    callees: &[String],
    cargo: &crate::options::Cargo,
    sharing: &crate::options::Sharing,
) -> Result<crate::Options> {
    let args = BuildArgs {
        caller: Some(caller.to_string()),
        plan: None,
        all: false,
        merge: Given {
            callees: callees.to_vec(),
            cargo: cargo.clone(),
            sharing: sharing.clone(),
            // The planner's groups are the graph's calls, read from the bitcode.
            allow_uncalled: true,
            ..Given::default()
        },
        config: None,
        manifest_path: Vec::new(),
        yaml: Some(stack.to_path_buf()),
        remove_callees: false,
        message_format: "human".into(),
        ship: ImageFlags::default(),
    };
    Ok(request(args)?.opts)
}

/// `fmerge build`: one group, or every group of a plan.
pub fn run(args: BuildArgs) -> Result<()> {
    if args.plan.is_some() || args.all {
        return build_plan(args);
    }
    build(vec![request(args)?], false)
}

/// Builds the groups (one cargo build per lock file) and ships each as asked: the one
/// path of a single build (a plan of one group) and of a `plan`'s groups.
/// Of a plan, each group's records carry its name and, when the groups share
/// an input stack, one merged stack for the whole application is written
/// after them all.
fn build(requests: Vec<Request>, plan: bool) -> Result<()> {
    let started = std::time::Instant::now();
    let opts: Vec<crate::Options> = requests.iter().map(|r| r.opts.clone()).collect();
    let crate::pipeline::Built {
        groups: mut merged,
        mut wall,
    } = crate::build_many(&opts)?;
    let (quiet, json) = (opts[0].quiet, requests[0].json);
    let mut specs = Vec::new();
    let mut whole = None;
    for (request, merged) in requests.into_iter().zip(&mut merged) {
        if json {
            print_json(merged);
        } else if let Some(ll) = merged.ll.as_ref().filter(|_| !plan) {
            // (A plan's groups list their binaries only.)
            println!("{}", ll.display());
        }
        if let Some(ship) = request.ship {
            let imaging = std::time::Instant::now();
            let (reference, spec, stack) = ship.image(&shipped(merged), quiet)?;
            let took = imaging.elapsed();
            wall.images += took;
            merged.timings.push((stages::IMAGE, took));
            if json {
                print_stage(merged, stages::IMAGE, took);
            }
            let own = match stack {
                Some((input, remove)) if plan => {
                    specs.push(spec);
                    whole = Some((input, remove));
                    None
                }
                Some((input, remove)) => Some(write_merged_stack(&input, &[spec], remove)?),
                None => Some(stack_out::write(
                    &spec,
                    merged.binary.parent().expect("a directory"),
                )?),
            };
            let name = plan.then_some(merged.name.as_str());
            print_image(name, &reference, own.as_deref(), json);
        }
        print_merged(merged, json);
    }
    wall.total = started.elapsed();
    if plan {
        let report = stages::Report::new(&merged, wall);
        if json {
            println!("{}", report.json());
        }
        if !quiet {
            report.lines().iter().for_each(|l| eprintln!("fmerge: {l}"));
        }
    }
    if let Some((input, remove)) = whole {
        let path = write_merged_stack(&input, &specs, remove)?;
        if json {
            println!(
                "{}",
                serde_json::json!({ "reason": "stack", "stack": path })
            );
        } else {
            println!("{}", path.display());
        }
    }
    Ok(())
}

/// A merged group's last line: its binary, or with `--message-format json`
/// the `merged` record (the same for one group and for every group of a plan).
fn print_merged(merged: &crate::Merged, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::json!({
                "reason": "merged",
                "name": merged.name,
                "binary": merged.binary,
                "ll": merged.ll,
                "members": merged.members,
                "native_libs": merged.native_libs,
                "units": merged.units,
                "cached": merged.cached,
            })
        );
    } else {
        println!("{}", merged.binary.display());
    }
}

/// `build --plan FILE` / `build -f STACK --all`: every group from one cargo
/// build, one merged stack for the whole application.
fn build_plan(args: BuildArgs) -> Result<()> {
    for (flag, given) in [
        ("--name", args.merge.name.is_some()),
        ("--out", args.merge.out.is_some()),
        ("--tag", args.ship.tag.is_some()),
        ("--rewrite", !args.merge.rewrite.is_empty()),
    ] {
        anyhow::ensure!(
            !given,
            "{flag} names one group's output, and a plan builds several; fix: drop {flag} (each group's name is in the plan; images are tagged <REGISTRY>/<NAME>:<content hash>), or build that group alone with --config"
        );
    }
    let plan_path = match &args.plan {
        Some(path) => path.clone(),
        None => {
            let stack = args.yaml.clone().expect("clap: --all requires -f");
            let source = super::graph::Source {
                yaml: Some(stack),
                cargo: args.merge.cargo.clone(),
                sharing: args.merge.sharing.clone(),
                ..Default::default()
            };
            let out = super::graph::beside(&source, None, "plan");
            super::plan::run(super::plan::PlanArgs::defaults(source, out.clone()))?;
            out.join("plan.toml")
        }
    };
    let (plan, groups) = crate::plan::PlanFile::load(&plan_path)?;
    anyhow::ensure!(
        !groups.is_empty(),
        "{}: the plan has no [[group]] (no merge pays off); nothing to build",
        plan_path.display()
    );
    let stack_path = args.yaml.clone().or(plan.stack.clone());
    let mut requests = Vec::new();
    for g in &groups {
        let caller = g.caller.clone().expect("a plan group has a caller");
        let mut one = args.clone();
        one.plan = None;
        one.all = false;
        one.caller = Some(caller.clone());
        one.merge.callees = g.callees.clone();
        one.merge.name = g.name.clone();
        // A plan's groups are the planner's, made of the graph's calls (read
        // from the bitcode, which sees more than the source check does).
        one.merge.allow_uncalled = true;
        // What the plan was made with, beside what this command line allows.
        for allowed in &g.allow_shared_static {
            if !one.merge.sharing.allow_shared_static.contains(allowed) {
                one.merge.sharing.allow_shared_static.push(allowed.clone());
            }
        }
        one.yaml = stack_path.clone();
        let request = request(one)
            .with_context(|| format!("{}: the group of {caller}", plan_path.display()))?;
        requests.push(request);
    }
    build(requests, true)
}

/// An image's lines: its reference and the stack file written for it (the
/// `image` record with `--message-format json`; a plan's names its group).
fn print_image(name: Option<&str>, reference: &str, stack: Option<&std::path::Path>, json: bool) {
    if json {
        let mut record =
            serde_json::json!({ "reason": "image", "reference": reference, "stack": stack });
        if let Some(name) = name {
            record["name"] = name.into();
        }
        println!("{record}");
    } else {
        println!("{reference}");
        stack.iter().for_each(|p| println!("{}", p.display()));
    }
}

/// The merge as JSON lines: each stage with its time, each setting with the
/// variable it is read from, each warning.
fn print_json(merged: &crate::Merged) {
    for (stage, took) in &merged.timings {
        print_stage(merged, stage, *took);
    }
    let caller = &merged.members[0];
    for s in &merged.settings {
        println!(
            "{}",
            serde_json::json!({
                "reason": "setting",
                "function": s.function,
                "key": s.key,
                "variable": s.variable(caller),
                "default": (!s.from_env).then_some(&s.default),
            })
        );
    }
    for w in &merged.warnings {
        println!(
            "{}",
            serde_json::json!({ "reason": "warning", "message": w })
        );
    }
}

/// One stage's time, naming the group (`"reason": "stage"`).
fn print_stage(merged: &crate::Merged, stage: &str, took: std::time::Duration) {
    println!(
        "{}",
        serde_json::json!({ "reason": "stage", "name": merged.name, "stage": stage, "seconds": took.as_secs_f64() })
    );
}

/// The merged binary as shipping sees it.
fn shipped(merged: &crate::Merged) -> fmerge_ship::ship::Merged<'_> {
    let caller = &merged.members[0];
    fmerge_ship::ship::Merged {
        name: &merged.name,
        binary: &merged.binary,
        members: &merged.members,
        settings: merged
            .settings
            .iter()
            .map(|s| fmerge_ship::ship::Setting {
                function: s.function.clone(),
                key: s.key.clone(),
                default: s.default.clone(),
                from_env: s.from_env,
                variable: s.variable(caller),
            })
            .collect(),
    }
}
