//! Progress for the long stages: a spinner or bar on a terminal, one plain
//! line per stage otherwise (CI logs), nothing with --quiet.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Progress {
    term: bool,
    quiet: bool,
    /// The group's name, when several merge at once (`build --plan`).
    group: Option<String>,
}

pub struct Stage {
    bar: ProgressBar,
    what: String,
    started: Instant,
    plain: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Self {
        Progress {
            term: std::io::stderr().is_terminal(),
            quiet,
            group: None,
        }
    }

    /// Whether nothing but the results is printed (-q): cargo's lines neither.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// The same, with every line naming `group`; bars stay off, since
    /// several groups' bars would overwrite each other.
    pub fn for_group(&self, group: &str) -> Self {
        Progress {
            term: false,
            quiet: self.quiet,
            group: Some(group.to_string()),
        }
    }

    fn named(&self, what: &str) -> String {
        match &self.group {
            Some(g) => format!("[{g}] {what}"),
            None => what.to_string(),
        }
    }

    /// A stage with `len` steps (a bar), or none known (a spinner).
    pub fn stage(&self, what: &str, len: Option<u64>) -> Stage {
        let what = &self.named(what);
        let bar = if self.term && !self.quiet {
            let bar = match len {
                Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr())
                    .with_style(
                        ProgressStyle::with_template(
                            "{spinner} {msg:<24} [{bar:30}] {pos}/{len} {elapsed}",
                        )
                        .expect("valid template")
                        .progress_chars("=> "),
                    ),
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                    .with_style(
                        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                            .expect("valid template"),
                    ),
            };
            bar.enable_steady_tick(Duration::from_millis(120));
            bar.set_message(what.to_string());
            bar
        } else {
            if !self.quiet {
                eprintln!("fmerge: {what}…");
            }
            ProgressBar::hidden()
        };
        Stage {
            bar,
            what: what.to_string(),
            started: Instant::now(),
            plain: !self.quiet,
        }
    }

    pub fn note(&self, line: &str) {
        if !self.quiet {
            eprintln!("fmerge: {}", self.named(line));
        }
    }
}

impl Stage {
    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// Ends the stage with a summary; returns how long it took.
    pub fn done(self, summary: &str) -> Duration {
        let took = self.started.elapsed();
        self.bar.finish_and_clear();
        if self.plain {
            eprintln!(
                "fmerge: {} — {summary} ({:.1}s)",
                self.what,
                took.as_secs_f64()
            );
        }
        took
    }
}
