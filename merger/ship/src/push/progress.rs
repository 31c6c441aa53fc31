//! Push progress: one indicatif bar per layer on a terminal, plain lines otherwise.
//!
//! Why: a merged image is one large layer (the binary) plus small ones; on a slow
//! uplink a person wants to see that layer move, while CI logs want a few lines, not
//! thousands of carriage returns. The Engine's push events carry no layer id in
//! bollard's model, but they carry each layer's size as `total`, and the image history
//! gives every layer's size and the Dockerfile step that made it, so bars are labelled
//! by step and matched by size.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How push progress is shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Progress {
    /// Bars when stderr is a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// Always bars.
    Bars,
    /// Always plain lines on stderr.
    Plain,
    /// Nothing but errors.
    Quiet,
}

impl std::str::FromStr for Progress {
    type Err = anyhow::Error;
    /// `auto`, `bars`, `plain`, `quiet`: the `--progress` values.
    fn from_str(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "auto" => Progress::Auto,
            "bars" => Progress::Bars,
            "plain" => Progress::Plain,
            "quiet" => Progress::Quiet,
            other => anyhow::bail!(
                "unknown progress style {other:?}\nfix: use one of auto, bars, plain, quiet"
            ),
        })
    }
}

impl Progress {
    fn effective(self) -> Progress {
        match self {
            Progress::Auto if std::io::stderr().is_terminal() => Progress::Bars,
            Progress::Auto => Progress::Plain,
            other => other,
        }
    }
}

/// One layer of the image: the step that made it and its size (uncompressed bytes).
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    pub label: String,
    pub size: u64,
}

pub(crate) struct Reporter {
    mode: Progress,
    multi: MultiProgress,
    /// Bars by layer size (the `total` of the Engine's "Pushing" events).
    bars: BTreeMap<u64, ProgressBar>,
    labels: BTreeMap<u64, String>,
    /// Last quarter printed per layer, in plain mode.
    printed: BTreeMap<u64, u64>,
    last_status: Option<String>,
    repeats: usize,
}

impl Reporter {
    pub fn new(mode: Progress, layers: &[Layer]) -> Self {
        let mode = mode.effective();
        let multi = MultiProgress::with_draw_target(match mode {
            Progress::Bars => ProgressDrawTarget::stderr(),
            _ => ProgressDrawTarget::hidden(),
        });
        let mut r = Reporter {
            mode,
            multi,
            bars: BTreeMap::new(),
            labels: BTreeMap::new(),
            printed: BTreeMap::new(),
            last_status: None,
            repeats: 0,
        };
        for l in layers {
            r.labels.insert(l.size, l.label.clone());
            if mode == Progress::Bars {
                r.bar(l.size);
            }
        }
        r
    }

    fn bar(&mut self, size: u64) -> ProgressBar {
        if let Some(b) = self.bars.get(&size) {
            return b.clone();
        }
        let label = self
            .labels
            .get(&size)
            .cloned()
            .unwrap_or_else(|| format!("layer of {}", human(size)));
        let bar = self.multi.add(ProgressBar::new(size));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:32!} [{bar:30.cyan/blue}] {bytes:>10}/{total_bytes:<10} {msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        bar.set_prefix(label);
        bar.set_message("waiting");
        self.bars.insert(size, bar.clone());
        bar
    }

    /// A line outside the bars (status, retries, the digest).
    pub fn line(&self, text: &str) {
        match self.mode {
            Progress::Quiet => {}
            Progress::Bars => {
                let _ = self.multi.println(text);
            }
            _ => eprintln!("{text}"),
        }
    }

    /// One Engine push event (already scrubbed).
    pub fn event(&mut self, status: &str, current: Option<i64>, total: Option<i64>) {
        if status == "Pushing" {
            if let (Some(cur), Some(tot)) = (current, total) {
                let (cur, tot) = (cur.max(0) as u64, tot.max(0) as u64);
                match self.mode {
                    Progress::Bars => {
                        let b = self.bar(tot);
                        b.set_message("pushing");
                        b.set_position(cur.min(tot));
                    }
                    Progress::Plain => {
                        let quarter = (cur.min(tot) * 4).checked_div(tot).unwrap_or(4);
                        let last = self.printed.get(&tot).copied();
                        if last.is_none_or(|l| quarter > l) {
                            self.printed.insert(tot, quarter);
                            let label = self
                                .labels
                                .get(&tot)
                                .cloned()
                                .unwrap_or_else(|| "layer".into());
                            eprintln!("push: {label} ({}): {}%", human(tot), quarter * 25);
                        }
                    }
                    _ => {}
                }
            }
            return;
        }
        if self.mode == Progress::Bars && (status == "Pushed" || status == "Layer already exists") {
            // The event does not say which layer: finish the first unfinished bar that
            // has moved (a pushed layer), else the first one not started (an existing one).
            let done = |b: &ProgressBar| b.is_finished();
            let moved = self
                .bars
                .values()
                .find(|b| !done(b) && b.position() > 0 && b.position() >= b.length().unwrap_or(0));
            let untouched = self.bars.values().find(|b| !done(b) && b.position() == 0);
            if let Some(b) = if status == "Pushed" {
                moved.or(untouched)
            } else {
                untouched
            } {
                b.set_position(b.length().unwrap_or(0));
                b.finish_with_message(if status == "Pushed" {
                    "pushed"
                } else {
                    "already there"
                });
            }
        }
        if self.last_status.as_deref() == Some(status) {
            self.repeats += 1;
            return;
        }
        self.flush_repeats();
        self.last_status = Some(status.to_owned());
        self.line(&format!("push: {status}"));
    }

    fn flush_repeats(&mut self) {
        if self.repeats > 0 && self.mode == Progress::Plain {
            eprintln!("push:   (×{} more)", self.repeats);
        }
        self.repeats = 0;
    }

    /// Ends the bars (after success or failure).
    pub fn finish(&mut self, ok: bool) {
        self.flush_repeats();
        self.last_status = None;
        for b in self.bars.values() {
            if !b.is_finished() {
                if ok {
                    b.set_position(b.length().unwrap_or(0));
                    b.finish_with_message("done");
                } else {
                    b.abandon_with_message("interrupted");
                }
            }
        }
        self.bars.clear();
        self.printed.clear();
    }
}

/// Bytes as KiB/MiB/GiB.
pub fn human(bytes: u64) -> String {
    indicatif::BinaryBytes(bytes).to_string()
}
