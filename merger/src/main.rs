//! The `fmerge` command: a thin layer over the library.

use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand};
use fmerge::group::{self, Group};
use fmerge::options::Given;
use fmerge_ship::image::{self, ImageSpec};
use fmerge_ship::push::{self, Auth, PushOptions};
use fmerge_ship::stack::{self, CalleeEnv, StackSpec};
use fmerge_ship::{stackfile, template};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "fmerge",
    version,
    about = "Merge Rust OpenFaaS functions at LLVM IR level into one binary, so their RPCs become in-process calls."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Merge CALLER with its CALLEES into one binary (and optionally an image).
    Build(Box<BuildArgs>),
    /// Install the faas-cli template `rust-fmerge` into ./template/, so that
    /// `faas-cli new --lang rust-fmerge NAME` makes a function fmerge can merge.
    Template(TemplateArgs),
    /// The application's static call graph from the functions' code (JSON, DOT, a picture).
    Graph(fmerge::plan::cli::GraphArgs),
    /// Propose the merge groups that remove the most gateway hops, and write them as group files.
    Plan(fmerge::plan::cli::PlanArgs),
}

#[derive(Args)]
struct TemplateArgs {
    /// The folder whose template/ gets it (where your stack.yml is).
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// New functions depend on fmerge-runtime at this path
    /// [default: the runtime of the fmerge checkout this binary was built from].
    #[arg(long, value_name = "PATH", conflicts_with = "runtime_git")]
    runtime_path: Option<PathBuf>,
    /// New functions depend on fmerge-runtime from this git repository (what
    /// `faas-cli build` needs: its Docker build sees only the function).
    #[arg(long, value_name = "URL")]
    runtime_git: Option<String>,
}

#[derive(Args, Clone)]
struct BuildArgs {
    /// The function whose main the merged binary runs.
    caller: Option<String>,
    /// Build every group of a plan (`fmerge plan`'s plan.toml) with ONE cargo
    /// build, merging the groups in parallel; with --image/--push, one
    /// stack.merged.yml for the whole application.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["caller", "config", "all"])]
    plan: Option<PathBuf>,
    /// Plan the application of -f STACK with the default constraints (into
    /// plan/ beside it), then build every group as --plan does.
    #[arg(long, requires = "yaml", conflicts_with_all = ["caller", "config"])]
    all: bool,
    /// The merge options (the same in a group file).
    #[command(flatten)]
    merge: Given,
    /// A merge group file (TOML); command-line options override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A Cargo.toml of the functions' workspace (default: the one around the
    /// current directory). Repeat it for functions in separate projects.
    #[arg(long, value_name = "PATH")]
    manifest_path: Vec<PathBuf>,
    /// A faas-cli stack file: functions are found by their entries (`handler:`
    /// folder), and a merged stack is written beside it (with --image or --push).
    #[arg(short = 'f', long = "yaml", value_name = "STACK")]
    yaml: Option<PathBuf>,
    /// In the merged stack, drop the callees' own entries (by default they stay
    /// deployed, since other callers may still call them over the gateway).
    #[arg(long)]
    remove_callees: bool,
    /// What stdout gets: `human` (the paths written, the binary's last) or
    /// `json` (cargo's convention: one JSON object per line, the last with
    /// `"reason": "merged"`). Progress and warnings always go to stderr.
    #[arg(long, value_name = "FMT", default_value = "human", value_parser = ["human", "json"])]
    message_format: String,
    /// Also build a minimal OpenFaaS image in the local Docker Engine, and write stack.yml.
    #[arg(long)]
    image: bool,
    /// Build the image, then push it (implies --image).
    #[arg(long)]
    push: bool,
    /// The image reference, e.g. docker.io/you/pair:v1 or 127.0.0.1:5000/pair:v1
    /// [default: <REGISTRY>/<NAME>:<content hash>].
    #[arg(long, value_name = "REF")]
    tag: Option<String>,
    /// Registry and namespace for the default tag, e.g. docker.io/you.
    #[arg(long, value_name = "PREFIX", env = "FMERGE_REGISTRY")]
    registry: Option<String>,
    /// How push progress is shown: auto (bars on a terminal, lines otherwise), bars, plain, quiet
    /// [default: auto].
    #[arg(long, value_name = "MODE")]
    progress: Option<String>,
    /// The source revision recorded in the image labels [default: `git rev-parse HEAD`].
    #[arg(long, value_name = "REV", env = "FMERGE_SOURCE_REVISION")]
    source_revision: Option<String>,
    /// Where push credentials come from: auto (FMERGE_REGISTRY_USER/FMERGE_REGISTRY_PASSWORD,
    /// else ~/.docker/config.json), env, docker, none.
    #[arg(long, value_name = "SOURCE")]
    registry_auth: Option<String>,
    /// The OpenFaaS gateway written into stack.yml.
    #[arg(long, value_name = "URL")]
    gateway: Option<String>,
}

