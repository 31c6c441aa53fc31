//! `fmerge build --plan`: every group of a plan from ONE cargo build, and one
//! stack.merged.yml for the whole application (without the deployments the
//! plan drops, with its pods' requests); and its bad input.
//!
//! cargo runs are counted through a wrapper named by `CARGO` (what fmerge
//! and cargo_metadata run), which logs its subcommand and execs the real one.

#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use std::path::Path;
use support::*;

/// Two groups of the real socialNetwork functions.
const PLAN: &str = r#"stack = "stack.yml"
hop-ms = 1.0
dropped = ["user-mention"]

[[group]]
caller = "text-service"
callees = ["url-shorten", "user-mention"]
name = "text-service-merged"

[group.requests]
memory = "40Mi"

[[group]]
caller = "write-home-timeline"
callees = ["social-graph-get-followers"]
name = "write-home-timeline-merged"
"#;

/// A directory with this repo's stack file and `plan` as its plan.toml.
fn stack_and_plan(plan: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    stack_in(dir.path());
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    dir
}

/// A `cargo` that logs each run's subcommand to `log`.
fn cargo_wrapper(dir: &Path, log: &Path) -> std::path::PathBuf {
    let real = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let path = dir.join("cargo-counting");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\nexec '{real}' \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_plan_builds_every_group_with_one_cargo_build() {
    let dir = stack_and_plan(PLAN);
    let log = dir.path().join("cargo.log");
    let wrapper = cargo_wrapper(dir.path(), &log);
    let registry = format!("127.0.0.1:5000/plan-build-{}", std::process::id());
    // Without a Docker Engine (where CI does not require one) the images
    // and stack.merged.yml are left out.
    let engine =
        fmerge_testkit::dataplane::tool_present(fmerge_ship::image::engine::missing_reason());
    let mut args = vec!["--plan", "plan.toml", "--force", "--message-format", "json"];
    if engine {
        args.extend(["--image", "--registry", &registry]);
    }
    let Ran { ok, stdout, stderr } =
        fmerge(dir.path(), &args, &[("CARGO", wrapper.to_str().unwrap())]);
    assert!(ok, "{stderr}");
    let runs = std::fs::read_to_string(&log).unwrap();
    let builds = runs.lines().filter(|l| *l == "build").count();
    assert_eq!(builds, 1, "cargo runs:\n{runs}\n{stderr}");
    let names = ["text-service-merged", "write-home-timeline-merged"];
    for name in names {
        let binary = workspace_root().join("target/fmerge").join(name).join(name);
        assert!(binary.is_file(), "{} missing\n{stdout}", binary.display());
        assert!(stdout.contains(binary.to_str().unwrap()), "{stdout}");
        assert!(stderr.contains(&format!("[{name}]")), "{stderr}");
    }
    where_the_time_went(&stdout, &stderr, &names, engine);
    if !engine {
        return;
    }
    let merged = std::fs::read_to_string(dir.path().join("stack.merged.yml")).unwrap();
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&merged).unwrap();
    let functions = &doc["functions"];
    for (caller, name) in [
        ("text-service", "text-service-merged"),
        ("write-home-timeline", "write-home-timeline-merged"),
    ] {
        let image = functions[caller]["image"].as_str().unwrap_or_default();
        assert!(
            image.starts_with(&format!("{registry}/{name}:")),
            "{caller}: {image}\n{merged}"
        );
        let _ = std::process::Command::new("docker")
            .args(["rmi", "-f", image])
            .output();
    }
    // The plan's dropped deployment goes; its pod's requests are the plan's.
    assert!(functions["user-mention"].is_null(), "{merged}");
    assert_eq!(
        functions["text-service"]["requests"]["memory"].as_str(),
        Some("40Mi"),
        "{merged}"
    );
    // The other callees stay deployed (no --remove-callees), unchanged.
    assert!(
        functions["url-shorten"]["image"]
            .as_str()
            .unwrap()
            .contains("sn-url-shorten"),
        "{merged}"
    );
    assert!(functions["compose-post"].is_mapping(), "{merged}");
}

