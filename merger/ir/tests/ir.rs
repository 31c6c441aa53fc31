//! IR unit tests: each pass on small `.ll` inputs, in seconds, with no cargo
//! build, Redis or nginx. A case is `tests/ir/<pass>/<case>.ll`; `; KEY: value`
//! lines at its top say how to run it and what must come out:
//! - `ERROR: text`: the pass refuses, and its message holds each text;
//! - otherwise the rewritten module must equal `<case>.out.ll` beside it;
//! - pass-specific keys (`REWRITE`, `OWNERS`, `CALLEES`, `ISOLATED`,
//!   `WARNING`, `RENAMED`, `NATIVE`, `SETTING`…) are read by that pass's test;
//!   a symbols case holds several crates, each after `; UNIT: <crate> [<function>]`.
//!   `FMERGE_BLESS=1 cargo test -p fmerge-ir` writes those files;
//!   read the diff before committing it.
//!
//! Run: `cargo test --release -p fmerge-ir` (no cargo build of functions, no services).

use fmerge_ir::passes::{Crate, Facts, config, dispatch, endpoints, env, statics, symbols};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

struct Case {
    path: PathBuf,
    headers: Vec<(String, String)>,
}

impl Case {
    fn get(&self, key: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn one(&self, key: &str) -> Option<&str> {
        self.get(key).first().copied()
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.one(key)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn cases(pass: &str) -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/ir")
        .join(pass);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "ll") && !p.to_string_lossy().ends_with(".out.ll")
        })
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no cases in {}", dir.display());
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let headers = text
                .lines()
                .filter_map(|l| l.strip_prefix("; "))
                .filter_map(|l| l.split_once(": "))
                .filter(|(k, _)| k.chars().all(|c| c.is_ascii_uppercase() || c == '-'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Case { path, headers }
        })
        .collect()
}

/// One module from IR text.
fn parse_text<'ctx>(ctx: &'ctx Context, name: &str, text: &str) -> Module<'ctx> {
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), name);
    ctx.create_module_from_ir(buffer)
        .unwrap_or_else(|e| panic!("{name} does not parse: {e}"))
}

/// The case's module, named by its file name alone, so that the expected
/// output does not depend on where the repo is checked out.
fn parse<'ctx>(ctx: &'ctx Context, case: &Case) -> Module<'ctx> {
    let name = case.path.file_name().unwrap().to_string_lossy();
    parse_text(ctx, &name, &std::fs::read_to_string(&case.path).unwrap())
}

/// Checks a pass's outcome against the case: the refusal it expects, or the
/// module it expects (blessed into `<case>.out.ll`).
fn check(case: &Case, outcome: Result<&Module<'_>, String>, failures: &mut Vec<String>) {
    let name = case
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let errors = case.get("ERROR");
    match outcome {
        Err(e) if errors.is_empty() => failures.push(format!("{name}: unexpected refusal: {e}")),
        Err(e) => {
            for needle in errors.iter().filter(|n| !e.contains(**n)) {
                failures.push(format!("{name}: expected {needle:?} in the refusal:\n{e}"));
            }
        }
        Ok(_) if !errors.is_empty() => {
            failures.push(format!("{name}: expected a refusal, the pass accepted it"))
        }
        Ok(module) => {
            if let Err(e) = module.verify() {
                failures.push(format!("{name}: the output does not verify: {e}"));
            }
            let got = module.print_to_string().to_string();
            let expected_path = case.path.with_extension("out.ll");
            if std::env::var_os("FMERGE_BLESS").is_some() {
                std::fs::write(&expected_path, &got).unwrap();
            }
            match std::fs::read_to_string(&expected_path) {
                Ok(want) if want == got => {}
                Ok(want) => failures.push(format!(
                    "{name}: output differs from {}:\n--- want\n{want}\n--- got\n{got}",
                    expected_path.display()
                )),
                Err(_) => failures.push(format!(
                    "{name}: no {} (run with FMERGE_BLESS=1 and read it)",
                    expected_path.display()
                )),
            }
        }
    }
}