/// jemalloc for fmerge and, through the overridden `malloc`, for libLLVM: most
/// of a merge is LLVM allocating, and glibc's allocator is the slower one there.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build(*args),
        Command::Template(args) => template(args),
        Command::Graph(args) => fmerge::plan::cli::graph_command(args),
        Command::Plan(args) => fmerge::plan::cli::plan_command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn template(args: TemplateArgs) -> Result<()> {
    use template::Runtime;
    let runtime = match (args.runtime_path, args.runtime_git) {
        (Some(path), _) => {
            let path = path
                .canonicalize()
                .with_context(|| format!("--runtime-path {}: no such folder", path.display()))?;
            anyhow::ensure!(
                path.join("Cargo.toml").is_file(),
                "--runtime-path {}: no Cargo.toml there",
                path.display()
            );
            Runtime::Path(path)
        }
        (None, Some(url)) => Runtime::Git(url),
        (None, None) => Runtime::at(&fmerge::assets::runtime_dir())
            .context("this fmerge was built from a checkout whose runtime has moved")?,
    };
    let installed = template::install(&args.dir, fmerge::assets::FAAS_TEMPLATE, &runtime)?;
    eprintln!(
        "fmerge: installed the {} template; create a function with `faas-cli new --lang {} NAME`",
        template::LANG,
        template::LANG
    );
    println!("{}", installed.display());
    Ok(())
}

/// Everything one build needs, from the command line over the group file,
/// checked before anything is built: a typo in an image option must not cost
/// a whole build first.
struct Request {
    opts: fmerge::Options,
    ship: Option<Ship>,
    json: bool,
}

