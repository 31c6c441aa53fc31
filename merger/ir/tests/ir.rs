//! Golden tests of the passes: each pass on small `.ll` inputs, in seconds,
//! with no cargo build, Redis or nginx. One driver runs them all: a case is
//! `tests/ir/<pass>/<case>.ll`, where `<pass>` is a name registered in
//! `fmerge_ir::passes::PASSES`, and adding one needs no test code.
//!
//! `; KEY: value` lines at the top of a case say how to run it:
//! - `CALLER: f` (default `caller-fn`), `CALLEES: a, b`, `REWRITE: [CALLEE:]FROM=TO`
//!   (one per line), `ALLOW: crate::STATIC, …`, `NATIVE: <symbol> <library>`:
//!   the merge's facts;
//! - `CRATE: <crate>` (default `callee_crate`; its package is the name with
//!   dashes), `FUNCTION: f` (the function whose bin it is), `OWNERS: a, b`
//!   (default: that function), `LOCAL: no`: the crate the case is;
//! - or several crates: `; UNIT: <crate> [<function>]` starts each (owned
//!   by that function), and they are linked in that order;
//! - `PASSES: a, b`: run these instead of the folder's pass (crate passes on
//!   each unit, in order; then the conclusions; then module passes on the
//!   linked module);
//!
//! and what must come out:
//! - `ERROR: text`: the passes refuse, and the message holds each text;
//! - otherwise the module must equal `<case>.out.ll` beside it;
//! - `WARNING: text` / `NOTE: text`: some warning (note) holds each text,
//!   and without one, there is no warning;
//! - `HITS: n, …`: literals each `--rewrite` changed; `ISOLATED: <function> <KEY>`,
//!   `BLOCKING: <callee> <blocking function>`,
//!   `SETTING: <function> <KEY> <default>`, `MENTIONED: a, b`,
//!   `INTERNALIZED: n`: what the passes found (each compared whole);
//! - `IN-PROCESS: <callee> ok` or `IN-PROCESS: <callee> <text>`: the
//!   `in_process` verdict for that callee, `Ok` or a reason holding the text
//!   (the callees judged compared whole); `INLINE: ok` or `INLINE: <text>`:
//!   whether calls between members may run on the calling thread, or the
//!   reason why not holds the text; `HANDLE-ELSEWHERE: <callee> <text>`:
//!   a callee whose `handle` may not be started on its caller's thread, the
//!   reason holding the text (the callees compared whole).
//!
//! `FMERGE_BLESS=1 cargo test --release -p fmerge-ir --test ir` writes the
//! `.out.ll` files; read the diff before committing it.
//!
//! Run: `cargo test --release -p fmerge-ir --test ir` (no services).

use fmerge_ir::passes::{self, Crate, Facts, Found, Run, endpoints};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

struct Case {
    path: PathBuf,
    pass: String,
    headers: Vec<(String, String)>,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{}/{}",
            self.pass,
            self.path.file_name().unwrap().to_string_lossy()
        )
    }

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

    fn facts(&self) -> Facts {
        let callees = self.list("CALLEES");
        let caller = self.one("CALLER").unwrap_or("caller-fn").to_string();
        let members: Vec<String> = std::iter::once(caller.clone())
            .chain(callees.iter().cloned())
            .collect();
        Facts {
            rewrites: self
                .get("REWRITE")
                .iter()
                .map(|r| endpoints::Rewrite::parse(r, &members).unwrap())
                .collect(),
            allow_shared_static: self.list("ALLOW"),
            native_refs: self
                .get("NATIVE")
                .iter()
                .map(|n| {
                    let (symbol, lib) = n.split_once(' ').expect("NATIVE: <symbol> <library>");
                    (symbol.to_string(), lib.to_string())
                })
                .collect(),
            caller,
            callees,
            // `; FORM: process`: the members are watchdog processes.
            process: self.one("FORM") == Some("process"),
            serving: Default::default(),
        }
    }

    /// The case's crates, in link order.
    fn units(&self) -> Vec<Unit> {
        let text = std::fs::read_to_string(&self.path).unwrap();
        let mut out: Vec<Unit> = Vec::new();
        for line in text.lines() {
            if let Some(spec) = line.strip_prefix("; UNIT: ") {
                let mut words = spec.split_whitespace();
                let crate_name = words.next().expect("a crate name").to_string();
                let function = words.next().map(str::to_string);
                out.push(Unit {
                    module: crate_name.clone(),
                    crate_name,
                    owners: function.iter().cloned().collect(),
                    function,
                    ir: String::new(),
                });
            } else if let Some(unit) = out.last_mut() {
                unit.ir.push_str(line);
                unit.ir.push('\n');
            }
        }
        if out.is_empty() {
            // One crate: the whole file, its module named by the file name
            // alone, so that the output does not depend on where the repo is.
            let function = self.one("FUNCTION").map(str::to_string);
            let mut owners: BTreeSet<String> = self.list("OWNERS").into_iter().collect();
            owners.extend(function.clone());
            out.push(Unit {
                module: self
                    .path
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                crate_name: self.one("CRATE").unwrap_or("callee_crate").to_string(),
                function,
                owners,
                ir: text,
            });
        }
        out
    }
}

