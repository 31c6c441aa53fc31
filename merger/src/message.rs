//! What `--message-format json` prints, every record kind in one place (as
//! cargo's machine_message.rs): one struct per kind, each serialized with
//! its kind as `"reason"` first, one JSON object a line on stdout through
//! [`emit`]. The last record is always [`FinishedRecord`], also when the
//! command fails.

use crate::options::values::MessageFormat;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A record of `--message-format json`: only these go through [`emit`].
pub trait Record: Serialize {}

/// Prints a file written: its path, or its `written` record.
pub fn print_written(path: &Path, format: MessageFormat) {
    match format {
        MessageFormat::Json => emit(&WrittenRecord { path }),
        MessageFormat::Human => println!("{}", path.display()),
    }
}

/// Prints `record` as one line on stdout.
pub fn emit(record: &impl Record) {
    println!(
        "{}",
        serde_json::to_string(record).expect("records serialize")
    );
}

/// Declares the record kinds: each a struct serialized with its kind as
/// `"reason"` first, and a [`Record`].
macro_rules! records {
    ($(
        $(#[$doc:meta])*
        $kind:literal => pub struct $Name:ident $(<$a:lifetime>)? { $($fields:tt)* }
    )*) => {$(
        $(#[$doc])*
        #[derive(Serialize)]
        #[serde(tag = "reason", rename = $kind)]
        pub struct $Name $(<$a>)? { $($fields)* }

        impl $(<$a>)? Record for $Name $(<$a>)? {}
    )*};
}

records! {
    /// One stage of a merge and its time.
    "stage" => pub struct StageRecord<'a> {
        /// The group's name.
        pub name: &'a str,
        pub stage: &'a str,
        pub seconds: f64,
    }

    /// A setting of a merged function, with the variable it is read from.
    "setting" => pub struct SettingRecord<'a> {
        pub function: &'a str,
        pub key: &'a str,
        pub variable: String,
        /// The code's default; `null`: read with `std::env` and no default.
        pub default: Option<&'a str>,
    }

    /// A difference from the unmerged functions that fmerge kept.
    "warning" => pub struct WarningRecord<'a> {
        pub message: &'a str,
    }

    /// An image built (and pushed), and the stack file written for it.
    "image" => pub struct ImageRecord<'a> {
        /// The group's name, in a plan's build only.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub name: Option<&'a str>,
        pub reference: &'a str,
        pub stack: Option<&'a Path>,
    }

    /// A merged binary.
    "merged" => pub struct MergedRecord<'a> {
        pub name: &'a str,
        pub binary: &'a Path,
        pub ll: Option<&'a Path>,
        pub members: &'a [String],
        pub native_libs: &'a [String],
        pub units: usize,
        pub cached: bool,
    }

    /// The merged stack of a whole plan.
    "stack" => pub struct StackRecord<'a> {
        pub stack: &'a Path,
    }

    /// A file `fmerge graph` or `fmerge plan` wrote.
    "written" => pub struct WrittenRecord<'a> {
        pub path: &'a Path,
    }

    /// Where the time of a plan's build went (`pipeline::stages::Report`).
    "timings" => pub struct TimingsRecord<'a> {
        /// The wall-clock times of the whole build.
        pub wall: WallSeconds,
        /// Each stage summed over the groups, and `total`.
        pub sum: Seconds<'a>,
        pub groups: Vec<GroupSeconds<'a>>,
    }

    /// The last record: whether the command succeeded, and if not why.
    "finished" => pub struct FinishedRecord {
        success: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        fix: Option<String>,
    }
}

/// Seconds by stage name.
pub type Seconds<'a> = BTreeMap<&'a str, f64>;

/// `pipeline::stages::Wall` in seconds, keyed by the stages' names.
#[derive(Serialize)]
pub struct WallSeconds {
    #[serde(rename = "cargo build")]
    pub cargo: f64,
    pub merging: f64,
    #[serde(rename = "image")]
    pub images: f64,
    pub total: f64,
}

/// One group's row of [`TimingsRecord`].
#[derive(Serialize)]
pub struct GroupSeconds<'a> {
    pub name: &'a str,
    pub stages: Seconds<'a>,
    /// Codegen's parts, inside its time.
    pub codegen: Seconds<'a>,
    /// The merge, all but the image.
    pub merge: f64,
    pub total: f64,
}

impl FinishedRecord {
    /// The command succeeded.
    pub fn success() -> Self {
        FinishedRecord {
            success: true,
            error: None,
            fix: None,
        }
    }

    /// The command failed: the cause, and the fixes (one a line), if any.
    pub fn failure(cause: String, fixes: Option<String>) -> Self {
        FinishedRecord {
            success: false,
            error: Some(cause),
            fix: fixes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_comes_first_and_names_the_kind() {
        let record = StageRecord {
            name: "a-merged",
            stage: "codegen",
            seconds: 1.5,
        };
        assert_eq!(
            serde_json::to_string(&record).unwrap(),
            r#"{"reason":"stage","name":"a-merged","stage":"codegen","seconds":1.5}"#
        );
        assert_eq!(
            serde_json::to_string(&FinishedRecord::success()).unwrap(),
            r#"{"reason":"finished","success":true}"#
        );
    }
}