fn finish(pass: &str, failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} {pass} case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn endpoints() {
    let mut failures = Vec::new();
    for case in cases("endpoints") {
        let ctx = Context::create();
        let module = parse(&ctx, &case);
        let callees = case.list("CALLEES");
        let rewrite =
            endpoints::Rewrite::parse(case.one("REWRITE").expect("REWRITE"), &callees).unwrap();
        let owners: BTreeSet<String> = case.list("OWNERS").into_iter().collect();
        let facts = Facts {
            caller: "caller-fn".into(),
            callees,
            rewrites: vec![rewrite],
            ..Facts::default()
        };
        let krate = Crate {
            name: "callee_crate",
            package: "callee-crate",
            function: None,
            owners: &owners,
            local: true,
        };
        let outcome = endpoints::run(&module, &krate, &facts);
        let hits = outcome.as_ref().map(|h| h[0]).unwrap_or(0);
        let want_hits: usize = case.one("HITS").map_or(1, |h| h.parse().unwrap());
        if outcome.is_ok() && hits != want_hits {
            failures.push(format!(
                "{}: rewrote {hits} literal(s), expected {want_hits}",
                case.path.display()
            ));
        }
        check(
            &case,
            outcome
                .as_ref()
                .map(|_| &module)
                .map_err(|e| format!("{e:#}")),
            &mut failures,
        );
    }
    finish("endpoints", failures);
}

#[test]
fn env() {
    let mut failures = Vec::new();
    for case in cases("env") {
        let ctx = Context::create();
        let module = parse(&ctx, &case);
        let owner = case.one("OWNER");
        let mut owners: BTreeSet<String> = case.list("SHARED-BY").into_iter().collect();
        if let Some(o) = owner {
            owners.insert(o.to_string());
        }
        let facts = Facts {
            caller: "front".into(),
            callees: vec!["ep-env".into()],
            ..Facts::default()
        };
        let krate = Crate {
            name: "ep_env",
            package: "ep-env",
            function: None,
            owners: &owners,
            local: true,
        };
        let report = env::run(&module, &krate, &facts);
        let name = case
            .path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let want: BTreeSet<(String, String)> = case
            .get("ISOLATED")
            .iter()
            .map(|v| {
                v.split_once(' ')
                    .map(|(f, k)| (f.to_string(), k.to_string()))
                    .unwrap()
            })
            .collect();
        if report.isolated != want {
            failures.push(format!(
                "{name}: isolated {:?}, expected {want:?}",
                report.isolated
            ));
        }
        for needle in case.get("WARNING") {
            if !report.warnings.iter().any(|w| w.contains(needle)) {
                failures.push(format!(
                    "{name}: expected a warning with {needle:?}, got {:?}",
                    report.warnings
                ));
            }
        }
        if case.get("WARNING").is_empty() && !report.warnings.is_empty() {
            failures.push(format!("{name}: unexpected warnings {:?}", report.warnings));
        }
        check(&case, Ok(&module), &mut failures);
    }
    finish("env", failures);
}

#[test]
fn statics() {
    let mut failures = Vec::new();
    for case in cases("statics") {
        let ctx = Context::create();
        let module = parse(&ctx, &case);
        let owners: BTreeSet<String> = case.list("FUNCTIONS").into_iter().collect();
        let facts = Facts {
            caller: "st-front".into(),
            allow_shared_static: case.list("ALLOW"),
            ..Facts::default()
        };
        let krate = Crate {
            name: "st_helper",
            package: "st-helper",
            function: None,
            owners: &owners,
            local: true,
        };
        let outcome = statics::run(&module, &krate, &facts);
        check(
            &case,
            outcome
                .as_ref()
                .map(|_| &module)
                .map_err(|e| format!("{e:#}")),
            &mut failures,
        );
    }
    finish("statics", failures);
}