/// One crate of a case.
struct Unit {
    module: String,
    crate_name: String,
    function: Option<String>,
    owners: BTreeSet<String>,
    ir: String,
}

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ir");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let pass = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            passes::named(&pass).is_some(),
            "tests/ir/{pass}: no pass of that name is registered in passes::PASSES"
        );
        for path in std::fs::read_dir(&dir).unwrap() {
            let path = path.unwrap().path();
            if path.extension().is_none_or(|e| e != "ll")
                || path.to_string_lossy().ends_with(".out.ll")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let headers = text
                .lines()
                .filter_map(|l| l.strip_prefix("; "))
                .filter_map(|l| l.split_once(": "))
                .filter(|(k, _)| k.chars().all(|c| c.is_ascii_uppercase() || c == '-'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            out.push(Case {
                path,
                pass: pass.clone(),
                headers,
            });
        }
    }
    out.sort_by_key(|c| c.path.clone());
    out
}

fn parse<'ctx>(ctx: &'ctx Context, name: &str, text: &str) -> Module<'ctx> {
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), name);
    ctx.create_module_from_ir(buffer)
        .unwrap_or_else(|e| panic!("{name} does not parse: {e}"))
}

/// Runs the case's passes: crate passes on each unit, the conclusions, then
/// module passes on the linked module.
fn run<'ctx>(
    ctx: &'ctx Context,
    case: &Case,
    found: &mut Found,
) -> (Option<Module<'ctx>>, anyhow::Result<()>) {
    let names = match case.list("PASSES") {
        names if names.is_empty() => vec![case.pass.clone()],
        names => names,
    };
    let passes: Vec<_> = names
        .iter()
        .map(|n| passes::named(n).unwrap_or_else(|| panic!("{}: no pass {n}", case.name())))
        .collect();
    let facts = case.facts();
    let mut merged: Option<Module> = None;
    for unit in case.units() {
        let module = parse(ctx, &unit.module, &unit.ir);
        let package = unit.crate_name.replace('_', "-");
        let krate = Crate {
            name: &unit.crate_name,
            package: &package,
            function: unit.function.as_deref(),
            owners: &unit.owners,
            local: case.one("LOCAL") != Some("no"),
        };
        for pass in &passes {
            if let Run::Crate(run) = pass.run {
                let before = module.print_to_string().to_string();
                (found.touched, found.dropped_main) = (false, false);
                if let Err(e) = run(&module, &krate, &facts, found) {
                    return (merged, Err(e));
                }
                // The reuse path links cargo's object for a crate no pass
                // touched, with `main` made weak where `exports` dropped it.
                let expected = match (found.dropped_main, &unit.function) {
                    (true, Some(function)) => {
                        let redo = parse(ctx, &unit.module, &before);
                        passes::exports::drop_main(&redo, function);
                        redo.print_to_string().to_string()
                    }
                    _ => before,
                };
                assert!(
                    found.touched || module.print_to_string().to_string() == expected,
                    "{}: pass {} changed crate {} without setting `found.touched`",
                    case.name(),
                    pass.name,
                    unit.crate_name
                );
            }
        }
        match &merged {
            None => merged = Some(module),
            Some(dest) => dest
                .link_in_module(module)
                .unwrap_or_else(|e| panic!("{}: link: {e}", case.name())),
        }
    }
    let module = merged.expect("one unit at least");
    for pass in &passes {
        if let Run::Conclusion(run) = pass.run
            && let Err(e) = run(&facts, found)
        {
            return (Some(module), Err(e));
        }
    }
    for pass in &passes {
        if let Run::Module(run) = pass.run {
            let before = module.print_to_string().to_string();
            if let Err(e) = run(&module, &facts, found) {
                return (Some(module), Err(e));
            }
            // The reuse path does not compile the merged module: a module
            // pass that changes code must be one it redoes its own way.
            assert!(
                passes::REDONE_BY_REUSE.contains(&pass.name)
                    || module.print_to_string().to_string() == before,
                "{}: module pass {} changed the module; the reuse path (reuse.rs) must redo it",
                case.name(),
                pass.name
            );
        }
    }
    (Some(module), Ok(()))
}

