//! A vendored crate's Cargo.toml made standalone: the settings it inherits
//! from its workspace (`x.workspace = true`) written out, its path
//! dependencies pointed at their vendored folders (siblings under
//! `vendor/`), and what only its own workspace builds (dev-dependencies,
//! tests, benches, examples) left out, since only its sources are vendored.

use anyhow::{Context as _, Result, bail};
use toml::{Table, Value};

/// These manifests are fmerge's own, embedded when it was built: an error
/// here is in the checkout fmerge was built from.
const REBUILD: &str =
    "rebuild fmerge from a checkout whose workspace builds (`cargo build` at its root)";

/// `member` (the Cargo.toml of the crate vendored as `name`) without
/// workspace inheritance, given `workspace` (its workspace's Cargo.toml)
/// and the folder names of all vendored crates.
pub fn standalone(name: &str, member: &str, workspace: &str, vendored: &[&str]) -> Result<String> {
    let mut member: Table = member
        .parse()
        .with_context(|| format!("the manifest of {name} is not valid TOML\nfix: {REBUILD}"))?;
    let workspace: Table = workspace
        .parse()
        .with_context(|| format!("the workspace manifest is not valid TOML\nfix: {REBUILD}"))?;
    let section = |key: &str| {
        workspace
            .get("workspace")
            .and_then(|w| w.get(key))
            .and_then(Value::as_table)
            .cloned()
            .unwrap_or_default()
    };
    let (package_settings, dependencies) = (section("package"), section("dependencies"));
    for key in [
        "dev-dependencies",
        "bench",
        "test",
        "example",
        "workspace",
        "lints",
    ] {
        member.remove(key);
    }
    if let Some(Value::Table(package)) = member.get_mut("package") {
        for (key, value) in package.iter_mut() {
            if inherits(value) {
                *value = package_settings.get(key).cloned().with_context(|| {
                    format!("{name}: the workspace sets no package.{key}\nfix: {REBUILD}")
                })?;
            }
        }
    }
    let mut tables: Vec<&mut Table> = Vec::new();
    let (own, targets): (Vec<_>, Vec<_>) = member
        .iter_mut()
        .partition(|(key, _)| key.as_str() != "target");
    for (key, value) in own {
        if matches!(key.as_str(), "dependencies" | "build-dependencies") {
            tables.extend(value.as_table_mut());
        }
    }
    for (_, value) in targets {
        for (_, target) in value.as_table_mut().into_iter().flatten() {
            for (key, deps) in target.as_table_mut().into_iter().flatten() {
                if matches!(key.as_str(), "dependencies" | "build-dependencies") {
                    tables.extend(deps.as_table_mut());
                }
            }
        }
    }
    for table in tables {
        for (dep, value) in table.iter_mut() {
            *value = dependency(name, dep, value, &dependencies, vendored)?;
        }
    }
    // [package] first, as people write it.
    let package = Table::from_iter(member.remove_entry("package"));
    Ok(format!(
        "# Vendored by `fmerge template`: {name} as this fmerge ships it.\n{}\n{}",
        toml::to_string(&package)?,
        toml::to_string(&member)?
    ))
}

fn inherits(value: &Value) -> bool {
    value.get("workspace").and_then(Value::as_bool) == Some(true)
}

/// One dependency, written out: the workspace's entry with this crate's
/// `features` and `optional` added, a path pointing at the vendored copy.
fn dependency(
    name: &str,
    dep: &str,
    value: &Value,
    workspace: &Table,
    vendored: &[&str],
) -> Result<Value> {
    let mut out = if inherits(value) {
        let base = workspace.get(dep).with_context(|| {
            format!("{name}: the workspace has no dependency {dep}\nfix: {REBUILD}")
        })?;
        let mut base = match base {
            Value::String(version) => {
                Table::from_iter([("version".into(), version.clone().into())])
            }
            Value::Table(t) => t.clone(),
            _ => bail!(
                "{name}: the workspace's dependency {dep} is neither a version nor a table\nfix: {REBUILD}"
            ),
        };
        let own = value.as_table().cloned().unwrap_or_default();
        if let Some(Value::Array(features)) = own.get("features") {
            let all = base
                .entry("features")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(all) = all {
                all.extend(
                    features
                        .iter()
                        .filter(|f| !all.contains(f))
                        .cloned()
                        .collect::<Vec<_>>(),
                );
            }
        }
        if let Some(optional) = own.get("optional") {
            base.insert("optional".into(), optional.clone());
        }
        Value::Table(base)
    } else {
        value.clone()
    };
    if let Some(table) = out.as_table_mut().filter(|t| t.contains_key("path")) {
        let package = table.get("package").and_then(Value::as_str).unwrap_or(dep);
        if !vendored.contains(&package) {
            bail!(
                "{name} depends on {package} by path, and the template does not vendor it\n\
                 fix: add {package} to the crates build.rs vendors"
            );
        }
        table.insert("path".into(), format!("../{package}").into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::standalone;

    #[test]
    fn workspace_settings_are_written_out_and_paths_point_at_the_vendored_copies() {
        let workspace = "[workspace.package]\nedition = \"2024\"\nversion = \"0.1.0\"\n\
             [workspace.dependencies]\nserde = { version = \"1\", features = [\"derive\"] }\n\
             bytes = \"1\"\nfmerge-contract = { path = \"functions/contract\" }\n";
        let member = "[package]\nname = \"fmerge-runtime\"\nedition.workspace = true\nversion.workspace = true\n\
             [dependencies]\nfmerge-contract = { workspace = true }\nbytes.workspace = true\n\
             serde = { workspace = true, features = [\"rc\"] }\nhttp = \"1\"\n\
             [dev-dependencies]\ntempfile = \"3\"\n[[bench]]\nname = \"dispatch\"\n";
        let vendored = ["fmerge-runtime", "fmerge-contract"];
        let text = standalone("fmerge-runtime", member, workspace, &vendored).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(t["package"]["edition"].as_str(), Some("2024"), "{text}");
        assert_eq!(t["package"]["version"].as_str(), Some("0.1.0"));
        let deps = &t["dependencies"];
        assert_eq!(
            deps["fmerge-contract"]["path"].as_str(),
            Some("../fmerge-contract")
        );
        assert_eq!(deps["bytes"]["version"].as_str(), Some("1"));
        assert_eq!(deps["serde"]["features"].as_array().unwrap().len(), 2);
        assert_eq!(deps["http"].as_str(), Some("1"));
        assert!(
            !text.contains("workspace") && !text.contains("dispatch") && !text.contains("tempfile"),
            "{text}"
        );
        let why = standalone("fmerge-runtime", member, workspace, &["fmerge-runtime"]).unwrap_err();
        assert!(
            format!("{why:#}").contains("depends on fmerge-contract by path"),
            "{why:#}"
        );
    }
}
