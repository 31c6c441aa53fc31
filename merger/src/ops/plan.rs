//! The plan operation: the search on the application's graph under the
//! team's constraints (or a plan file's groups valued, `--evaluate`), the
//! dry-run build of the groups whose caller's lock file is not the graph's
//! (`dry_run`), then plan.toml, one group file per merge, plan.json, the
//! report and, if asked, the front.

mod dry_run;

use super::absolute;
use crate::graph::Graph;
use crate::message::print_written;
use crate::options::CargoFlags;
use crate::options::plan::Planning;
use crate::options::values::MessageFormat;
use crate::plan::{self, PlanFile};
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};

/// One plan to make: its flags checked, its graph read.
pub struct Request {
    pub graph: Graph,
    /// The constraints, the search and its time (`fmerge plan`'s flags).
    pub planning: Planning,
    /// A plan file (read, checked) whose groups are valued instead of
    /// searched.
    pub evaluate: Option<PlanFile>,
    /// `--no-dry-run`: write the plan without building the groups whose
    /// caller's lock file is not the graph's, as `fmerge build` would.
    pub no_dry_run: bool,
    /// How that build runs.
    pub cargo: CargoFlags,
    /// Where the files go.
    pub out: PathBuf,
    /// Also the Pareto front, listed and drawn.
    pub front: bool,
    pub format: MessageFormat,
}

/// Makes the plan and writes its files; stdout gets the report (stderr with
/// `--message-format json`) and the paths written.
pub fn plan(request: Request) -> Result<()> {
    let Request {
        mut graph,
        planning:
            Planning {
                constraints,
                hop_source,
                method,
                time_limit,
            },
        evaluate,
        no_dry_run,
        cargo,
        out,
        front,
        format,
    } = request;
    let dry_run::Solved {
        model,
        plan,
        how,
        checked,
    } = if evaluate.is_some() || no_dry_run {
        let model = plan::model(&graph, &constraints)?;
        let (plan, how) = match &evaluate {
            Some(file) => (file.plan(&model)?, "given (--evaluate)".to_string()),
            None => {
                let solution = plan::solve_within(&model, method, time_limit)?;
                let how = solution.says(&model);
                (solution.plan, how)
            }
        };
        dry_run::Solved {
            model,
            plan,
            how,
            checked: Vec::new(),
        }
    } else {
        dry_run::solve(&mut graph, &constraints, method, time_limit, &cargo)?
    };
    std::fs::create_dir_all(&out).with_context(|| {
        format!(
            "cannot create {}\nfix: give a writable --out",
            out.display()
        )
    })?;
    let stack = graph.stack.as_deref().map(|s| relative_to(s, &out));
    let plan_file = out.join("plan.toml");
    fmerge_cargo::artifact::write(
        &plan_file,
        plan::plan_toml(&model, &plan, stack.as_deref(), &how).as_bytes(),
    )?;
    // Check what was written reads back as a plan.
    PlanFile::load(&plan_file)?;
    let arrivals = model.value(&plan.groups).arrivals;
    let mut written = vec![plan_file];
    for crate::plan::model::CallerGroup { caller: r, set } in plan.merged() {
        let hops = model.flow(r, set).removed;
        let path = out.join(format!("{}.toml", model.names[r]));
        fmerge_cargo::artifact::write(
            &path,
            plan::group_toml(&model, r, set, hops * arrivals[r]).as_bytes(),
        )?;
        written.push(path);
    }
    let figures = out.join("plan.json");
    let mut json = plan::json(&model, &plan, &how);
    if !checked.is_empty() {
        let mut value: serde_json::Value = serde_json::from_str(&json)?;
        value["dry_run"] = dry_run::json(&checked);
        json = serde_json::to_string_pretty(&value)? + "\n";
    }
    fmerge_cargo::artifact::write(&figures, json.as_bytes())?;
    written.push(figures);
    let json = format == MessageFormat::Json;
    // The report is for people: on stdout, unless stdout is for records.
    let say = |text: String| {
        if json {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    };
    say(plan::report(&model, &plan, &how, hop_source));
    say(dry_run::report(&checked, graph.lock.as_deref()));
    if front {
        let points = plan::front::front(&model, method, time_limit)?;
        say(plan::front::table(&model, &points, &plan));
        let picture = out.join("front.svg");
        fmerge_cargo::artifact::write(&picture, plan::front::svg(&points, &plan)?.as_bytes())?;
        written.push(picture);
    }
    for path in written {
        print_written(&path, format);
    }
    Ok(())
}

/// `path` relative to `dir` when it lies below dir's parent chain; else absolute.
fn relative_to(path: &Path, dir: &Path) -> PathBuf {
    let (path, dir) = (absolute(path), absolute(dir));
    let common = path
        .components()
        .zip(dir.components())
        .take_while(|(a, b)| a == b)
        .count();
    if common == 0 {
        return path;
    }
    let mut out = PathBuf::new();
    for _ in dir.components().skip(common) {
        out.push("..");
    }
    for c in path.components().skip(common) {
        out.push(c);
    }
    out
}
