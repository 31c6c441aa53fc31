//! Traffic from an nginx gateway access log: one request per line,
//! `"POST /function/<name> HTTP/1.1"`. A log has no caller, so a function's
//! requests are spread over its static callers in proportion to their own
//! requests (and a function with no caller in the stack gets them from
//! outside): an estimate, said so in the graph's `traffic` field.

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
/// the module doc): the requests of a function with callers are divided
/// among them in proportion to each caller's requests times its call sites.
pub fn traffic(counts: &BTreeMap<String, f64>, edges: &[Edge], source: &str) -> Traffic {
    let mut traffic = Traffic {
        source: format!("nginx {source} (per-edge calls estimated from per-function requests)"),
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
        let total: f64 = callers.iter().map(|(_, w)| w).sum();
        if callers.is_empty() || total == 0.0 {
            traffic.external.insert(function.clone(), n);
            continue;
        }
        for (from, w) in callers {
            traffic
                .calls
                .insert(CallPair::new(from, function), n * w / total);
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
        assert_eq!(t.calls[&CallPair::new("a", "b")], 2.0);
        assert!(parse("nothing here\n", "log").is_err());
    }
}
