//! An error as fmerge shows it: its two parts, cause and fix, that the
//! human rendering and the `finished` record share ([`Rendered`]), and a
//! usage error of clap's in the same voice ([`usage`]).

use crate::message::FinishedRecord;

/// An error as fmerge shows it: the causes, outermost first, joined as
/// anyhow's `{:#}` joins them, and the fixes apart.
pub struct Rendered {
    pub cause: String,
    pub fixes: Vec<String>,
}

impl Rendered {
    /// Reads an error's chain. A fix is a line `fix: …` of any cause.
    pub fn of(error: &anyhow::Error) -> Rendered {
        let mut causes = Vec::new();
        let mut fixes = Vec::new();
        for cause in error.chain() {
            let (text, fix) = split(&cause.to_string());
            causes.push(text);
            fixes.extend(fix);
        }
        Rendered {
            cause: causes
                .into_iter()
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
                .join(": "),
            fixes,
        }
    }

    /// `error: <cause>` then one `fix: <fix>` a line, as stderr shows it.
    pub fn human(&self) -> String {
        let mut out = format!("error: {}\n", self.cause);
        for fix in &self.fixes {
            out.push_str(&format!("fix: {fix}\n"));
        }
        out
    }

    /// The `finished` record of a failed command.
    pub fn finished(&self) -> FinishedRecord {
        FinishedRecord::failure(
            self.cause.clone(),
            (!self.fixes.is_empty()).then(|| self.fixes.join("\n")),
        )
    }
}

/// A usage error of clap's in fmerge's voice: clap's `error: …` (with the
/// valid values it lists), then `fix: …` from its tip, or its pointer to
/// `--help`.
pub fn usage(error: &clap::Error) -> String {
    let text = error.render().to_string();
    let mut out = String::new();
    let mut fixes = Vec::new();
    let mut help = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(tip) = trimmed
            .strip_prefix("tip: ")
            .or_else(|| trimmed.strip_prefix("fix: "))
        {
            fixes.push(tip.to_string());
        } else if let Some(rest) = trimmed.strip_prefix("For more information, try ") {
            help = Some(rest.trim_end_matches('.').replace('\'', "`"));
        } else if !trimmed.is_empty() {
            out.push_str(line);
            out.push('\n');
        }
    }
    if fixes.is_empty() {
        let fix = match error.kind() {
            clap::error::ErrorKind::InvalidValue => "give one of the possible values".to_string(),
            _ => format!("see {}", help.unwrap_or_else(|| "`fmerge --help`".into())),
        };
        fixes.push(fix);
    }
    for fix in fixes {
        out.push_str(&format!("fix: {fix}\n"));
    }
    out
}

/// One message's cause and its fixes: its `fix: ` lines (the one voice,
/// which `tests/error_voice.rs` holds every message to).
fn split(message: &str) -> (String, Vec<String>) {
    let mut cause = Vec::new();
    let mut fixes = Vec::new();
    for line in message.lines() {
        match line.trim_start().strip_prefix("fix: ") {
            Some(fix) => fixes.push(fix.trim().to_string()),
            None => cause.push(line.to_string()),
        }
    }
    (cause.join("\n").trim_end().to_string(), fixes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fix_is_printed_after_the_cause_chain() {
        let new =
            anyhow::anyhow!("-j 0 gives no job\nfix: give -j 1 or more").context("the group of a");
        assert_eq!(
            Rendered::of(&new).human(),
            "error: the group of a: -j 0 gives no job\nfix: give -j 1 or more\n"
        );
        let record = serde_json::to_value(Rendered::of(&new).finished()).unwrap();
        assert_eq!(
            record,
            serde_json::json!({"reason": "finished", "success": false,
                "error": "the group of a: -j 0 gives no job", "fix": "give -j 1 or more"})
        );
    }
}