fn request(args: BuildArgs) -> Result<Request> {
    let group = match &args.config {
        Some(path) => Group::load(path)?,
        None => Group::default(),
    };
    let Some(caller) = args.caller.or(group.caller.clone()) else {
        bail!(
            "no functions to merge: run `fmerge build <CALLER> <CALLEE>...` or `fmerge build --config <group.toml>`"
        );
    };
    let mut opts = fmerge::Options::combine(&caller, &args.merge, &group);
    let stack_in = match &args.yaml {
        Some(path) => Some(stackfile::StackIn::load(path)?),
        None => None,
    };
    let members: Vec<String> = std::iter::once(&caller)
        .chain(&opts.callees)
        .cloned()
        .collect();
    let mut entries = Vec::new();
    if let Some(stack) = &stack_in {
        anyhow::ensure!(
            args.manifest_path.is_empty(),
            "-f and --manifest-path both say where the functions are; fix: give one of them"
        );
        for name in &members {
            entries.push(stack.entry(name)?);
        }
        opts.sources = entries
            .iter()
            .map(|e| fmerge_cargo::workspace::Source {
                function: e.name.clone(),
                manifest: e.handler.join("Cargo.toml"),
            })
            .collect();
    } else if args.manifest_path.len() > 1 {
        opts.sources = fmerge_cargo::workspace::locate(&members, &args.manifest_path)?;
    } else {
        opts.manifest_path = args
            .manifest_path
            .into_iter()
            .next()
            .or(group.manifest_path.clone());
    }
    fmerge::pipeline::validate(&opts)?;

    let image = group.image.clone().unwrap_or_default();
    let push = args.push || image.push;
    let ship = if args.image || image.build || push {
        let auth: Auth = args
            .registry_auth
            .or(image.registry_auth)
            .as_deref()
            .unwrap_or("auto")
            .parse()?;
        let progress: push::Progress = if opts.quiet {
            push::Progress::Quiet
        } else {
            args.progress
                .or(image.progress)
                .as_deref()
                .unwrap_or("auto")
                .parse()?
        };
        let gateway = args.gateway.or(image.gateway);
        if let Some(gateway) = &gateway {
            anyhow::ensure!(
                gateway.starts_with("http://") || gateway.starts_with("https://"),
                "--gateway {gateway:?} is not an http(s) URL"
            );
        }
        let name = opts
            .name
            .clone()
            .unwrap_or_else(|| group::default_name(&caller));
        stack::validate_function_name(&name)
            .context("the merge name (--name) is also the image's name")?;
        for member in std::iter::once(&caller).chain(&opts.callees) {
            stack::validate_function_name(member)?;
        }
        let tag = args.tag.or(image.tag);
        if let Some(tag) = &tag {
            let reference = image::ImageRef::parse(tag)?;
            anyhow::ensure!(
                reference.digest().is_none(),
                "cannot tag an image with a digest reference ({tag}); fix: give a tag like `repo/name:v1`"
            );
            if push {
                reference.check_pushable()?;
            }
        }
        let registry = args.registry.or(image.registry).filter(|p| !p.is_empty());
        let stack = stack_in.map(|s| (s, entries, args.remove_callees));
        Some(Ship {
            tag,
            registry,
            push,
            auth,
            progress,
            gateway,
            revision: args.source_revision,
            stack,
        })
    } else {
        // Image options without an image are a mistake, not a no-op.
        for (flag, given) in [
            ("--tag", args.tag.is_some()),
            ("--gateway", args.gateway.is_some()),
            ("--progress", args.progress.is_some()),
            ("--registry-auth", args.registry_auth.is_some()),
        ] {
            anyhow::ensure!(
                !given,
                "{flag} applies to the image, and no image is built; fix: add --image (or --push), or drop {flag}"
            );
        }
        None
    };
    Ok(Request {
        opts,
        ship,
        json: args.message_format == "json",
    })
}

fn build(args: BuildArgs) -> Result<()> {
    if args.plan.is_some() || args.all {
        return build_plan(args);
    }
    let Request { opts, ship, json } = request(args)?;
    let merged = fmerge::build(&opts)?;
    if json {
        print_json(&merged);
    } else if let Some(ll) = &merged.ll {
        println!("{}", ll.display());
    }
    if let Some(ship) = ship {
        let (reference, stack) = ship.run(&merged, opts.quiet)?;
        if json {
            println!(
                "{}",
                serde_json::json!({ "reason": "image", "reference": reference, "stack": stack })
            );
        } else {
            println!("{reference}");
            println!("{}", stack.display());
        }
    }
    print_merged(&merged, json);
    Ok(())
}

/// A merged group's last line: its binary, or with `--message-format json`
/// the `merged` record (the same for one group and for every group of a plan).
fn print_merged(merged: &fmerge::Merged, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::json!({
                "reason": "merged",
                "name": merged.name,
                "binary": merged.binary,
                "ll": merged.ll,
                "members": merged.members,
                "native_libs": merged.native_libs,
                "units": merged.units,
                "cached": merged.cached,
            })
        );
    } else {
        println!("{}", merged.binary.display());
    }
}

