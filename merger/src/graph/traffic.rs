//! Real traffic for the call graph's edges, from one of two sources:
//!
//! - a Prometheus text scrape of the runtime's per-caller counter
//!   `http_requests_total{function="…",caller="…"}` (a request `caller`
//!   made to `function`; no caller, an empty one, or the runtime's
//!   `external`, `other` and `unverified` labels, is a request from outside the
//!   application). Read with the `prometheus-parse` crate, line
//!   by line so that a line that is not in the text format is an error that
//!   names it, instead of being skipped.
//! - an nginx gateway access log: one request per line, `"POST
//!   /function/<name> HTTP/1.1"`. A log has no caller, so a function's
//!   requests are spread over its static callers in proportion to their own
//!   requests (and a function with no caller in the stack gets them from
//!   outside): an estimate, said so in the graph's `traffic` field.

use anyhow::{Context as _, Result, bail};
use prometheus_parse::{LineInfo, Scrape, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The counter the runtime keeps per (caller, function).
pub const METRIC: &str = "http_requests_total";

/// Requests seen: per edge, and from outside per function.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traffic {
    pub calls: BTreeMap<(String, String), f64>,
    pub external: BTreeMap<String, f64>,
    /// Where the figures come from, for people.
    pub source: String,
}

/// Reads a Prometheus text scrape (several scrapes concatenated add up).
pub fn prometheus(path: &Path) -> Result<Traffic> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the metrics file {}", path.display()))?;
    parse_prometheus(&text, &path.display().to_string())
}

pub fn parse_prometheus(text: &str, source: &str) -> Result<Traffic> {
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue; // HELP, TYPE and plain comments
        }
        if !trimmed.is_empty()
            && (matches!(LineInfo::parse(line), LineInfo::Ignored) || !whole_sample(trimmed))
        {
            bail!(
                "{source}, line {}: `{}` is not a sample of the Prometheus text format (`name{{label=\"value\"}} number`).\n\
                 Fix: give the text a /metrics endpoint serves (e.g. `curl -s http://<function>:8080/metrics > {source}`).",
                n + 1,
                trimmed.chars().take(80).collect::<String>()
            );
        }
        if let LineInfo::Sample {
            metric_name, value, ..
        } = LineInfo::parse(line)
            && metric_name == METRIC
        {
            let number = match value.to_ascii_lowercase().as_str() {
                "nan" => f64::NAN,
                v => v.parse::<f64>().unwrap_or(f64::NAN),
            };
            if !number.is_finite() || number < 0.0 {
                bail!(
                    "{source}, line {}: {METRIC} is `{value}`; a request counter is a finite number of 0 or more",
                    n + 1
                );
            }
        }
    }
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .with_context(|| format!("cannot parse {source}"))?;
    let mut traffic = Traffic {
        source: format!("prometheus {source}"),
        ..Traffic::default()
    };
    let mut seen = 0;
    for sample in scrape.samples.iter().filter(|s| s.metric == METRIC) {
        seen += 1;
        let count = match sample.value {
            Value::Counter(v) | Value::Untyped(v) | Value::Gauge(v) => v,
            _ => bail!("{source}: {METRIC} is a histogram or summary; it must be a counter"),
        };
        let Some(function) = sample.labels.get("function").filter(|f| !f.is_empty()) else {
            bail!(
                "{source}: a {METRIC} sample has no `function` label ({:?}); the runtime labels each with the function called",
                sample.labels
            );
        };
        let outside = ["", "external", "other", "unverified"];
        match sample.labels.get("caller").filter(|c| !outside.contains(c)) {
            Some(caller) => {
                *traffic
                    .calls
                    .entry((caller.to_string(), function.to_string()))
                    .or_default() += count;
            }
            None => *traffic.external.entry(function.to_string()).or_default() += count,
        }
    }
    if seen == 0 {
        bail!(
            "{source} has no {METRIC} samples: it is not a scrape of fmerge-runtime's metrics (or no request was counted yet)"
        );
    }
    Ok(traffic)
}