/// Checks one case; returns what differs from what it expects.
fn check(case: &Case) -> Vec<String> {
    let name = case.name();
    let mut failures = Vec::new();
    let ctx = Context::create();
    let mut found = Found::default();
    let (module, outcome) = run(&ctx, case, &mut found);
    let errors = case.get("ERROR");
    match outcome {
        Err(e) if errors.is_empty() => failures.push(format!("{name}: unexpected refusal: {e:#}")),
        Err(e) => {
            let e = format!("{e:#}");
            for needle in errors.iter().filter(|n| !e.contains(**n)) {
                failures.push(format!("{name}: expected {needle:?} in the refusal:\n{e}"));
            }
            return failures;
        }
        Ok(()) if !errors.is_empty() => {
            failures.push(format!(
                "{name}: expected a refusal, the passes accepted it"
            ));
            return failures;
        }
        Ok(()) => {}
    }

    for (key, said) in [("WARNING", &found.warnings), ("NOTE", &found.notes)] {
        let needles = case.get(key);
        for needle in &needles {
            if !said.iter().any(|w| w.contains(needle)) {
                failures.push(format!(
                    "{name}: expected a {key} with {needle:?}, got {said:?}"
                ));
            }
        }
        if needles.is_empty() && key == "WARNING" && !said.is_empty() {
            failures.push(format!("{name}: unexpected warnings {said:?}"));
        }
    }
    let mut compare = |key: &str, got: Vec<String>, mut want: Vec<String>| {
        want.sort();
        let mut got = got;
        got.sort();
        if got != want {
            failures.push(format!("{name}: {key} {got:?}, expected {want:?}"));
        }
    };
    let all = |key: &str| case.get(key).iter().map(|s| s.to_string()).collect();
    compare(
        "ISOLATED",
        found
            .isolated
            .iter()
            .map(|read| format!("{} {}", read.function, read.key))
            .collect(),
        all("ISOLATED"),
    );
    compare(
        "SETTING",
        found
            .settings
            .iter()
            .filter(|s| !s.from_env)
            .map(|s| format!("{} {} {}", s.function, s.key, s.default))
            .collect(),
        all("SETTING"),
    );
    compare(
        "BLOCKING",
        found
            .blocking
            .iter()
            .map(|(callee, call)| format!("{callee} {}", call.target))
            .collect(),
        all("BLOCKING"),
    );
    if case.one("MENTIONED").is_some() {
        compare(
            "MENTIONED",
            found.mentioned.iter().cloned().collect(),
            case.list("MENTIONED"),
        );
    }
    if case.one("HITS").is_some() {
        compare(
            "HITS",
            found.rewritten.iter().map(|n| n.to_string()).collect(),
            case.list("HITS"),
        );
    }
    if let Some(n) = case.one("INTERNALIZED") {
        compare(
            "INTERNALIZED",
            vec![found.internalized.to_string()],
            vec![n.to_string()],
        );
    }

    let verdicts = case.get("IN-PROCESS");
    let judged: Vec<&String> = found.in_process.keys().collect();
    let listed: Vec<&str> = verdicts
        .iter()
        .map(|v| v.split_once(' ').map_or(*v, |(callee, _)| callee))
        .collect();
    if !verdicts.is_empty() || !judged.is_empty() {
        let mut listed_sorted = listed.clone();
        listed_sorted.sort();
        if judged.iter().map(|s| s.as_str()).collect::<Vec<_>>() != listed_sorted {
            failures.push(format!(
                "{name}: IN-PROCESS judged {judged:?}, expected {listed_sorted:?}"
            ));
        }
    }
    for verdict in &verdicts {
        let (callee, want) = verdict.split_once(' ').unwrap_or((verdict, "ok"));
        match (found.in_process.get(callee), want) {
            (Some(Ok(())), "ok") => {}
            (Some(Err(why)), want) if want != "ok" && why.contains(want) => {}
            (got, _) => failures.push(format!(
                "{name}: IN-PROCESS {callee}: expected {want:?}, got {got:?}"
            )),
        }
    }
    let elsewhere = case.get("HANDLE-ELSEWHERE");
    let found_elsewhere: Vec<&String> = found.handle_elsewhere.keys().collect();
    let mut listed: Vec<&str> = elsewhere
        .iter()
        .map(|v| v.split_once(' ').map_or(*v, |(callee, _)| callee))
        .collect();
    listed.sort();
    if found_elsewhere
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        != listed
    {
        failures.push(format!(
            "{name}: HANDLE-ELSEWHERE found {found_elsewhere:?}, expected {listed:?}"
        ));
    }
    for line in &elsewhere {
        let (callee, want) = line.split_once(' ').unwrap_or((line, ""));
        match found.handle_elsewhere.get(callee) {
            Some(why) if why.contains(want) => {}
            got => failures.push(format!(
                "{name}: HANDLE-ELSEWHERE {callee}: expected {want:?}, got {got:?}"
            )),
        }
    }
    if let Some(want) = case.one("INLINE") {
        match (&found.not_inline, want) {
            (None, "ok") => {}
            (Some(why), want) if want != "ok" && why.contains(want) => {}
            (got, _) => failures.push(format!("{name}: INLINE: expected {want:?}, got {got:?}")),
        }
    }
    let module = module.expect("a module");
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
    failures
}

#[test]
fn every_case_of_every_pass() {
    let cases = cases();
    let failures: Vec<String> = cases.iter().flat_map(check).collect();
    assert!(
        failures.is_empty(),
        "{} of {} case(s) failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_registered_pass_has_a_case() {
    let tested: BTreeSet<String> = cases().into_iter().map(|c| c.pass).collect();
    for pass in passes::PASSES {
        assert!(
            tested.contains(pass.name),
            "pass {} has no case in tests/ir/{}/",
            pass.name,
            pass.name
        );
    }
}