/// A case of several crates: `; UNIT: <crate> [<function>]` starts each;
/// gives `(crate, function, IR)`.
fn units(case: &Case) -> Vec<(String, Option<String>, String)> {
    let text = std::fs::read_to_string(&case.path).unwrap();
    let mut out: Vec<(String, Option<String>, String)> = Vec::new();
    for line in text.lines() {
        if let Some(spec) = line.strip_prefix("; UNIT: ") {
            let mut words = spec.split_whitespace();
            let crate_name = words.next().expect("a crate name").to_string();
            out.push((crate_name, words.next().map(str::to_string), String::new()));
        } else if let Some((_, _, ir)) = out.last_mut() {
            ir.push_str(line);
            ir.push('\n');
        }
    }
    assert!(
        !out.is_empty(),
        "{}: no `; UNIT:` sections",
        case.path.display()
    );
    out
}

#[test]
fn symbols() {
    let mut failures = Vec::new();
    for case in cases("symbols") {
        let ctx = Context::create();
        let mut facts = Facts {
            caller: case.one("CALLER").expect("CALLER").into(),
            ..Facts::default()
        };
        for native in case.get("NATIVE") {
            let (symbol, lib) = native.split_once(' ').unwrap();
            facts
                .native_refs
                .insert(symbol.to_string(), lib.to_string());
        }
        let mut exports = symbols::Exports::default();
        let mut merged: Option<Module> = None;
        let mut outcome: anyhow::Result<()> = Ok(());
        for (crate_name, function, ir) in units(&case) {
            let module = parse_text(&ctx, &crate_name, &ir);
            let owners: BTreeSet<String> = function.iter().cloned().collect();
            let krate = Crate {
                name: &crate_name,
                package: &crate_name,
                function: function.as_deref(),
                owners: &owners,
                local: true,
            };
            if let Err(e) = symbols::prepare(&module, &krate, &facts, &mut exports) {
                outcome = Err(e);
                break;
            }
            match &merged {
                None => merged = Some(module),
                Some(dest) => dest
                    .link_in_module(module)
                    .unwrap_or_else(|e| panic!("{}: link: {e}", case.path.display())),
            }
        }
        let merged = merged.unwrap();
        if outcome.is_ok() {
            outcome = symbols::check_allocator(&merged);
        }
        if outcome.is_ok() {
            symbols::run(&merged);
        }
        let want: Vec<&str> = case.get("RENAMED");
        if outcome.is_ok() && exports.renamed != want {
            failures.push(format!(
                "{}: renamed {:?}, expected {want:?}",
                case.path.display(),
                exports.renamed
            ));
        }
        check(
            &case,
            outcome.map(|_| &merged).map_err(|e| format!("{e:#}")),
            &mut failures,
        );
    }
    finish("symbols", failures);
}

#[test]
fn dispatch() {
    let mut failures = Vec::new();
    for case in cases("dispatch") {
        let ctx = Context::create();
        let module = parse(&ctx, &case);
        let outcome = dispatch::run(&module, &case.list("CALLEES"));
        check(
            &case,
            outcome.map(|_| &module).map_err(|e| format!("{e:#}")),
            &mut failures,
        );
    }
    finish("dispatch", failures);
}

#[test]
fn config() {
    let mut failures = Vec::new();
    for case in cases("config") {
        let ctx = Context::create();
        let module = parse(&ctx, &case);
        let got: Vec<String> = config::run(&module)
            .iter()
            .map(|s| format!("{} {} {}", s.function, s.key, s.default))
            .collect();
        let mut want: Vec<String> = case.get("SETTING").iter().map(|s| s.to_string()).collect();
        want.sort();
        if got != want {
            failures.push(format!(
                "{}: settings {got:?}, expected {want:?}",
                case.path.display()
            ));
        }
    }
    finish("config", failures);
}
