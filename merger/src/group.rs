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

use crate::options::layer::{self, ExplicitFlags, File};
use crate::options::{BuildArgs, ImageFlags};
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
        BuildArgs::under(&ExplicitFlags::default(), path)
    }

    /// The command line `given` over the group file at `path`, parsed
    /// together ([`layer`]): a flag given wins, a list adds to the file's.
    pub fn under(given: &ExplicitFlags, path: &Path) -> Result<Group> {
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
        // `BuildArgs::image`: the image flags, in their own table.
        let image = ImageFlags::augment_args(clap::Command::new("image"));
        layer::over(
            given,
            &File {
                command: &command,
                tables: &[("image", &image)],
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
    use crate::options::values::{Lto, RegistryAuth};

    fn load(text: &str) -> Result<Group> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group.toml");
        std::fs::write(&path, text).unwrap();
        Group::load(&path).map_err(|e| anyhow::anyhow!("{e:#}"))
    }

    /// `fmerge build CLI` over the group file `text` in `dir`.
    fn under(dir: &Path, text: &str, cli: &[&str]) -> Group {
        let path = dir.join("group.toml");
        std::fs::write(&path, text).unwrap();
        let command = BuildArgs::augment_args(clap::Command::new("build").no_binary_name(true));
        let matches = command.try_get_matches_from(cli).unwrap();
        BuildArgs::under(&ExplicitFlags::of(&matches), &path).unwrap()
    }

    #[test]
    fn the_command_line_wins_over_a_group_file_and_adds_to_its_lists() {
        let dir = tempfile::tempdir().unwrap();
        let file = "caller = \"a\"\ncallees = [\"b\"]\nopt-level = 1\nrewrite = [\"x=y\"]\n\
                    out = \"bin\"\nmanifest-path = \"m/Cargo.toml\"\n[image]\ntag = \"t:1\"\n";
        // Nothing given: the file's, its paths relative to its folder.
        let g = under(dir.path(), file, &[]);
        assert_eq!(
            (g.caller.as_deref(), g.merge.callees),
            (Some("a"), vec!["b".into()])
        );
        assert_eq!(g.merge.opt_level, 1);
        assert_eq!(g.merge.out, Some(dir.path().join("bin")));
        assert_eq!(g.manifest_path, [dir.path().join("m/Cargo.toml")]);
        assert_eq!(g.image.tag.as_deref(), Some("t:1"));
        // A flag given wins (one of [image] too), a list gets the command
        // line's items after the file's, and a path given stays as written.
        let g = under(
            dir.path(),
            file,
            &[
                "--opt-level",
                "2",
                "--rewrite",
                "z=w",
                "--tag",
                "t:2",
                "--out",
                "here",
            ],
        );
        assert_eq!(g.merge.opt_level, 2);
        assert_eq!(g.merge.rewrite, ["x=y", "z=w"]);
        assert_eq!(g.image.tag.as_deref(), Some("t:2"));
        assert_eq!(g.merge.out, Some("here".into()));
        let g = under(
            dir.path(),
            file,
            &["--manifest-path", "n/Cargo.toml", "-j", "2"],
        );
        assert_eq!(
            g.manifest_path,
            [dir.path().join("m/Cargo.toml"), "n/Cargo.toml".into()]
        );
        assert_eq!((g.merge.cargo.jobs, g.merge.opt_level), (Some(2), 1));
        // The positional ones alike: the caller given wins, its callees
        // follow the file's.
        let g = under(dir.path(), file, &["c", "d", "e"]);
        assert_eq!(g.caller.as_deref(), Some("c"));
        assert_eq!(g.merge.callees, ["b", "d", "e"]);
        let g = under(dir.path(), file, &["c"]);
        assert_eq!(
            (g.caller.as_deref(), g.merge.callees),
            (Some("c"), vec!["b".into()])
        );
        // The command line's flags the file may not hold are kept.
        let g = under(dir.path(), file, &["--config", "g.toml", "--force"]);
        assert!(g.merge.force && g.config == Some("g.toml".into()));
    }

    #[test]
    fn a_file_takes_the_command_lines_spellings() {
        let read = |v: &str| load(&format!("[image]\nregistry-auth = \"{v}\"\n"));
        assert_eq!(
            read("docker").unwrap().image.registry_auth,
            Some(RegistryAuth::Docker)
        );
        assert_eq!(
            read("docker-config").unwrap().image.registry_auth,
            Some(RegistryAuth::Docker)
        );
        let bad = read("vault").unwrap_err().to_string();
        assert!(
            bad.contains("invalid value 'vault'")
                && bad.contains("[possible values: auto, env, docker, none]"),
            "{bad}"
        );
    }

    #[test]
    fn a_value_of_the_wrong_shape_is_refused_naming_its_key() {
        for (text, says) in [
            (
                "opt-level = [1, 2]",
                "opt-level = [1, 2]: opt-level takes one value",
            ),
            (
                "quiet = \"yes\"",
                "quiet = \"yes\": quiet is a switch, true or false",
            ),
            (
                "name = { a = 1 }",
                "name = { a = 1 }: a flag's value is a string",
            ),
            ("image = true", "image = true: [image] is a table of flags"),
            (
                "jobs = 0",
                "jobs = 0: invalid value '0' for '--jobs <JOBS>': -j 0 gives no job",
            ),
        ] {
            let bad = load(text).unwrap_err().to_string();
            assert!(
                bad.contains(says) && bad.contains("\nfix: "),
                "{text}: {bad}"
            );
        }
        // A list flag takes one item as a list of one.
        assert_eq!(load("rewrite = \"a=b\"").unwrap().merge.rewrite, ["a=b"]);
        // A switch set false is the default.
        assert!(!load("quiet = false").unwrap().merge.cargo.quiet);
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
