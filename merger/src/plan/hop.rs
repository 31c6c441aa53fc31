//! The cost of a gateway call where the graph has none measured: `--hop-ms`,
//! else what fmerge's own bench measured (built into fmerge when it was
//! compiled: a figure of fmerge's, not a path of the machine that built it),
//! per edge where the bench has one, else the lab notes' figure.

use serde_json::Value;

/// The per-hop latency to project gains with, and where it comes from:
/// `--hop-ms`, else the per-hop figure in `results` (the text of a
/// `bench/results.json`), else the lab notes' figure.
pub fn hop_ms(given: Option<f64>, results: &str) -> (f64, String) {
    if let Some(ms) = given {
        return (ms, "--hop-ms".to_string());
    }
    [
        ("pinned", "chain"),
        ("pinned", "pair"),
        ("shared", "chain"),
        ("shared", "pair"),
    ]
    .iter()
    .find_map(|(mode, group)| measured(results, group, &[mode]))
    .unwrap_or((
            DEFAULT_HOP_MS,
            "the default: 8.8 ms per invocation, measured on a cluster in the lab notes (this fmerge was built with no per-hop figure of its bench)"
                .to_string(),
        ))
}

/// The edges the bench measured one by one: each of its groups of two
/// functions (`groups`, the text of `bench/groups.txt`) is one call, caller
/// first, and its per-hop figure is that call's cost. None under `--hop-ms`,
/// the user's figure for every call not measured.
pub fn bench_edges(
    given: Option<f64>,
    results: &str,
    groups: &str,
) -> Vec<(String, String, f64, String)> {
    if given.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    let finish = |group: Option<(String, Vec<String>)>, out: &mut Vec<_>| {
        if let Some((name, members)) = group
            && let [caller, callee] = &members[..]
            && let Some((ms, source)) = measured(results, &name, &["pinned", "shared"])
        {
            out.push((caller.clone(), callee.clone(), ms, source));
        }
    };
    for line in groups.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            finish(current.take(), &mut out);
            current = Some((name.to_string(), Vec::new()));
        } else if let Some((_, members)) = &mut current {
            members.push(line.to_string());
        }
    }
    finish(current, &mut out);
    out
}

/// `group`'s per-hop figure in `results` on the first of `testbeds` that
/// has one, and where it comes from.
fn measured(results: &str, group: &str, testbeds: &[&str]) -> Option<(f64, String)> {
    let doc: Value = serde_json::from_str(results).ok()?;
    let modes = doc.get("load")?.get("modes")?;
    testbeds.iter().find_map(|mode| {
        let ms = modes
            .get(mode)?
            .get(group)?
            .get("hop_cost")?
            .get("latency_ms")?
            .as_f64()?;
        let when = doc.get("finished").and_then(Value::as_str).unwrap_or("?");
        Some((
            ms,
            format!(
                "fmerge's own bench, built in (bench/results.json: {mode} testbed, {group}: (unmerged − merged p50) ÷ critical-path hops, measured {when} UTC); measure yours with --metrics or give --hop-ms"
            ),
        ))
    })
}

pub use fmerge_plan::model::DEFAULT_HOP_MS;
