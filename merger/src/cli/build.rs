//! `fmerge build`: the command line and the group file (or each group of a
//! plan) into requests, and the build operation ([`crate::ops::build`]) on
//! them: one merge (or every group of a plan), then the image and
//! stack.yml if asked. `--all` makes its plan with the plan operation
//! ([`crate::ops::plan`]) first.

mod args;

use super::graph::{Source, beside, graph_of};
use crate::ops::{self, build::build};
use crate::options::BuildArgs;
use crate::options::layer::ExplicitFlags;
use crate::options::plan::PlanFlags;
use crate::options::stack::{Select, StackFile};
use anyhow::{Context as _, Result, bail};
use args::{request, stack_path};
use std::path::PathBuf;

/// `fmerge build`: one group, or every group of a plan; `explicit`: the
/// flags the command line gave, which win over a group file.
pub fn run(args: BuildArgs, explicit: &ExplicitFlags) -> Result<()> {
    if args.plan.is_some() || args.all {
        return build_plan(args);
    }
    anyhow::ensure!(
        !args.select.is_some(),
        "--filter and --regex select the stack's functions for --all\nfix: add --all, or name the functions to merge"
    );
    build(vec![request(args, explicit)?], None)
}

/// `build --plan FILE` / `build -f STACK --all`: every group from one cargo
/// build, one merged stack for the whole application.
fn build_plan(args: BuildArgs) -> Result<()> {
    for (flag, given) in [
        ("--name", args.merge.name.is_some()),
        ("--out", args.merge.out.is_some()),
        ("--tag", args.image.tag.is_some()),
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
            plan_all(&args, stack)?
        }
    };
    anyhow::ensure!(
        args.plan.is_none() || !args.select.is_some(),
        "--filter and --regex select the functions to plan, and --plan's groups are planned already\nfix: drop them, or use -f STACK --all"
    );
    let crate::plan::LoadedPlan { file: plan, groups } = crate::plan::PlanFile::load(&plan_path)?;
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
        one.stack.yaml = stack_path.clone();
        let request = request(one, &ExplicitFlags::default())
            .with_context(|| format!("{}: the group of {caller}", plan_path.display()))?;
        requests.push(request);
    }
    build(requests, Some(&plan))
}

/// `build --all`'s plan: the plan operation on the stack's graph, every
/// plan option at its default (`fmerge plan -f STACK` with this command
/// line's selection and build flags), into plan/ beside the stack; returns
/// the plan file.
fn plan_all(args: &BuildArgs, stack: PathBuf) -> Result<PathBuf> {
    let source = Source {
        stack: StackFile { yaml: Some(stack) },
        cargo: args.merge.cargo.clone(),
        sharing: args.merge.sharing.clone(),
        select: args.select.clone(),
        ..Default::default()
    };
    let out = beside(&source, None, "plan");
    ops::plan::plan(ops::plan::Request {
        graph: graph_of(&source, None)?,
        planning: PlanFlags::default().planning(),
        evaluate: None,
        no_dry_run: false,
        cargo: source.cargo,
        out: out.clone(),
        front: false,
        format: args.output.message_format,
    })?;
    Ok(out.join("plan.toml"))
}
