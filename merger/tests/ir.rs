//! IR unit tests: each pass on small `.ll` inputs, in seconds, with no cargo
//! build, Redis or nginx. A case is `tests/ir/<pass>/<case>.ll`; `; KEY: value`
//! lines at its top say how to run it and what must come out:
//! - `ERROR: text`: the pass refuses, and its message holds each text;
//! - otherwise the rewritten module must equal `<case>.out.ll` beside it;
//! - pass-specific keys (`REWRITE`, `OWNERS`, `CALLEES`, `ISOLATED`,
//!   `WARNING`, `RENAMED`, `NATIVE`, `SETTING`…) are read by that pass's test;
//!   a symbols case holds several crates, each after `; UNIT: <crate> [<function>]`.
//!   `FMERGE_BLESS=1 cargo test -p fmerge --test ir` writes those files;
//!   read the diff before committing it.
//!
//! Run: `cargo test --release -p fmerge --test ir`

use fmerge::emit::Unit;
use fmerge::passes::{config, dispatch, endpoints, env, statics, symbols};
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
        self.headers.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect()
    }

    fn one(&self, key: &str) -> Option<&str> {
        self.get(key).first().copied()
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.one(key).map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()).unwrap_or_default()
    }
}

fn cases(pass: &str) -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ir").join(pass);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ll") && !p.to_string_lossy().ends_with(".out.ll"))
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
    ctx.create_module_from_ir(buffer).unwrap_or_else(|e| panic!("{name} does not parse: {e}"))
}

fn parse<'ctx>(ctx: &'ctx Context, case: &Case) -> Module<'ctx> {
    let buffer = MemoryBuffer::create_from_file(&case.path).unwrap();
    ctx.create_module_from_ir(buffer).unwrap_or_else(|e| panic!("{} does not parse: {e}", case.path.display()))
}

/// Checks a pass's outcome against the case: the refusal it expects, or the
/// module it expects (blessed into `<case>.out.ll`).
fn check(case: &Case, outcome: Result<&Module<'_>, String>, failures: &mut Vec<String>) {
    let name = case.path.file_name().unwrap().to_string_lossy().into_owned();
    let errors = case.get("ERROR");
    match outcome {
        Err(e) if errors.is_empty() => failures.push(format!("{name}: unexpected refusal: {e}")),
        Err(e) => {
            for needle in errors.iter().filter(|n| !e.contains(**n)) {
                failures.push(format!("{name}: expected {needle:?} in the refusal:\n{e}"));
            }
        }
        Ok(_) if !errors.is_empty() => failures.push(format!("{name}: expected a refusal, the pass accepted it")),
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
                Ok(want) => failures.push(format!("{name}: output differs from {}:\n--- want\n{want}\n--- got\n{got}", expected_path.display())),
                Err(_) => failures.push(format!("{name}: no {} (run with FMERGE_BLESS=1 and read it)", expected_path.display())),
            }
        }
    }
}

