//! `fmerge build`: the command line and the group file in, one merge (or
//! every group of a plan) out, then the image and stack.yml if asked.

mod args;

pub use args::BuildArgs;
pub(super) use args::group_options;

use super::message::Message;
use crate::options::layer::Given;
use crate::options::stack::Select;
use crate::pipeline::stages;
use anyhow::{Context as _, Result, bail};
use args::{Request, request, stack_path};
use fmerge_ship::ship::write_merged_stack;
use fmerge_ship::stack_out;

/// `fmerge build`: one group, or every group of a plan; `given`: the flags
/// the command line gave, which win over a group file.
pub fn run(args: BuildArgs, given: &Given) -> Result<()> {
    if args.plan.is_some() || args.all {
        return build_plan(args);
    }
    anyhow::ensure!(
        !args.select.is_some(),
        "--filter and --regex select the stack's functions for --all\nfix: add --all, or name the functions to merge"
    );
    build(vec![request(args, given)?], None)
}

/// Builds the groups (one cargo build per lock file) and ships each as asked: the one
/// path of a single build (a plan of one group) and of a `plan`'s groups.
/// Of a plan, each group's records carry its name and, when the groups share
/// an input stack, one merged stack for the whole application is written
/// after them all, with the plan's pods' requests and limits and without
/// the deployments it drops.
fn build(requests: Vec<Request>, plan_file: Option<&crate::plan::PlanFile>) -> Result<()> {
    let plan = plan_file.is_some();
    let started = std::time::Instant::now();
    let opts: Vec<crate::Options> = requests.iter().map(|r| r.opts.clone()).collect();
    let crate::pipeline::Built {
        groups: mut merged,
        mut wall,
    } = crate::build_many(&opts)?;
    let (quiet, json) = (opts[0].cargo.quiet, requests[0].json);
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
            let (reference, mut spec, stack) = ship.image(&shipped(merged), quiet)?;
            if let Some(g) = plan_file.and_then(|p| p.group(&spec.members[0])) {
                spec.requests.extend(g.requests.clone());
                spec.limits.extend(g.limits.clone());
            }
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
                Some((input, remove)) => Some(write_merged_stack(&input, &[spec], remove, &[])?),
                None => Some(stack_out::write(
                    &spec,
                    merged.binary.parent().expect("a directory"),
                )?),
            };
            let name = plan.then_some(merged.name.as_str());
            if json {
                Message::Image {
                    name,
                    reference: &reference,
                    stack: own.as_deref(),
                }
                .print();
            } else {
                println!("{reference}");
                own.iter().for_each(|p| println!("{}", p.display()));
            }
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
        let dropped = plan_file.map_or(&[][..], |p| &p.dropped[..]);
        let path = write_merged_stack(&input, &specs, remove, dropped)?;
        if json {
            Message::Stack { stack: &path }.print();
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
        Message::Merged {
            name: &merged.name,
            binary: &merged.binary,
            ll: merged.ll.as_deref(),
            members: &merged.members,
            native_libs: &merged.native_libs,
            units: merged.units,
            cached: merged.cached,
        }
        .print();
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
            "{flag} names one group's output, and a plan builds several\nfix: drop {flag} (each group's name is in the plan; images are tagged <REGISTRY>/<NAME>:<content hash>), or build that group alone with --config"
        );
    }
    let stack_path = stack_path(&args);
    let plan_path = match &args.plan {
        Some(path) => path.clone(),
        None => {
            let Some(stack) = stack_path.clone() else {
                bail!(
                    "--all plans the application of a stack file, and there is none\nfix: give -f STACK (or run where stack.yml is)"
                );
            };
            let source = super::graph::Source {
                yaml: Some(stack),
                cargo: args.merge.cargo.clone(),
                sharing: args.merge.sharing.clone(),
                select: args.select.clone(),
                ..Default::default()
            };
            let out = super::graph::beside(&source, None, "plan");
            let plan = super::plan::PlanArgs {
                source,
                out: Some(out.clone()),
                message_format: args.message_format,
                ..Default::default()
            };
            super::plan::run(plan)?;
            out.join("plan.toml")
        }
    };
    anyhow::ensure!(
        args.plan.is_none() || !args.select.is_some(),
        "--filter and --regex select the functions to plan, and --plan's groups are planned already\nfix: drop them, or use -f STACK --all"
    );
    let (plan, groups) = crate::plan::PlanFile::load(&plan_path)?;
    anyhow::ensure!(
        !groups.is_empty(),
        "{}: the plan has no [[group]] (no merge pays off); nothing to build\nfix: plan with other constraints (`fmerge plan --help`), or merge a group by hand",
        plan_path.display()
    );
    let stack_path = stack_path.or(plan.stack.clone());
    let mut requests = Vec::new();
    for g in &groups {
        let caller = g.caller.clone().expect("a plan group has a caller");
        let mut one = args.clone();
        one.plan = None;
        one.all = false;
        one.select = Select::default();
        one.caller = Some(caller.clone());
        one.merge.callees = g.merge.callees.clone();
        one.merge.name = g.merge.name.clone();
        // A plan's groups are the planner's, made of the graph's calls (read
        // from the bitcode, which sees more than the source check does).
        one.merge.allow_uncalled = true;
        // What the plan was made with, beside what this command line allows.
        for allowed in &g.merge.sharing.allow_shared_static {
            if !one.merge.sharing.allow_shared_static.contains(allowed) {
                one.merge.sharing.allow_shared_static.push(allowed.clone());
            }
        }
        one.yaml = stack_path.clone();
        let request = request(one, &Given::default())
            .with_context(|| format!("{}: the group of {caller}", plan_path.display()))?;
        requests.push(request);
    }
    build(requests, Some(&plan))
}

/// The merge as JSON lines: each stage with its time, each setting with the
/// variable it is read from, each warning.
fn print_json(merged: &crate::Merged) {
    for (stage, took) in &merged.timings {
        print_stage(merged, stage, *took);
    }
    let caller = &merged.members[0];
    for s in &merged.settings {
        Message::Setting {
            function: &s.function,
            key: &s.key,
            variable: s.variable(caller),
            default: (!s.from_env).then_some(s.default.as_str()),
        }
        .print();
    }
    for w in &merged.warnings {
        Message::Warning { message: w }.print();
    }
}

/// One stage's time, naming the group (`"reason": "stage"`).
fn print_stage(merged: &crate::Merged, stage: &str, took: std::time::Duration) {
    Message::Stage {
        name: &merged.name,
        stage,
        seconds: took.as_secs_f64(),
    }
    .print();
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
