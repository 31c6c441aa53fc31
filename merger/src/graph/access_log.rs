//! Traffic from an nginx gateway access log: one request per line,
//! `"POST /function/<name> HTTP/1.1"`. A log has no caller, so no request
//! is known to come from a function: a function's static callers are
//! credited with at most what their own requests make at one call per call
//! site, and the rest of its requests count as from outside (which never
//! drops a deployment and never claims hops the log does not show). An
//! estimate, said so in the graph's `traffic` field.

use super::Edge;
use super::traffic::{CallPair, Traffic};
use anyhow::{Context as _, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;

/// Requests per function in an nginx access log (`/function/<name>` paths).
pub fn counts(path: &Path) -> Result<BTreeMap<String, f64>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the access log {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

pub fn parse(text: &str, source: &str) -> Result<BTreeMap<String, f64>> {
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        // The request line is the first quoted field: "POST /function/x HTTP/1.1".
        let Some(request) = line.split('"').nth(1) else {
            continue;
        };
        let Some(target) = request.split_whitespace().nth(1) else {
            continue;
        };
        let Some(rest) = target.strip_prefix("/function/") else {
            continue;
        };
        let name = rest.split(['/', '?']).next().unwrap_or_default();
        let name = name.split_once('.').map_or(name, |(n, _)| n);
        if !name.is_empty() {
            *counts.entry(name.to_string()).or_default() += 1.0;
        }
    }
    if counts.is_empty() {
        bail!(
            "{source} holds no gateway request for a function (a request line like \"POST /function/<name> HTTP/1.1\")\nfix: pass the OpenFaaS gateway's access log, where each call of a function is a `/function/<name>` request"
        );
    }
    Ok(counts)
}

/// Spreads per-function request counts over the graph's static edges (see
/// the module doc): each caller is credited with its requests times its
/// call sites (scaled down to the function's requests when they add up to
/// more), and what is left counts as requests from outside.
pub fn traffic(counts: &BTreeMap<String, f64>, edges: &[Edge], source: &str) -> Traffic {
    let mut traffic = Traffic {
        source: format!(
            "nginx {source} (no caller named: calls credited at most one per call site, the rest counted from outside)"
        ),
        ..Traffic::default()
    };
    for (function, &n) in counts {
        let callers: Vec<(&String, f64)> = edges
            .iter()
            .filter(|e| e.to.as_ref() == Some(function))
            .map(|e| {
                (
                    &e.from,
                    counts.get(&e.from).copied().unwrap_or(0.0) * e.sites as f64,
                )
            })
            .collect();
        let most: f64 = callers.iter().map(|(_, w)| w).sum();
        let credited = most.min(n);
        for (from, w) in callers.into_iter().filter(|(_, w)| *w > 0.0) {
            *traffic
                .calls
                .entry(CallPair::new(from, function))
                .or_default() += credited * w / most;
        }
        if n > credited {
            traffic.external.insert(function.clone(), n - credited);
        }
    }
    traffic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_log_requests_are_spread_over_callers() {
        let log = "127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"POST /function/a HTTP/1.1\" 200 2 \"-\" \"x\"\n\
            127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"POST /function/b.openfaas-fn HTTP/1.1\" 200 2 \"-\" \"x\"\n\
            127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"POST /function/b HTTP/1.1\" 200 2 \"-\" \"x\"\n\
            127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"GET /healthz HTTP/1.1\" 200 2 \"-\" \"x\"\n";
        let counts = parse(log, "log").unwrap();
        assert_eq!(counts["a"], 1.0);
        assert_eq!(counts["b"], 2.0);
        let edge = Edge {
            from: "a".into(),
            to: Some("b".into()),
            sites: 1,
            ..Edge::default()
        };
        let t = traffic(&counts, &[edge], "log");
        assert_eq!(t.external["a"], 1.0);
        // a's one request makes at most one call of b: the other request
        // to b came from a caller the log does not name.
        assert_eq!(t.calls[&CallPair::new("a", "b")], 1.0);
        assert_eq!(t.external["b"], 1.0);
        assert!(!t.callers_named);
        assert!(parse("nothing here\n", "log").is_err());
    }
}
