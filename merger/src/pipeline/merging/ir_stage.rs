//! One group's IR stages: each crate's bitcode through the crate passes
//! (and into one module where the merge makes one), then the conclusions
//! and the module passes; and what they find, said as they find it.

use super::super::stages::{LINK_IR, PASSES, StageTime};
use super::Merging;
use crate::progress::Progress;
use anyhow::Result;
use fmerge_cargo::{emit, native, resolve};
use fmerge_ir::{self as ir, Setting};

impl Merging<'_> {
    /// The IR stages: each crate through its passes ("reading IR"), then the
    /// conclusions ("checking the merge"); with a linked module (`--lto
    /// fat|thin`, `--emit-ll`), each crate also goes into it ("linking IR")
    /// and the module passes follow ("rewriting the module"). What the passes
    /// find is said as they find it.
    pub(super) fn merge_ir(
        &mut self,
        emitted: &emit::Emitted,
        bitcode: Vec<Vec<u8>>,
        rewrites: Vec<ir::Rewrite>,
        reuse: bool,
    ) -> Result<ir::MergedModule> {
        let facts = ir::Facts {
            caller: self.opts.caller.clone(),
            callees: self.members.callee_names(),
            rewrites,
            allow_shared_static: self.opts.sharing.allow_shared_static.clone(),
            native_refs: native::undefined_in_static_libs(&emitted.native),
            process: self.members.caller.form.shimmed(),
            serving: self
                .members
                .callees
                .iter()
                .filter(|f| f.form == resolve::Form::Http)
                .map(|f| f.name.clone())
                .collect(),
        };
        let forms: Vec<String> = self
            .members
            .functions()
            .map(|f| format!("{} is {}", f.name, f.form.says()))
            .collect();
        self.progress.note(&format!("forms: {}", forms.join("; ")));
        let units = ir_units(&self.members, emitted, bitcode, self.lto);
        let count = units.len();
        let target = self.target();
        let (progress, mut link_ir) = (&self.progress, None);
        let (reading, passing) = match ir::links(reuse, self.opts.emit_ll) {
            true => ("linking IR", "rewriting the module"),
            false => ("reading IR", "checking the merge"),
        };
        let mut stage = Some(progress.stage(reading, Some(count as u64)));
        let merged = ir::merge(
            units,
            &facts,
            &target,
            reuse,
            self.opts.emit_ll,
            &mut |event| match event {
                ir::Event::Unit => stage.iter().for_each(|s| s.inc()),
                ir::Event::Linked => {
                    let linked = stage.take().expect("linked once");
                    link_ir = Some(linked.done(&format!("{count} units")));
                    stage = Some(progress.stage(passing, None));
                }
                ir::Event::Warning(w) => progress.note(&format!("warning: {w}")),
                ir::Event::Note(n) => progress.note(n),
            },
        )?;
        let summary = match reuse {
            true => format!("{} routes", merged.routes),
            false => format!(
                "{} symbols internalized, {} routes",
                merged.internalized, merged.routes
            ),
        };
        self.timings.extend(link_ir.map(|took| StageTime {
            stage: LINK_IR,
            took,
        }));
        self.timings.push(StageTime {
            stage: PASSES,
            took: stage.expect("linked").done(&summary),
        });
        note_settings(&self.progress, &merged.settings, &self.opts.caller);
        Ok(merged)
    }
}

/// Each crate's bitcode, with what the passes must know about it.
fn ir_units(
    members: &resolve::Members,
    emitted: &emit::Emitted,
    bitcode: Vec<Vec<u8>>,
    lto: ir::Lto,
) -> Vec<ir::Unit> {
    emitted
        .units
        .iter()
        .zip(bitcode)
        .map(|(unit, bitcode)| {
            let package = members.local.get(&unit.package_id).cloned();
            ir::Unit {
                crate_name: unit.crate_name.clone(),
                local: package.as_deref().is_some_and(|p| p != resolve::RUNTIME),
                joint: lto == ir::Lto::Own && members.local_on_top.contains(&unit.package_id),
                package,
                function: unit.function.clone(),
                owners: resolve::owners(members.functions(), &unit.package_id),
                unoptimized: unit.unoptimized,
                object: unit.has_compiled(),
                bitcode,
                path: unit.bitcode.clone(),
            }
        })
        .collect()
}

/// Says which variable each merged function reads each setting from.
pub(super) fn note_settings(progress: &Progress, settings: &[Setting], caller: &str) {
    for s in settings {
        let how = if s.from_env {
            "std::env, no default".to_string()
        } else {
            format!("default {}", s.default)
        };
        progress.note(&format!(
            "config: {} reads {} ({how})",
            s.function,
            s.variable(caller)
        ));
    }
}
