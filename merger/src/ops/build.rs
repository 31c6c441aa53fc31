//! The build operation: the groups (one cargo build per lock file), then
//! each shipped as asked, and what stdout gets of it, paths or records
//! ([`crate::message`]). One group and a plan's groups take the same path.

use super::ship::shipped;
use crate::message::{
    self, ImageRecord, MergedRecord, SettingRecord, StackRecord, StageRecord, WarningRecord,
};
use crate::pipeline::stages::{self, StageTime};
use crate::pipeline::{self, MergedGroup, Options};
use anyhow::Result;
use fmerge_ship::ship::{InputStack, Ship, write_merged_stack};
use fmerge_ship::stack_out;
use std::time::{Duration, Instant};

/// One group to build, checked before anything is built: a typo in an
/// image option must not cost a whole build first.
pub struct Request {
    pub opts: Options,
    /// The image and stack file to make of the binary, if any.
    pub ship: Option<Ship>,
    /// Records on stdout (`--message-format json`) instead of paths.
    pub json: bool,
}

/// Builds the groups and ships each as asked. Of a plan (`plan_file`),
/// each group's records carry its name, the time table follows them, and
/// when the groups share an input stack, one merged stack for the whole
/// application is written after them all, with the plan's pods' requests
/// and limits and without the deployments it drops.
pub fn build(requests: Vec<Request>, plan_file: Option<&crate::plan::PlanFile>) -> Result<()> {
    let plan = plan_file.is_some();
    let started = Instant::now();
    let opts: Vec<Options> = requests.iter().map(|r| r.opts.clone()).collect();
    let pipeline::Built {
        groups: mut merged,
        mut wall,
    } = pipeline::build_many(&opts)?;
    let (quiet, json) = (opts[0].cargo.quiet, requests[0].json);
    let mut specs = Vec::new();
    let mut whole: Option<InputStack> = None;
    for (request, merged) in requests.into_iter().zip(&mut merged) {
        if json {
            emit_merge(merged);
        } else if let Some(ll) = merged.ll.as_ref().filter(|_| !plan) {
            // (A plan's groups list their binaries only.)
            println!("{}", ll.display());
        }
        if let Some(ship) = request.ship {
            let imaging = Instant::now();
            let mut done = ship.image(&shipped(merged), quiet)?;
            if let Some(g) = plan_file.and_then(|p| p.group(&done.spec.members[0])) {
                done.spec.deployment.requests.extend(g.requests.clone());
                done.spec.deployment.limits.extend(g.limits.clone());
            }
            let took = imaging.elapsed();
            wall.images += took;
            merged.timings.push(StageTime {
                stage: stages::IMAGE,
                took,
            });
            if json {
                emit_stage(merged, stages::IMAGE, took);
            }
            let own = match done.stack {
                Some(input) if plan => {
                    specs.push(done.spec);
                    whole = Some(input);
                    None
                }
                Some(input) => Some(write_merged_stack(
                    &input.file,
                    &[done.spec],
                    input.remove_callees,
                    &[],
                )?),
                None => Some(stack_out::write(
                    &done.spec,
                    merged.binary.parent().expect("a directory"),
                )?),
            };
            if json {
                message::emit(&ImageRecord {
                    name: plan.then_some(merged.name.as_str()),
                    reference: &done.reference,
                    stack: own.as_deref(),
                });
            } else {
                println!("{}", done.reference);
                own.iter().for_each(|p| println!("{}", p.display()));
            }
        }
        if json {
            message::emit(&MergedRecord {
                name: &merged.name,
                binary: &merged.binary,
                ll: merged.ll.as_deref(),
                members: &merged.members,
                native_libs: &merged.native_libs,
                units: merged.units,
                cached: merged.cached,
            });
        } else {
            println!("{}", merged.binary.display());
        }
    }
    wall.total = started.elapsed();
    if plan {
        let report = stages::Report::new(&merged, wall);
        if json {
            message::emit(&report.record());
        }
        if !quiet {
            report.lines().iter().for_each(|l| eprintln!("fmerge: {l}"));
        }
    }
    if let Some(input) = whole {
        let dropped = plan_file.map_or(&[][..], |p| &p.dropped[..]);
        let path = write_merged_stack(&input.file, &specs, input.remove_callees, dropped)?;
        if json {
            message::emit(&StackRecord { stack: &path });
        } else {
            println!("{}", path.display());
        }
    }
    Ok(())
}

/// The merge's records: each stage with its time, each setting with the
/// variable it is read from, each warning.
fn emit_merge(merged: &MergedGroup) {
    for t in &merged.timings {
        emit_stage(merged, t.stage, t.took);
    }
    let caller = &merged.members[0];
    for s in &merged.settings {
        message::emit(&SettingRecord {
            function: &s.function,
            key: &s.key,
            variable: s.variable(caller),
            default: (!s.from_env).then_some(s.default.as_str()),
        });
    }
    for w in &merged.warnings {
        message::emit(&WarningRecord { message: w });
    }
}

/// One stage's time, naming the group.
fn emit_stage(merged: &MergedGroup, stage: &str, took: Duration) {
    message::emit(&StageRecord {
        name: &merged.name,
        stage,
        seconds: took.as_secs_f64(),
    });
}