/// `build --plan FILE` / `build -f STACK --all`: every group from one cargo
/// build, one merged stack for the whole application.
fn build_plan(args: BuildArgs) -> Result<()> {
    for (flag, given) in [
        ("--name", args.merge.name.is_some()),
        ("--out", args.merge.out.is_some()),
        ("--tag", args.tag.is_some()),
        ("--rewrite", !args.merge.rewrite.is_empty()),
    ] {
        anyhow::ensure!(
            !given,
            "{flag} names one group's output, and a plan builds several; fix: drop {flag} (each group's name is in the plan; images are tagged <REGISTRY>/<NAME>:<content hash>), or build that group alone with --config"
        );
    }
    let plan_path = match &args.plan {
        Some(path) => path.clone(),
        None => {
            let stack = args.yaml.clone().expect("clap: --all requires -f");
            let mut plan = fmerge::plan::cli::PlanArgs {
                source: fmerge::plan::cli::Source {
                    yaml: Some(stack.clone()),
                    metrics: None,
                    access_log: None,
                    target_dir: args.merge.target_dir.clone(),
                    jobs: args.merge.jobs,
                    quiet: args.merge.quiet,
                },
                graph: None,
                max_memory: None,
                keep_apart: Vec::new(),
                hop_ms: None,
                search: "auto".into(),
                out: None,
            };
            let dir = stack.parent().filter(|p| !p.as_os_str().is_empty());
            let out = dir.unwrap_or(std::path::Path::new(".")).join("plan");
            plan.out = Some(out.clone());
            fmerge::plan::cli::plan_command(plan)?;
            out.join("plan.toml")
        }
    };
    let (plan, groups) = fmerge::plan::PlanFile::load(&plan_path)?;
    anyhow::ensure!(
        !groups.is_empty(),
        "{}: the plan has no [[group]] (no merge pays off); nothing to build",
        plan_path.display()
    );
    let stack_path = args.yaml.clone().or(plan.stack.clone());
    let mut requests = Vec::new();
    for g in &groups {
        let caller = g.caller.clone().expect("a plan group has a caller");
        let mut one = args.clone();
        one.plan = None;
        one.all = false;
        one.caller = Some(caller.clone());
        one.merge.callees = g.callees.clone();
        one.merge.name = g.name.clone();
        one.yaml = stack_path.clone();
        let request = request(one)
            .with_context(|| format!("{}: the group of {caller}", plan_path.display()))?;
        requests.push(request);
    }
    let opts: Vec<fmerge::Options> = requests.iter().map(|r| r.opts.clone()).collect();
    let merged = fmerge::build_many(&opts)?;
    let (quiet, json) = (opts[0].quiet, requests[0].json);
    let mut specs = Vec::new();
    let mut whole = None;
    for (request, merged) in requests.into_iter().zip(&merged) {
        if json {
            print_json(merged);
        }
        if let Some(ship) = request.ship {
            let (reference, spec, stack) = ship.image(merged, quiet)?;
            let own = match stack {
                Some((input, remove)) => {
                    specs.push(spec);
                    whole = Some((input, remove));
                    None
                }
                None => Some(stack::write(
                    &spec,
                    merged.binary.parent().expect("a directory"),
                )?),
            };
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "reason": "image", "name": merged.name, "reference": reference, "stack": own })
                );
            } else {
                println!("{reference}");
                own.iter().for_each(|p| println!("{}", p.display()));
            }
        }
        print_merged(merged, json);
    }
    if let Some((input, remove)) = whole {
        let path = merged_stack_path(&input);
        fmerge_cargo::artifact::write(&path, input.merged_all(&specs, remove)?.as_bytes())?;
        if json {
            println!(
                "{}",
                serde_json::json!({ "reason": "stack", "stack": path })
            );
        } else {
            println!("{}", path.display());
        }
    }
    Ok(())
}

fn merged_stack_path(input: &stackfile::StackIn) -> PathBuf {
    let stem = input
        .path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("stack");
    input.path.with_file_name(format!("{stem}.merged.yml"))
}

/// The merge as JSON lines: each stage with its time, each setting with the
/// variable it is read from, each warning.
fn print_json(merged: &fmerge::Merged) {
    for (stage, took) in &merged.timings {
        println!(
            "{}",
            serde_json::json!({ "reason": "stage", "stage": stage, "seconds": took.as_secs_f64() })
        );
    }
    let caller = &merged.members[0];
    for s in &merged.settings {
        println!(
            "{}",
            serde_json::json!({
                "reason": "setting",
                "function": s.function,
                "key": s.key,
                "variable": s.variable(caller),
                "default": (!s.from_env).then_some(&s.default),
            })
        );
    }
    for w in &merged.warnings {
        println!(
            "{}",
            serde_json::json!({ "reason": "warning", "message": w })
        );
    }
}

