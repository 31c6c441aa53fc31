//! The docs a newcomer reads first hold their promises: the README opens
//! with the two commands, stays a ten-minute read, and every relative link
//! in it and in docs/ reaches a file of the repository. The docs agree with
//! what they describe, read from the code, not a copy of it (figures pasted
//! from a source, the figures docs and code share, the objectives, the
//! error example), and the code keeps the house rules a reader relies on: every source file
//! opens with what it holds, no comment holds a date, bench/'s root holds
//! only the current results.

use std::path::{Path, PathBuf};

/// The README's length, in lines, that a team reads in ten minutes.
const README_MAX_LINES: usize = 200;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("merger/ is in the repository")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn readme_is_a_ten_minute_read() {
    let text = read(&repo().join("README.md"));
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move reference material to docs/"
    );
}

#[test]
fn readme_opens_with_the_main_job_and_the_tests() {
    let text = read(&repo().join("README.md"));
    let block: Vec<&str> = text
        .split("```")
        .nth(1)
        .expect("README.md has a code block")
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(
        block.len(),
        2,
        "the first code block is the two commands: {block:?}"
    );
    assert!(
        block[0].starts_with("cargo run --release -p fmerge -- build "),
        "{}",
        block[0]
    );
    assert!(block[1].starts_with("ci/test"), "{}", block[1]);
}

/// `[text](target)` links of a Markdown text: the relative ones, without anchors.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or_default();
        let external = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !external && !target.contains(' ') {
            links.push(target.to_string());
        }
        rest = &rest[end..];
    }
    links
}