/// The per-stage report: every group and stage, each group's stages adding up
/// to its total, the sums over the groups, and cargo counted once.
fn where_the_time_went(stdout: &str, stderr: &str, names: &[&str], images: bool) {
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let timings = records
        .iter()
        .find(|r| r["reason"] == "timings")
        .unwrap_or_else(|| panic!("no timings record:\n{stdout}"));
    let secs = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("{v} in {timings}"));
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    let stages = [
        "read bitcode",
        "link IR",
        "passes",
        "codegen",
        "native link",
        "other",
        "image",
    ];
    let groups = timings["groups"].as_array().unwrap();
    let mut listed: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    listed.sort();
    assert_eq!(listed, names, "{timings}");
    let wall = &timings["wall"];
    for g in groups {
        let name = g["name"].as_str().unwrap();
        let own: f64 = stages.iter().map(|s| secs(&g["stages"][s])).sum();
        assert!(
            close(own, secs(&g["total"])),
            "{name}: stages add up to {own}: {g}"
        );
        assert!(
            secs(&g["stages"]["link IR"]) > 0.0 && secs(&g["stages"]["codegen"]) > 0.0,
            "{g}"
        );
        assert_eq!(secs(&g["stages"]["image"]) > 0.0, images, "{g}");
        let parts = secs(&g["codegen"]["optimize"]) + secs(&g["codegen"]["emit object"]);
        assert!(parts <= secs(&g["stages"]["codegen"]) + 1e-6, "{g}");
        // Each group merged within the merges' wall time, after cargo's.
        assert!(
            secs(&g["merge"]) <= secs(&wall["merging"]) + 1e-6,
            "{timings}"
        );
        let cargo = records
            .iter()
            .find(|r| r["reason"] == "stage" && r["name"] == name && r["stage"] == "cargo build");
        assert!(
            close(secs(&cargo.unwrap()["seconds"]), secs(&wall["cargo build"])),
            "{stdout}"
        );
    }
    for s in stages.iter().chain(&["total"]) {
        let over: f64 = groups
            .iter()
            .map(|g| {
                secs(if *s == "total" {
                    &g["total"]
                } else {
                    &g["stages"][s]
                })
            })
            .sum();
        assert!(close(over, secs(&timings["sum"][s])), "{s}: {timings}");
    }
    let parts = ["cargo build", "merging", "image"].map(|p| secs(&wall[p]));
    assert!(
        parts.iter().sum::<f64>() <= secs(&wall["total"]) + 1e-6,
        "{timings}"
    );
    let table = stderr
        .lines()
        .skip_while(|l| !l.contains("where the time went"))
        .collect::<Vec<_>>()
        .join("\n");
    for row in names
        .iter()
        .chain(&["sum of 2 groups", "wall: cargo build"])
    {
        assert!(table.contains(row), "{row} missing:\n{table}");
    }
}

#[test]
fn a_plan_naming_an_unknown_function_says_which() {
    let dir = stack_and_plan(&PLAN.replace("\"user-mention\"", "\"user-mentions\""));
    refuses(
        dir.path(),
        &["--plan", "plan.toml"],
        &["user-mentions", "the group of text-service"],
    );
}

#[test]
fn a_missing_plan_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    refuses(
        dir.path(),
        &["--plan", "nowhere/plan.toml"],
        &["cannot read the plan nowhere/plan.toml"],
    );
}

#[test]
fn a_plan_refuses_one_group_options() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.toml"), PLAN).unwrap();
    refuses(
        dir.path(),
        &["--plan", "plan.toml", "--name", "x"],
        &["--name names one group's output"],
    );
}

#[test]
fn a_plan_dropping_a_deployment_no_group_copies_is_refused() {
    let dir = stack_and_plan(&PLAN.replace(
        "dropped = [\"user-mention\"]",
        "dropped = [\"compose-post\"]",
    ));
    refuses(
        dir.path(),
        &["--plan", "plan.toml"],
        &["`dropped` names compose-post, which no group holds", "fix:"],
    );
}