/// The crate's sample pattern is not anchored at the end: a line must also
/// end after its value and optional integer timestamp.
fn whole_sample(line: &str) -> bool {
    let rest = match line.find('{') {
        Some(open) => match line[open..].find('}') {
            Some(close) => &line[open + close + 1..],
            None => return false,
        },
        None => line.split_once(char::is_whitespace).map_or("", |(_, r)| r),
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    let number = |w: &str| {
        matches!(
            w.to_ascii_lowercase().as_str(),
            "nan" | "+inf" | "-inf" | "inf"
        ) || w.parse::<f64>().is_ok()
    };
    match words[..] {
        [value] => number(value),
        [value, timestamp] => number(value) && timestamp.parse::<i64>().is_ok(),
        _ => false,
    }
}

/// Requests per function in an nginx access log (`/function/<name>` paths).
pub fn access_log_counts(path: &Path) -> Result<BTreeMap<String, f64>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the access log {}", path.display()))?;
    parse_access_log(&text, &path.display().to_string())
}

pub fn parse_access_log(text: &str, source: &str) -> Result<BTreeMap<String, f64>> {
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
            "{source} holds no gateway request for a function (a request line like \"POST /function/<name> HTTP/1.1\"): is it the gateway's access log?"
        );
    }
    Ok(counts)
}

/// Spreads per-function request counts over the graph's static edges (see
/// the module doc): the requests of a function with callers are divided
/// among them in proportion to each caller's requests times its call sites.
pub fn from_counts(
    counts: &BTreeMap<String, f64>,
    edges: &[(String, String, usize)],
    source: &str,
) -> Traffic {
    let mut traffic = Traffic {
        source: format!("nginx {source} (per-edge calls estimated from per-function requests)"),
        ..Traffic::default()
    };
    for (function, &n) in counts {
        let callers: Vec<(&String, f64)> = edges
            .iter()
            .filter(|(_, to, _)| to == function)
            .map(|(from, _, sites)| {
                (
                    from,
                    counts.get(from).copied().unwrap_or(0.0) * *sites as f64,
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
                .insert((from.clone(), function.clone()), n * w / total);
        }
    }
    traffic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrape_counts_edges_and_outside_requests() {
        let text = "# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\n\
            http_requests_total{function=\"b\",caller=\"a\"} 30\n\
            http_requests_total{function=\"a\",caller=\"\"} 10\n\
            http_requests_total{function=\"b\",caller=\"a\"} 2\n\
            other_metric 5\n";
        let t = parse_prometheus(text, "m").unwrap();
        assert_eq!(t.calls[&("a".into(), "b".into())], 32.0);
        assert_eq!(t.external["a"], 10.0);
    }

    /// The runtime's own exposition (prometheus-client's, with its histogram,
    /// gauge and `# EOF`): its `external` caller is a request from outside.
    #[test]
    fn a_real_runtime_scrape_is_read() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traffic/runtime-scrape.txt"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let t = parse_prometheus(&text, path).unwrap();
        assert_eq!(t.calls[&("compose-post".into(), "unique-id".into())], 1.0);
        assert_eq!(t.calls.len(), 1);
        assert_eq!(t.external["unique-id"], 1.0);
    }

    #[test]
    fn malformed_lines_and_values_are_errors_naming_the_line() {
        let e = parse_prometheus(
            "http_requests_total{function=\"a\"} 1\nthis is { not\n",
            "m",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 2") && e.contains("this is { not"), "{e}");
        let e = parse_prometheus("http_requests_total{function=\"a\"} -3\n", "m")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("-3"), "{e}");
        let e = parse_prometheus("up 1\n", "m").unwrap_err().to_string();
        assert!(e.contains("no http_requests_total samples"), "{e}");
        let e = parse_prometheus("http_requests_total{caller=\"a\"} 1\n", "m")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `function` label"), "{e}");
    }

    #[test]
    fn access_log_requests_are_spread_over_callers() {
        let log = "127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"POST /function/a HTTP/1.1\" 200 2 \"-\" \"x\"\n\
            127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"POST /function/b.openfaas-fn HTTP/1.1\" 200 2 \"-\" \"x\"\n\
            127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"POST /function/b HTTP/1.1\" 200 2 \"-\" \"x\"\n\
            127.0.0.1 - - [23/Nov/2026:09:00:00 +0000] \"GET /healthz HTTP/1.1\" 200 2 \"-\" \"x\"\n";
        let counts = parse_access_log(log, "log").unwrap();
        assert_eq!(counts["a"], 1.0);
        assert_eq!(counts["b"], 2.0);
        let t = from_counts(&counts, &[("a".into(), "b".into(), 1)], "log");
        assert_eq!(t.external["a"], 1.0);
        assert_eq!(t.calls[&("a".into(), "b".into())], 2.0);
        assert!(parse_access_log("nothing here\n", "log").is_err());
    }
}