#[test]
fn every_relative_link_in_the_readme_and_docs_reaches_a_file() {
    let root = repo();
    let mut pages = vec![
        root.join("README.md"),
        root.join("CONTRIBUTING.md"),
        root.join("functions/README.md"),
        root.join("bench/README.md"),
        root.join("bench/history/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let base = page.parent().expect("a page is in a folder");
        for link in relative_links(&read(page)) {
            if !base.join(&link).exists() {
                broken.push(format!("{}: {link}", page.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

/// The repository's tracked files (`git ls-files`), so that nothing
/// built or scratch (target/, bench/out/) counts.
fn tracked() -> Vec<PathBuf> {
    let root = repo();
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git ls-files: {out:?}");
    String::from_utf8(out.stdout)
        .expect("paths are UTF-8")
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(|p| root.join(p))
        .filter(|p| p.is_file())
        .collect()
}

/// Whether `prefix`, the part of a line before a comment marker, leaves the
/// marker outside a string literal: an even count of `"` (and in Python of
/// `'`), and no `:` just before it (a URL's `//`).
fn outside_string(prefix: &str, python: bool) -> bool {
    prefix.matches('"').count().is_multiple_of(2)
        && (!python || prefix.matches('\'').count().is_multiple_of(2))
        && !prefix.ends_with(':')
}

/// The comments of a source file, with their line numbers: `//` ones in
/// Rust; `#` ones and docstrings (triple-quoted blocks that open a line)
/// in Python.
fn comments(path: &Path, text: &str) -> Vec<(usize, String)> {
    let python = path.extension().is_some_and(|e| e == "py");
    let marker = if python { "#" } else { "//" };
    let mut out = Vec::new();
    let mut in_docstring = false;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if python {
            let opens = trimmed
                .trim_start_matches(['r', 'b', 'f'])
                .starts_with("\"\"\"");
            if in_docstring || opens {
                out.push((n + 1, line.to_string()));
                let quotes = line.matches("\"\"\"").count();
                if !quotes.is_multiple_of(2) {
                    in_docstring = !in_docstring;
                }
                continue;
            }
        }
        let mut from = 0;
        while let Some(at) = line[from..].find(marker) {
            let at = from + at;
            if outside_string(&line[..at], python) {
                out.push((n + 1, line[at..].to_string()));
                break;
            }
            from = at + marker.len();
        }
    }
    out
}

/// Whether `text` holds a date, `20YY-MM`.
fn holds_a_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(7).any(|w| {
        w[0] == b'2'
            && w[1] == b'0'
            && w[2..4].iter().all(u8::is_ascii_digit)
            && w[4] == b'-'
            && w[5..7].iter().all(u8::is_ascii_digit)
    })
}

#[test]
fn no_code_comment_or_cargo_toml_holds_a_date() {
    let files = tracked();
    let under = |p: &Path, dir: &str| p.starts_with(repo().join(dir));
    let sources: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            let rs = p.extension().is_some_and(|e| e == "rs");
            let py = p.extension().is_some_and(|e| e == "py");
            (rs && (under(p, "merger") || under(p, "functions"))) || (py && under(p, "bench"))
        })
        .collect();
    let manifests: Vec<&PathBuf> = files.iter().filter(|p| p.ends_with("Cargo.toml")).collect();
    assert!(
        sources.len() > 100 && manifests.len() > 10,
        "the walk finds the sources: {} and {} manifests",
        sources.len(),
        manifests.len()
    );
    let mut dated = Vec::new();
    for path in &sources {
        for (line, comment) in comments(path, &read(path)) {
            if holds_a_date(&comment) {
                dated.push(format!("{}:{line}: {}", path.display(), comment.trim()));
            }
        }
    }
    for path in &manifests {
        for (line, text) in read(path).lines().enumerate() {
            if holds_a_date(text) {
                dated.push(format!("{}:{}: {}", path.display(), line + 1, text.trim()));
            }
        }
    }
    assert!(
        dated.is_empty(),
        "comments say why, never when: move these to docs/CHANGELOG.md or docs/PERFORMANCE.md:\n{}",
        dated.join("\n")
    );
}

#[test]
fn every_source_file_opens_with_what_it_holds() {
    let root = repo();
    let crates = ["merger", "functions"];
    let mut without = Vec::new();
    let mut seen = 0;
    for path in tracked() {
        let Ok(rel) = path.strip_prefix(&root) else {
            continue;
        };
        let parts: Vec<_> = rel.components().map(|c| c.as_os_str()).collect();
        // merger/src/…, merger/<crate>/src/…, functions/<crate>/src/…
        let in_src = match parts.as_slice() {
            [top, src, ..] if *top == "merger" && *src == "src" => true,
            [top, _, src, ..] => crates.iter().any(|c| *top == *c) && *src == "src",
            _ => false,
        };
        if !in_src || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        seen += 1;
        let text = read(&path);
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if !first.starts_with("//!") {
            without.push(rel.display().to_string());
        }
    }
    assert!(seen > 100, "the walk finds the sources: {seen}");
    assert!(
        without.is_empty(),
        "these open with no `//!` comment saying what they hold:\n{}",
        without.join("\n")
    );
}

/// bench/'s root holds the current results of each kind (`.md` and
/// `.json` of the full run and of each `--only`: watchdog, app, the
/// generated app (`--app genapp`), loop, process, httpmode); earlier runs
/// are in bench/history/.
const BENCH_RESULTS_MAX: usize = 14;

#[test]
fn bench_keeps_only_the_current_results_at_its_root() {
    let bench = repo().join("bench");
    let results: Vec<String> = std::fs::read_dir(&bench)
        .expect("bench/")
        .map(|e| {
            e.expect("bench/ entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            name.starts_with("results") && (name.ends_with(".md") || name.ends_with(".json"))
        })
        .collect();
    assert!(
        results.len() <= BENCH_RESULTS_MAX,
        "bench/ holds {} results files, more than {BENCH_RESULTS_MAX}: move earlier runs to bench/history/ ({results:?})",
        results.len()
    );
}

/// The text between `<!-- name:start -->` and `<!-- name:end -->` in `page`.
fn generated(page: &str, name: &str) -> String {
    let start = format!("<!-- {name}:start -->");
    let end = format!("<!-- {name}:end -->");
    let from = page.find(&start).unwrap_or_else(|| panic!("no {start}")) + start.len();
    let to = page[from..]
        .find(&end)
        .unwrap_or_else(|| panic!("no {end}"))
        + from;
    page[from..to].to_string()
}

#[test]
fn figures_pasted_into_performance_md_are_their_sources() {
    // bench/update-summary pastes bench/results.md's measured line and
    // target rows; bench/blocking pastes bench/blocking.md's table.
    let root = repo();
    let page = read(&root.join("docs/PERFORMANCE.md"));
    for (name, source) in [
        ("bench", "bench/results.md"),
        ("blocking", "bench/blocking.md"),
    ] {
        let source_text = read(&root.join(source));
        let pasted = generated(&page, name);
        let stale: Vec<&str> = pasted
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("Every figure"))
            .filter(|l| !source_text.lines().any(|s| s == *l))
            .collect();
        assert!(
            stale.is_empty(),
            "docs/PERFORMANCE.md's {name} section has lines {source} does not: paste it again\n{}",
            stale.join("\n")
        );
    }
}

/// The value of the constant `name` as `file` defines it (`const NAME: T =
/// EXPR;`), read from the source, for a constant no test can import: an
/// integer (`1024`, `64 << 10`) or a `Duration` (`Duration::from_secs(1)`,
/// `from_millis(500)`), in seconds.
fn constant(file: &str, name: &str) -> f64 {
    let text = read(&repo().join(file));
    let expr = text
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once(&format!("const {name}: "))?;
            Some(rest.split_once(" = ")?.1.trim_end_matches(';').trim())
        })
        .unwrap_or_else(|| panic!("{file} defines no const {name}"));
    let int = |t: &str| -> f64 {
        let t = t.trim().replace('_', "");
        match t.split_once("<<") {
            Some((a, b)) => {
                (a.trim().parse::<u64>().unwrap() << b.trim().parse::<u32>().unwrap()) as f64
            }
            None => t
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{file}: {name} = {expr}: not a figure this reads"))
                as f64,
        }
    };
    let arg = |f: &str| expr.strip_prefix(f).and_then(|r| r.strip_suffix(')'));
    if let Some(secs) = arg("Duration::from_secs(") {
        int(secs)
    } else if let Some(ms) = arg("Duration::from_millis(") {
        int(ms) / 1000.0
    } else {
        int(expr)
    }
}

/// The figures the docs state and the code defines, each as the page says
/// it, built from the code's value: the page must say it (whitespace
/// folded, as pages wrap lines). A figure changed in the code fails here
/// until its page follows.
fn shared_figures() -> Vec<(&'static str, String)> {
    let runtime = "functions/runtime/src/";
    let rt = |file: &str, name: &str| constant(&format!("{runtime}{file}"), name);
    let store = |name: &str| constant("functions/sn-store/src/lib.rs", name);
    let kib = |v: f64| v / 1024.0;
    let time_limit = fmerge_plan::search::DEFAULT_TIME_LIMIT.as_secs_f64();
    let flag_default = fmerge::options::plan::PlanFlags::default().time_limit;
    vec![
        (
            "docs/PERFORMANCE.md",
            format!("**{} ms**", fmerge::plan::DEFAULT_HOP_MS),
        ),
        (
            "docs/planning.md",
            format!(
                "`--time-limit` seconds (default {time_limit}, `fmerge_plan::search::DEFAULT_TIME_LIMIT`)"
            ),
        ),
        // The flag's default is the figure the page states, not its own
        // expression.
        (
            "docs/planning.md",
            format!("`--time-limit` seconds (default {flag_default}, "),
        ),
        (
            "docs/operating.md",
            format!(
                "each time a body needs more | {} s |",
                rt("body.rs", "BUDGET_WAIT")
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "up to {} MiB once bytes arrive",
                kib(kib(rt("body.rs", "FIRST_ALLOCATION")))
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "(hyper's `max_buf_size`) | {} KiB |",
                kib(rt("connections/mod.rs", "MAX_HEAD"))
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "`max_buffered_bytes` | {} KiB a connection",
                kib(rt("connections/mod.rs", "FREE_HEAD"))
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "`WriteTimeout`) | {} ms each |",
                rt("metrics_port.rs", "METRICS_TIMEOUT") * 1000.0
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "metrics port: open connections | {} |",
                rt("metrics_port.rs", "METRICS_CONNECTIONS")
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "callee's reply at most {} KiB (`MAX_ECHO`)",
                kib(rt("error.rs", "MAX_ECHO"))
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "`tracestate` (at most {} bytes)",
                rt("call.rs", "MAX_TRACE_HEADER")
            ),
        ),
        (
            "docs/operating.md",
            format!("| response timeout | {} s |", store("RESPONSE_TIMEOUT")),
        ),
        (
            "docs/operating.md",
            format!(
                "| connection timeout, attempts | {} s, {} (",
                store("CONNECTION_TIMEOUT"),
                store("RECONNECT_ATTEMPTS")
            ),
        ),
        (
            "docs/operating.md",
            format!(
                "| TCP keepalive | probes after {} s idle, every {} s, {} unanswered close it |",
                store("KEEPALIVE_IDLE"),
                store("KEEPALIVE_INTERVAL"),
                store("KEEPALIVE_PROBES")
            ),
        ),
        (
            "docs/operating.md",
            format!("| `TCP_USER_TIMEOUT` | {} s |", store("USER_TIMEOUT")),
        ),
    ]
}

#[test]
fn the_figures_docs_and_code_share_are_the_codes() {
    let fold = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let stale: Vec<String> = shared_figures()
        .into_iter()
        .filter(|(page, says)| !fold(&read(&repo().join(page))).contains(&fold(says)))
        .map(|(page, says)| format!("{page} does not say {says:?}"))
        .collect();
    assert!(
        stale.is_empty(),
        "the docs and the code disagree (change the page to the code's figure):\n{}",
        stale.join("\n")
    );
}

/// [`constant`] reads what it is given, and refuses what it cannot read.
#[test]
fn constants_are_read_from_their_source() {
    assert_eq!(
        constant("functions/runtime/src/connections/mod.rs", "MAX_HEAD"),
        65536.0
    );
    assert_eq!(
        constant("functions/runtime/src/metrics_port.rs", "METRICS_TIMEOUT"),
        0.5
    );
    let unknown =
        std::panic::catch_unwind(|| constant("functions/runtime/src/error.rs", "NO_SUCH"));
    assert!(unknown.is_err());
}

/// `fmerge plan`'s module doc (`merger/src/plan.rs`), its `//!` lines.
fn plan_module_doc() -> String {
    read(&repo().join("merger/src/plan.rs"))
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_objectives_the_docs_list_are_the_enums() {
    use fmerge_plan::model::Objective;
    let names: Vec<String> = <Objective as clap::ValueEnum>::value_variants()
        .iter()
        .map(|o| o.name())
        .collect();
    // merger/src/plan.rs names each objective `--objective` takes.
    let doc = plan_module_doc();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !doc.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "merger/src/plan.rs's module doc does not name the objectives {missing:?} of Objective's values {names:?}"
    );
    // docs/planning.md lists them, one bullet each, in `--objective`'s order,
    // the default said so.
    let page = read(&repo().join("docs/planning.md"));
    let list = page
        .split("The objective is the team's (`--objective`):\n\n")
        .nth(1)
        .expect("docs/planning.md introduces the objectives' list");
    let bullets: Vec<&str> = list
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("- `"))
        .collect();
    let listed: Vec<&str> = bullets
        .iter()
        .filter_map(|l| l[3..].split('`').next())
        .collect();
    assert_eq!(
        listed, names,
        "docs/planning.md's objectives are not Objective's values"
    );
    let default = Objective::default().name();
    let said: Vec<&str> = bullets
        .iter()
        .filter(|l| l.contains("(the default)"))
        .filter_map(|l| l[3..].split('`').next())
        .collect();
    assert_eq!(
        said,
        [default.as_str()],
        "docs/planning.md says another objective is the default than Objective::default()"
    );
}