/// The image, push and stack.yml part of a build.
struct Ship {
    tag: Option<String>,
    registry: Option<String>,
    push: bool,
    auth: Auth,
    progress: push::Progress,
    gateway: Option<String>,
    revision: Option<String>,
    /// The input stack.yml, its members' entries, and whether to drop the callees.
    stack: Option<(stackfile::StackIn, Vec<stackfile::Entry>, bool)>,
}

impl Ship {
    /// Builds the image, pushes it if asked, and writes stack.yml next to the
    /// binary. Returns the reference to deploy (pinned by digest once pushed).
    fn run(self, merged: &fmerge::Merged, quiet: bool) -> Result<(String, PathBuf)> {
        let (reference, spec, stack) = self.image(merged, quiet)?;
        let Some((input, remove_callees)) = stack else {
            let dir = merged.binary.parent().expect("a directory");
            return Ok((reference, stack::write(&spec, dir)?));
        };
        let path = merged_stack_path(&input);
        fmerge_cargo::artifact::write(&path, input.merged(&spec, remove_callees)?.as_bytes())?;
        Ok((reference, path))
    }

    /// Builds the image and pushes it if asked. Returns the reference to
    /// deploy (pinned by digest once pushed), the merged function's stack
    /// entry, and the input stack file to write it into, if any.
    #[allow(clippy::type_complexity)]
    fn image(
        self,
        merged: &fmerge::Merged,
        quiet: bool,
    ) -> Result<(String, StackSpec, Option<(stackfile::StackIn, bool)>)> {
        let mut spec = ImageSpec::new(
            &merged.binary,
            &merged.name,
            merged.members.clone(),
            fmerge::assets::DOCKERFILE,
        );
        spec.tag = self.tag;
        spec.repository_prefix = self.registry.filter(|p| !p.is_empty());
        spec.source_revision = self.revision.or_else(git_revision);
        let built = image::build(&spec)?;
        if !quiet {
            eprintln!("fmerge: {built}");
        }
        let reference = if self.push {
            let options = PushOptions {
                auth: self.auth,
                progress: self.progress,
                ..PushOptions::default()
            };
            push::push_built(&built, &options)?.pinned()
        } else {
            built.reference.clone()
        };
        let mut stack = StackSpec::new(merged.members.clone(), &reference);
        if let Some(gateway) = self.gateway {
            stack.gateway = gateway;
        }
        let mut spec = stack_settings(stack, merged);
        let Some((input, entries, remove_callees)) = self.stack else {
            return Ok((reference, spec, None));
        };
        // The stack's own settings win over the code's defaults.
        for note in stackfile::merge_into(&mut spec, &entries) {
            if !quiet {
                eprintln!("fmerge: note: {note}");
            }
        }
        Ok((reference, spec, Some((input, remove_callees))))
    }
}

/// The settings each member reads, with their (rewritten) defaults: the
/// caller's under their plain names, the callees' namespaced.
fn stack_settings(mut stack: StackSpec, merged: &fmerge::Merged) -> StackSpec {
    let caller = &merged.members[0];
    // Read with std::env and no default: fmerge has no value to write, so it
    // names the variables the deployment must set (unset stays unset).
    let unset: Vec<String> = merged
        .settings
        .iter()
        .filter(|s| s.from_env)
        .map(|s| s.variable(caller))
        .collect();
    if !unset.is_empty() {
        stack
            .annotations
            .push(("org.fmerge.env-without-default".into(), unset.join(" ")));
    }
    // A default with `$` would be substituted by faas-cli on deploy; the code's
    // default applies anyway when the variable is unset, so it is left out.
    for s in merged
        .settings
        .iter()
        .filter(|s| !s.from_env && !s.default.contains('$'))
    {
        if &s.function == caller {
            stack.environment.push((s.key.clone(), s.default.clone()));
        } else {
            stack.callee_environment.push(CalleeEnv {
                function: s.function.clone(),
                key: s.key.clone(),
                value: s.default.clone(),
            });
        }
    }
    stack
}

fn git_revision() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