fn finish(pass: &str, failures: Vec<String>) {
    assert!(failures.is_empty(), "{} {pass} case(s) failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn endpoints() {
    let mut failures = Vec::new();
    for case in cases("endpoints") {
        let ctx = Context::create();
        let module = parse(&ctx, &case);
        let callees = case.list("CALLEES");
        let rewrite = endpoints::Rewrite::parse(case.one("REWRITE").expect("REWRITE"), &callees).unwrap();
        let owners: BTreeSet<String> = case.list("OWNERS").into_iter().collect();
        let outcome = endpoints::run(&module, "callee_crate", &owners, &[rewrite], &callees);
        let hits = outcome.as_ref().map(|h| h[0]).unwrap_or(0);
        let want_hits: usize = case.one("HITS").map_or(1, |h| h.parse().unwrap());
        if outcome.is_ok() && hits != want_hits {
            failures.push(format!("{}: rewrote {hits} literal(s), expected {want_hits}", case.path.display()));
        }
        check(&case, outcome.as_ref().map(|_| &module).map_err(|e| format!("{e:#}")), &mut failures);
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
        let mut shared: BTreeSet<String> = case.list("SHARED-BY").into_iter().collect();
        if let Some(o) = owner {
            shared.insert(o.to_string());
        }
        let crate_name = "ep_env";
        let report = env::run(&module, crate_name, owner, &shared);
        let name = case.path.file_name().unwrap().to_string_lossy().into_owned();
        let want: BTreeSet<(String, String)> = case
            .get("ISOLATED")
            .iter()
            .map(|v| v.split_once(' ').map(|(f, k)| (f.to_string(), k.to_string())).unwrap())
            .collect();
        if report.isolated != want {
            failures.push(format!("{name}: isolated {:?}, expected {want:?}", report.isolated));
        }
        for needle in case.get("WARNING") {
            if !report.warnings.iter().any(|w| w.contains(needle)) {
                failures.push(format!("{name}: expected a warning with {needle:?}, got {:?}", report.warnings));
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
        let functions: BTreeSet<String> = case.list("FUNCTIONS").into_iter().collect();
        let allowed: Vec<String> = case.list("ALLOW");
        let outcome = statics::run(&module, "st-helper", "st_helper", &functions, &allowed);
        check(&case, outcome.as_ref().map(|_| &module).map_err(|e| format!("{e:#}")), &mut failures);
    }
    finish("statics", failures);
}

/// A case of several crates: `; UNIT: <crate> [<function>]` starts each.
fn units(case: &Case) -> Vec<(Unit, String)> {
    let text = std::fs::read_to_string(&case.path).unwrap();
    let mut out: Vec<(Unit, String)> = Vec::new();
    for line in text.lines() {
        if let Some(spec) = line.strip_prefix("; UNIT: ") {
            let mut words = spec.split_whitespace();
            let crate_name = words.next().expect("a crate name").to_string();
            let unit = Unit {
                package_id: cargo_metadata::PackageId { repr: crate_name.clone() },
                crate_name,
                bitcode: PathBuf::new(),
                function: words.next().map(str::to_string),
                unoptimized: false,
            };
            out.push((unit, String::new()));
        } else if let Some((_, ir)) = out.last_mut() {
            ir.push_str(line);
            ir.push('\n');
        }
    }
    assert!(!out.is_empty(), "{}: no `; UNIT:` sections", case.path.display());
    out
}

#[test]
fn symbols() {
    let mut failures = Vec::new();
    for case in cases("symbols") {
        let ctx = Context::create();
        let caller = case.one("CALLER").expect("CALLER");
        let mut exports = symbols::Exports::default();
        for native in case.get("NATIVE") {
            let (symbol, lib) = native.split_once(' ').unwrap();
            exports.native_refs.insert(symbol.to_string(), lib.to_string());
        }
        let mut merged: Option<Module> = None;
        let mut outcome: anyhow::Result<()> = Ok(());
        for (unit, ir) in units(&case) {
            let module = parse_text(&ctx, &unit.crate_name, &ir);
            if let Err(e) = symbols::prepare(&module, &unit, caller, &mut exports) {
                outcome = Err(e);
                break;
            }
            match &merged {
                None => merged = Some(module),
                Some(dest) => dest.link_in_module(module).unwrap_or_else(|e| panic!("{}: link: {e}", case.path.display())),
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
            failures.push(format!("{}: renamed {:?}, expected {want:?}", case.path.display(), exports.renamed));
        }
        check(&case, outcome.map(|_| &merged).map_err(|e| format!("{e:#}")), &mut failures);
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
        check(&case, outcome.map(|_| &module).map_err(|e| format!("{e:#}")), &mut failures);
    }
    finish("dispatch", failures);
}

#[test]
fn config() {
    let mut failures = Vec::new();
    for case in cases("config") {
        let ctx = Context::create();
        let module = parse(&ctx, &case);
        let got: Vec<String> = config::run(&module).iter().map(|s| format!("{} {} {}", s.function, s.key, s.default)).collect();
        let mut want: Vec<String> = case.get("SETTING").iter().map(|s| s.to_string()).collect();
        want.sort();
        if got != want {
            failures.push(format!("{}: settings {got:?}, expected {want:?}", case.path.display()));
        }
    }
    finish("config", failures);
}