#[test]
fn the_hop_costs_planning_md_states_are_the_constant() {
    // planning.md points to PERFORMANCE.md for the default hop cost; a
    // figure it states itself (the plan file's `hop-ms`, "N ms a hop") is
    // the constant's.
    let page = read(&repo().join("docs/planning.md"));
    let default = fmerge::plan::DEFAULT_HOP_MS;
    let mut stated = Vec::new();
    for (at, _) in page.match_indices("hop-ms = ") {
        let rest = &page[at + "hop-ms = ".len()..];
        stated.push(rest.split_whitespace().next().unwrap_or_default());
    }
    for (at, _) in page.match_indices(" ms a hop") {
        let before = &page[..at];
        stated.push(before.rsplit([' ', '(', '\n']).next().unwrap_or_default());
    }
    assert!(
        !stated.is_empty(),
        "docs/planning.md's plan.toml example gives `hop-ms`"
    );
    let other: Vec<&&str> = stated
        .iter()
        .filter(|s| s.parse::<f64>() != Ok(default))
        .collect();
    assert!(
        other.is_empty(),
        "docs/planning.md states hop costs {other:?}, DEFAULT_HOP_MS is {default}"
    );
}

#[test]
fn the_error_example_in_architecture_md_is_the_jobs_check() {
    use clap::{Args, Command};
    // What `-j 0` gets from `-j`'s own check in options/flags.rs.
    let err = fmerge::options::CargoFlags::augment_args(Command::new("fmerge"))
        .try_get_matches_from(["fmerge", "-j", "0"])
        .expect_err("-j 0 is refused");
    let rendered = err.to_string();
    let message = rendered
        .split_once("': ")
        .map(|(_, m)| m)
        .unwrap_or_else(|| panic!("clap names the value, then the check's message: {rendered}"));
    let cause = message.lines().next().unwrap_or_default();
    let fix = message
        .lines()
        .find_map(|l| l.strip_prefix("fix: "))
        .unwrap_or_else(|| panic!("the check's message has a fix line: {message}"));
    let page = read(&repo().join("docs/ARCHITECTURE.md"));
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with("Errors and exit codes"))
        .expect("docs/ARCHITECTURE.md has a section \"Errors and exit codes\"");
    // The section's lines are wrapped: compare with its whitespace folded.
    let folded = section.split_whitespace().collect::<Vec<_>>().join(" ");
    for part in [cause, fix] {
        assert!(
            folded.contains(&format!("`{part}`")),
            "docs/ARCHITECTURE.md's \"Errors and exit codes\" does not quote `-j 0`'s `{part}`:\n{section}"
        );
    }
}
