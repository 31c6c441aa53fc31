//! Merge groups in a file: the same options as the command line, in TOML, so
//! that a merge can be kept in the repo and run by CI (`examples/*.toml`).
//!
//! ```toml
//! caller = "write-home-timeline"
//! callees = ["social-graph-get-followers"]
//! name = "write-home-timeline-merged"     # optional
//! manifest-path = "../Cargo.toml"         # relative to this file
//! opt-level = 3
//! lto = "off"                             # optional: "fat" or "off"
//! rewrite = ["social-graph-get-followers:sn-redis-master.openfaas-fn.svc.cluster.local:6379=10.0.0.7:6379"]
//!
//! [image]
//! tag = "docker.io/you/write-home-timeline:latest"
//! push = true
//! ```

//!
//! It also holds the two rules the file and the command line share, each
//! defined once: the LTO modes by name ([`LTO_MODES`]) and the default merge
//! name ([`default_name`]).

use anyhow::Result;
use fmerge_cargo::artifact;
use fmerge_ir::codegen::Lto;
use serde::{Deserialize, Deserializer};
use std::path::{Path, PathBuf};

/// The LTO modes by the names `--lto` and `lto =` take.
pub const LTO_MODES: [(&str, Lto); 3] = [("fat", Lto::Fat), ("own", Lto::Own), ("off", Lto::Off)];

/// The mode named `name`, or why there is none.
pub fn parse_lto(name: &str) -> Result<Lto, String> {
    LTO_MODES
        .iter()
        .find(|(mode, _)| *mode == name)
        .map(|(_, lto)| *lto)
        .ok_or_else(|| {
            let modes: Vec<String> = LTO_MODES.iter().map(|(m, _)| format!("{m:?}")).collect();
            let (last, rest) = modes.split_last().expect("modes");
            format!(
                "unknown LTO mode {name:?}; use {} or {last}",
                rest.join(", ")
            )
        })
}

/// The name of a merge that is not given one: `<caller>-merged`.
pub fn default_name(caller: &str) -> String {
    format!("{caller}-merged")
}

fn lto_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Lto>, D::Error> {
    let name = String::deserialize(d)?;
    parse_lto(&name).map(Some).map_err(serde::de::Error::custom)
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Group {
    pub caller: Option<String>,
    #[serde(default)]
    pub callees: Vec<String>,
    pub name: Option<String>,
    pub manifest_path: Option<PathBuf>,
    pub target_dir: Option<PathBuf>,
    pub out: Option<PathBuf>,
    #[serde(default)]
    pub rewrite: Vec<String>,
    pub emit_ll: Option<bool>,
    pub opt_level: Option<u8>,
    /// `fat` or `off` (`--lto`; see [`LTO_MODES`]).
    #[serde(default, deserialize_with = "lto_mode")]
    pub lto: Option<Lto>,
    pub jobs: Option<usize>,
    /// Statics (or crates) the merged functions may share; see `--allow-shared-static`.
    #[serde(default)]
    pub allow_shared_static: Vec<String>,
    /// Print only the results (`--quiet`).
    pub quiet: Option<bool>,
    pub image: Option<ImageGroup>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ImageGroup {
    pub tag: Option<String>,
    #[serde(default)]
    pub build: bool,
    #[serde(default)]
    pub push: bool,
    /// Registry and namespace for the default tag (`--registry`).
    pub registry: Option<String>,
    /// `auto`, `env`, `docker` or `none` (`--registry-auth`).
    pub registry_auth: Option<String>,
    /// `auto`, `bars`, `plain` or `quiet` (`--progress`).
    pub progress: Option<String>,
    /// The OpenFaaS gateway written into stack.yml (`--gateway`).
    pub gateway: Option<String>,
}

impl Group {
    /// Reads a group file; relative paths in it are relative to the file.
    pub fn load(path: &Path) -> Result<Group> {
        let mut group: Group = artifact::read_parsed(
            path,
            |text| toml::from_str(text),
            || {
                format!(
                    "cannot read the merge group {}: check the --config path",
                    path.display()
                )
            },
            || {
                format!(
                    "{} is not a valid merge group (see examples/ and the README for its keys)",
                    path.display()
                )
            },
        )?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [
            &mut group.manifest_path,
            &mut group.target_dir,
            &mut group.out,
        ]
        .into_iter()
        .flatten()
        {
            if p.is_relative() {
                *p = base.join(&p);
            }
        }
        if let Some(level) = group.opt_level {
            anyhow::ensure!(
                level <= 3,
                "{}: opt-level = {level}; use 0, 1, 2 or 3",
                path.display()
            );
        }
        Ok(group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lto_modes_and_the_default_name_have_one_spelling() {
        assert_eq!(parse_lto("fat"), Ok(Lto::Fat));
        assert_eq!(parse_lto("own"), Ok(Lto::Own));
        assert_eq!(parse_lto("off"), Ok(Lto::Off));
        assert_eq!(
            parse_lto("thin"),
            Err("unknown LTO mode \"thin\"; use \"fat\", \"own\" or \"off\"".to_string())
        );
        let group: Group = toml::from_str("lto = \"fat\"").unwrap();
        assert_eq!(group.lto, Some(Lto::Fat));
        assert_eq!(default_name("compose-post"), "compose-post-merged");
    }
}
