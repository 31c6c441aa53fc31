//! Where a build's time went: each group's stages (the `"stage"` records)
//! and, for `build --plan`, their sums over the groups beside the wall time
//! of what the groups share or do side by side: one cargo build, the merges,
//! the images.

use super::MergedGroup;
use crate::message::{GroupSeconds, Seconds, TimingsRecord, WallSeconds};
use std::time::Duration;

pub const CARGO: &str = "cargo build";
/// Reading every unit's bitcode and hashing it for the merge cache.
pub const READ: &str = "read bitcode";
/// Each crate's bitcode parsed and through the crate passes, and linked into
/// one module where the merge makes one ("reading IR" or "linking IR").
pub const LINK_IR: &str = "link IR";
/// The conclusions, and the module passes on a linked module.
pub const PASSES: &str = "passes";
pub const CODEGEN: &str = "codegen";
/// Parts of [`CODEGEN`]: its time holds theirs.
pub const OPTIMIZE: &str = "optimize";
pub const EMIT: &str = "emit object";
pub const NATIVE_LINK: &str = "native link";
pub const IMAGE: &str = "image";
/// A group's merge time outside its named stages (cache, `--emit-ll`).
pub const OTHER: &str = "other";

/// A group's own stages, in the order they run; `other` makes them add up
/// to the group's merge, and the image follows it.
pub const OWN: [&str; 7] = [READ, LINK_IR, PASSES, CODEGEN, NATIVE_LINK, OTHER, IMAGE];
const CODEGEN_PARTS: [&str; 2] = [OPTIMIZE, EMIT];

/// One stage's time.
#[derive(Debug, Clone, Copy)]
pub struct StageTime {
    /// One of this module's names.
    pub stage: &'static str,
    pub took: Duration,
}

/// The wall-clock times of a whole build.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wall {
    /// The one cargo build every group shares.
    pub cargo: Duration,
    /// From the end of cargo to the end of the last group's merge.
    pub merging: Duration,
    /// The images, one group after another (zero without --image).
    pub images: Duration,
    pub total: Duration,
}

/// One group's row: its own stages in [`OWN`]'s order.
pub struct Row<'a> {
    pub name: &'a str,
    pub stages: Vec<StageTime>,
    /// [`CODEGEN`]'s parts, inside its time.
    pub parts: Vec<StageTime>,
    /// The group's merge, all but the image.
    pub merge: Duration,
    /// The merge and the image: the sum of `stages`.
    pub total: Duration,
}

/// The report of a build of several groups.
pub struct Report<'a> {
    pub rows: Vec<Row<'a>>,
    pub wall: Wall,
}

fn took(merged: &MergedGroup, stage: &str) -> Duration {
    merged
        .timings
        .iter()
        .filter(|t| t.stage == stage)
        .map(|t| t.took)
        .sum()
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl<'a> Report<'a> {
    pub fn new(groups: &'a [MergedGroup], wall: Wall) -> Self {
        let rows = groups
            .iter()
            .map(|m| {
                let named: Duration = OWN
                    .iter()
                    .take_while(|s| **s != OTHER)
                    .map(|s| took(m, s))
                    .sum();
                let stages: Vec<_> = OWN
                    .iter()
                    .map(|&stage| StageTime {
                        stage,
                        took: match stage {
                            OTHER => m.took.saturating_sub(named),
                            _ => took(m, stage),
                        },
                    })
                    .collect();
                Row {
                    name: &m.name,
                    total: stages.iter().map(|t| t.took).sum(),
                    parts: CODEGEN_PARTS
                        .iter()
                        .map(|&stage| StageTime {
                            stage,
                            took: took(m, stage),
                        })
                        .collect(),
                    merge: named.max(m.took),
                    stages,
                }
            })
            .collect();
        Report { rows, wall }
    }

    /// Each of [`OWN`] summed over the groups, then the groups' total.
    pub fn sums(&self) -> Vec<StageTime> {
        let sum = |f: &dyn Fn(&Row) -> Duration| self.rows.iter().map(f).sum();
        let mut sums: Vec<StageTime> = OWN
            .iter()
            .enumerate()
            .map(|(i, &stage)| StageTime {
                stage,
                took: sum(&|r: &Row| r.stages[i].took),
            })
            .collect();
        sums.push(StageTime {
            stage: "total",
            took: sum(&|r: &Row| r.total),
        });
        sums
    }

    /// The table for stderr: a row per group, their sums, the wall clock.
    pub fn lines(&self) -> Vec<String> {
        let names = self.rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
        let sum_label = format!("sum of {} groups", self.rows.len());
        let width = names.max(sum_label.len());
        let head: Vec<&str> = OWN.iter().copied().chain(["total"]).collect();
        let cells = |values: &mut dyn Iterator<Item = Duration>| -> String {
            let cells: Vec<String> = values
                .zip(&head)
                .map(|(d, h)| format!("{:>w$.1}", secs(d), w = h.len().max(5)))
                .collect();
            cells.join("  ")
        };
        let titles: Vec<String> = head.iter().map(|h| format!("{h:>5}")).collect();
        let mut lines = vec![
            "where the time went, in seconds:".to_string(),
            format!("  {:width$}  {}", "group", titles.join("  ")),
        ];
        for r in &self.rows {
            let mut values = r.stages.iter().map(|s| s.took).chain([r.total]);
            lines.push(format!("  {:width$}  {}", r.name, cells(&mut values)));
        }
        let sums = self.sums();
        let mut values = sums.iter().map(|s| s.took);
        lines.push(format!("  {sum_label:width$}  {}", cells(&mut values)));
        let parts: Vec<String> = CODEGEN_PARTS
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let d: Duration = self.rows.iter().map(|r| r.parts[i].took).sum();
                format!("{p} {:.1} s", secs(d))
            })
            .collect();
        lines.push(format!("  ({CODEGEN} summed: {})", parts.join(", ")));
        let w = &self.wall;
        let merges: Duration = self.rows.iter().map(|r| r.merge).sum();
        lines.push(format!(
            "wall: {CARGO} {:.1} s once, then the {} merges {:.1} s side by side ({:.2} at once on average), images {:.1} s; total {:.1} s",
            secs(w.cargo),
            self.rows.len(),
            secs(w.merging),
            secs(merges) / secs(w.merging).max(1e-9),
            secs(w.images),
            secs(w.total)
        ));
        lines
    }

    /// The same as one `"reason": "timings"` record.
    pub fn record(&self) -> TimingsRecord<'_> {
        let seconds = |stages: &[StageTime]| -> Seconds<'static> {
            stages.iter().map(|t| (t.stage, secs(t.took))).collect()
        };
        let w = &self.wall;
        TimingsRecord {
            wall: WallSeconds {
                cargo: secs(w.cargo),
                merging: secs(w.merging),
                images: secs(w.images),
                total: secs(w.total),
            },
            sum: seconds(&self.sums()),
            groups: self
                .rows
                .iter()
                .map(|r| GroupSeconds {
                    name: r.name,
                    stages: seconds(&r.stages),
                    codegen: seconds(&r.parts),
                    merge: secs(r.merge),
                    total: secs(r.total),
                })
                .collect(),
        }
    }
}
