//! Merge groups in a file: `fmerge build`'s own options in TOML, each key
//! its flag's name ([`crate::options::layer`]), so that a merge can be kept
//! in the repo and run by CI (`examples/*.toml`).
//!
//! ```toml
//! caller = "write-home-timeline"
//! callees = ["social-graph-get-followers"]
//! name = "write-home-timeline-merged"     # optional
//! manifest-path = "../Cargo.toml"         # relative to this file
//! opt-level = 3
//! lto = "off"                             # optional: "fat", "own" or "off"
//! rewrite = ["social-graph-get-followers:sn-redis-master.openfaas-fn.svc.cluster.local:6379=10.0.0.7:6379"]
//!
//! [image]
//! tag = "docker.io/you/write-home-timeline:latest"
//! push = true
//! ```

use crate::options::BuildArgs;
use crate::options::layer::{self, ExplicitFlags, File};
use anyhow::Result;
use clap::Args as _;
use fmerge_cargo::artifact;
use std::path::Path;

/// A group file: `fmerge build`'s options as the file sets them, the
/// rest at their defaults.
pub type Group = BuildArgs;

/// The keys of `fmerge build` a group file may not hold: what to do with
/// the group, not what the group is.
pub const CLI_ONLY: [&str; 10] = [
    "plan",
    "all",
    "config",
    "yaml",
    "filter",
    "regex",
    "remove-callees",
    "message-format",
    "force",
    "image.source-revision",
];

impl BuildArgs {
    /// Reads a group file, every option it does not set at its default;
    /// relative paths in it are relative to the file.
    pub fn load(path: &Path) -> Result<Group> {
        Group::default().under(&ExplicitFlags::default(), path)
    }

    /// These options (with `given` the command line's flags) over the group
    /// file at `path`: a flag given wins, a list adds to the file's.
    pub fn under(&self, given: &ExplicitFlags, path: &Path) -> Result<Group> {
        let table: toml::Table = artifact::read_parsed(
            path,
            |text| toml::from_str(text),
            || {
                format!(
                    "cannot read the merge group {}\nfix: check the --config path",
                    path.display()
                )
            },
            || {
                format!(
                    "{} is not a valid merge group\nfix: its keys are `fmerge build`'s flags without the dashes (`fmerge build --help`); see examples/",
                    path.display()
                )
            },
        )?;
        let command = BuildArgs::augment_args(clap::Command::new("build"));
        layer::over(
            self,
            given,
            &File {
                command: &command,
                cli_only: &CLI_ONLY,
                path,
                table: &table,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::values::Lto;

    fn load(text: &str) -> Result<Group> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group.toml");
        std::fs::write(&path, text).unwrap();
        Group::load(&path).map_err(|e| anyhow::anyhow!("{e:#}"))
    }

    #[test]
    fn a_group_file_takes_the_flags_names_and_checks() {
        let group = load(
            "caller = \"a\"\ncallees = [\"b\"]\nlto = \"fat\"\nopt-level = 1\nout = \"bin\"\n\
             manifest-path = \"x/Cargo.toml\"\nquiet = true\n[image]\nimage = true\nprogress = \"plain\"\n\
             watchdog = \"tools/fwatchdog\"\n",
        )
        .unwrap();
        assert!(
            group.image.watchdog.unwrap().ends_with("tools/fwatchdog"),
            "[image] watchdog is read"
        );
        assert_eq!(group.merge.lto, Some(Lto::Fat));
        assert_eq!(group.merge.opt_level, 1);
        assert!(
            group.merge.out.unwrap().is_absolute(),
            "relative to the file"
        );
        assert_eq!(group.manifest_path.len(), 1);
        assert!(group.merge.cargo.quiet && group.image.image);
        // Unset: the flags' defaults.
        assert_eq!(load("caller = \"a\"").unwrap().merge.opt_level, 3);
        // Checked by the flags' own parsers.
        let bad = load("opt-level = 4").unwrap_err().to_string();
        assert!(
            bad.contains("opt-level = 4") && bad.contains("0..=3"),
            "{bad}"
        );
        let bad = load("lto = \"thin\"").unwrap_err().to_string();
        assert!(bad.contains("[possible values: fat, own, off]"), "{bad}");
        for cli_only in ["force = true", "message-format = \"json\""] {
            let bad = load(cli_only).unwrap_err().to_string();
            assert!(bad.contains("unknown field"), "{bad}");
        }
        // `--image`'s key before it was `image`: refused, naming the keys there are.
        let bad = load("[image]\nbuild = true").unwrap_err().to_string();
        assert!(
            bad.contains("unknown field `image.build`") && bad.contains("`image`, `progress`"),
            "{bad}"
        );
    }
}
