//! One group's merge cache: the key (the units' bitcode, the options that
//! change the binary, the tools, the native libraries) and the lookup of
//! the last merge of the same name.

use super::super::{Options, Remembered};
use super::ir_stage::note_settings;
use super::{Merging, note_native_libs};
use fmerge_cargo::cache;
use fmerge_cargo::emit::{self, Unit};
use fmerge_cargo::toolchain::Toolchain;
use fmerge_ir as ir;

impl Merging<'_> {
    pub(super) fn cache_key(&self, emitted: &emit::Emitted, bitcode: &[Vec<u8>]) -> String {
        let labels: Vec<String> = emitted.units.iter().map(unit_label).collect();
        let inputs = cache_inputs(self.opts, self.lto, &self.tools, emitted);
        cache::key(&inputs, &labels, bitcode)
    }

    /// What the last merge of this name remembers, if nothing changed since.
    pub(super) fn cached(&self, key: &str) -> Option<Remembered> {
        if self.opts.force {
            return None;
        }
        let ll = self.opts.emit_ll.then_some(self.ll.as_path());
        let kept: Remembered = cache::lookup(&self.work, key, &self.binary, ll)?;
        self.progress.note(
            "nothing changed since the last merge (same bitcode and options): keeping the binary",
        );
        for w in &kept.warnings {
            self.progress.note(&format!("warning: {w}"));
        }
        note_settings(&self.progress, &kept.settings, &self.opts.caller);
        note_native_libs(&self.progress, &kept.native_libs);
        Some(kept)
    }
}

/// What identifies the tools, for every cache key: fmerge's version and
/// build, and rustc's release.
pub(super) fn tools(toolchain: &Toolchain) -> Vec<String> {
    vec![
        format!("fmerge {}", env!("CARGO_PKG_VERSION")),
        cache::own_build(),
        format!("rustc {}", toolchain.release),
    ]
}

/// Everything that decides the merged binary, for the merge cache: the
/// options that change it ([`Options::key_inputs`]), the tools and the
/// native libraries.
fn cache_inputs(
    opts: &Options,
    lto: ir::Lto,
    tools: &[String],
    emitted: &emit::Emitted,
) -> Vec<String> {
    let mut inputs = tools.to_vec();
    inputs.extend(opts.key_inputs(lto));
    inputs.extend(
        emitted
            .native
            .libs
            .iter()
            .chain(&emitted.native.search)
            .map(|l| format!("native {l}")),
    );
    inputs
}

fn unit_label(unit: &Unit) -> String {
    format!("{} {:?}", unit.crate_name, unit.function)
}
