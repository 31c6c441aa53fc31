//! Real traffic for the call graph's edges, from one of two sources:
//!
//! - a Prometheus text scrape of the runtime's per-caller counter
//!   `http_requests_total{function="…",caller="…"}` (a request `caller`
//!   made to `function`; no caller, an empty one, or the runtime's
//!   `external` and `unverified` labels, is a request from outside the
//!   application; `other`, a caller it could not name), or two scrapes for
//!   the requests between them. Read with the `prometheus-parse` crate, line
//!   by line so that a line that is not in the text format is an error that
//!   names it, instead of being skipped.
//! - an nginx gateway access log ([`super::access_log`]).

use anyhow::{Context as _, Result, bail};
use prometheus_parse::{LineInfo, Scrape, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The counter the runtime keeps per (caller, function).
pub const METRIC: &str = "http_requests_total";
/// The runtime's histogram of each `invoke` as its caller saw it
/// (`caller`, `callee`, `transport`): its sum and count give a hop's mean
/// cost.
pub const HOP_METRIC: &str = "fmerge_invoke_duration_seconds";
/// How a measured hop cost is made, for reports.
pub const HOP_MEASURED: &str = "the caller's fmerge_invoke_duration_seconds less the callee's fmerge_handler_duration_seconds (its http_request_duration_seconds where its runtime has no handler times)";
const HOP_SUM: &str = "fmerge_invoke_duration_seconds_sum";
const HOP_COUNT: &str = "fmerge_invoke_duration_seconds_count";
/// The callee's side of the same calls: the runtime's time serving each
/// request (`function`, `caller`), which merging does not remove.
const SERVE_SUM: &str = "http_request_duration_seconds_sum";
const SERVE_COUNT: &str = "http_request_duration_seconds_count";
/// What of that serving the handler ran (`function`, `caller`): what an
/// in-process call keeps, without the hand-offs between the server's
/// threads that serving over HTTP adds.
const HANDLER_SUM: &str = "fmerge_handler_duration_seconds_sum";
const HANDLER_COUNT: &str = "fmerge_handler_duration_seconds_count";
/// The samples read; the rest of a scrape is only checked for its format.
const READ: [&str; 7] = [
    METRIC,
    HOP_SUM,
    HOP_COUNT,
    SERVE_SUM,
    SERVE_COUNT,
    HANDLER_SUM,
    HANDLER_COUNT,
];

/// Seconds in all and how many: what a mean time is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timed {
    pub seconds: f64,
    pub count: f64,
}

/// A caller and the function it calls, by name: the key of the figures
/// kept per call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallPair {
    pub caller: String,
    pub callee: String,
}

impl CallPair {
    pub fn new(caller: impl Into<String>, callee: impl Into<String>) -> Self {
        CallPair {
            caller: caller.into(),
            callee: callee.into(),
        }
    }
}

/// Requests seen: per edge, and from outside per function.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traffic {
    pub calls: BTreeMap<CallPair, f64>,
    pub external: BTreeMap<String, f64>,
    /// Requests from callers the runtime could not name (its `other`
    /// label, past its first 64 callers): from inside the application, so
    /// not external; [`Graph::weigh`](super::Graph::weigh) spreads them
    /// over the function's callers.
    pub unnamed: BTreeMap<String, f64>,
    /// Calls over the gateway, per (caller, callee function): seconds in
    /// all and how many, as the callers saw them ([`HOP_METRIC`]; its
    /// `callee` label is the name given to `invoke`, `name.namespace`
    /// counted under `name`).
    pub hops: BTreeMap<CallPair, Timed>,
    /// Requests served, per (caller, callee): seconds in all and how many,
    /// as the callee's runtime timed them (`http_request_duration_seconds`).
    pub served: BTreeMap<CallPair, Timed>,
    /// The same requests' handlers, as the runtime timed them on the
    /// handler's thread (`fmerge_handler_duration_seconds`; none from a
    /// runtime older than it).
    pub handled: BTreeMap<CallPair, Timed>,
    /// The functions the figures cover (those with a sample of their own),
    /// when the source can tell; the others' figures are unknown, not zero.
    pub covered: Option<BTreeSet<String>>,
    /// Where the figures come from, for people.
    pub source: String,
    /// Each function's pods' measured usage ([`usage`]).
    pub usage: BTreeMap<String, usage::Usage>,
    /// What the usage could not measure, and why.
    pub notes: Vec<String>,
    /// Whether each request's caller is named (a scrape of the runtime's
    /// counter), not only the function called (an access log).
    pub callers_named: bool,
}

/// A series: its metric, its labels (sorted), and which of the samples with
/// those labels it is in its file (concatenated scrapes of several pods
/// repeat them).
type Series = (String, Vec<(String, String)>, usize);

/// Reads one Prometheus text scrape (the requests counted so far; several
/// pods' scrapes concatenated add up), or two taken one after the other
/// (the requests in between: each series' increase, a counter that went
/// down having restarted from zero).
pub fn prometheus(paths: &[PathBuf]) -> Result<Traffic> {
    if !(1..=2).contains(&paths.len()) {
        bail!(
            "--metrics was given {} times\nfix: give one scrape (the requests counted so far) or two, taken one after the other (the requests in between)",
            paths.len()
        );
    }
    let texts = paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the metrics file {}", path.display()))?;
            Ok((path.display().to_string(), text))
        })
        .collect::<Result<Vec<_>>>()?;
    let source = match &texts[..] {
        [(one, _)] => format!("prometheus {one}"),
        [(b, _), (a, _)] => {
            format!("prometheus {a} minus {b} (the requests between the two scrapes)")
        }
        _ => unreachable!("one or two, checked above"),
    };
    scrapes(&texts, source)
}

/// The traffic of `--metrics`: files (one scrape, or two taken one after
/// the other), or endpoints fmerge scrapes itself over `window` seconds
/// ([`scrape`], [`scrape::DEFAULT_WINDOW`] when not given), never both.
/// `say` hears what the scrape waits for.
pub fn metrics(values: &[PathBuf], window: Option<f64>, say: &dyn Fn(&str)) -> Result<Traffic> {
    let urls: Vec<String> = values
        .iter()
        .filter_map(|v| v.to_str())
        .filter(|v| scrape::is_endpoint(v))
        .map(String::from)
        .collect();
    if urls.is_empty() {
        if let Some(window) = window {
            bail!(
                "--metrics-window {window} was given with --metrics files: the window of files is the time between their scrapes\nfix: give --metrics-window with endpoints (--metrics http://POD:8081/metrics), or drop it"
            );
        }
        return prometheus(values);
    }
    if urls.len() != values.len() {
        bail!(
            "--metrics was given both files and endpoints\nfix: give either the endpoints of every pod (fmerge scrapes them over --metrics-window) or the files of scrapes taken a window apart"
        );
    }
    let seconds = window.unwrap_or(scrape::DEFAULT_WINDOW);
    if !(seconds.is_finite() && seconds >= 1.0) {
        bail!(
            "--metrics-window {seconds}: the window must be a second or more, a number of seconds\nfix: give --metrics-window {} (the default) or more: the cpu counters tick in hundredths of a second",
            scrape::DEFAULT_WINDOW
        );
    }
    let texts = scrape::scrape(&urls, std::time::Duration::from_secs_f64(seconds), say)?;
    let what = match &urls[..] {
        [one] => one.clone(),
        many => format!("{} endpoints", many.len()),
    };
    let source = format!(
        "prometheus {what} scraped by fmerge over {seconds} s (the requests between its first and last scrape)"
    );
    scrapes(&texts, source)
}

/// The figures of scrapes taken one after another, each named: from one,
/// the requests counted so far; from more, the requests between the first
/// and the last, and memory at its peak over all of them.
pub fn scrapes(texts: &[(String, String)], source: String) -> Result<Traffic> {
    let mut read = Vec::new();
    for (name, text) in texts {
        read.push(series(text, name)?);
    }
    let (Some(first), Some(last)) = (read.first(), read.last()) else {
        bail!("no scrape to read\nfix: give --metrics");
    };
    let counted = match read.len() {
        1 => first.clone(),
        _ => increase(first, last.clone()),
    };
    let mut traffic = classify(counted, source);
    let all: Vec<&str> = texts.iter().map(|(_, text)| text.as_str()).collect();
    let later = &texts[texts.len() - 1].0;
    (traffic.usage, traffic.notes) = usage::usage(&all, later)?;
    Ok(traffic)
}

/// Each series' increase from `before` to `after`; a series that went down
/// restarted (the pod did) and counts whole, as does a new one.
fn increase(before: &BTreeMap<Series, f64>, after: BTreeMap<Series, f64>) -> BTreeMap<Series, f64> {
    after
        .into_iter()
        .map(|(key, now)| {
            let then = before.get(&key).copied().unwrap_or(0.0);
            let d = if now >= then { now - then } else { now };
            (key, d)
        })
        .collect()
}

/// One scrape's figures.
pub fn parse_prometheus(text: &str, source: &str) -> Result<Traffic> {
    scrapes(
        &[(source.to_string(), text.to_string())],
        format!("prometheus {source}"),
    )
}

/// The counter's series in a scrape, each line checked.
fn series(text: &str, source: &str) -> Result<BTreeMap<Series, f64>> {
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue; // HELP, TYPE and plain comments
        }
        if !trimmed.is_empty()
            && (matches!(LineInfo::parse(line), LineInfo::Ignored) || !whole_sample(trimmed))
        {
            bail!(
                "{source}, line {}: `{}` is not a sample of the Prometheus text format (`name{{label=\"value\"}} number`)\n{}",
                n + 1,
                trimmed.chars().take(80).collect::<String>(),
                scrape_fix(source)
            );
        }
        if let LineInfo::Sample {
            metric_name, value, ..
        } = LineInfo::parse(line)
            && READ.contains(&metric_name)
        {
            let number = match value.to_ascii_lowercase().as_str() {
                "nan" => f64::NAN,
                v => v.parse::<f64>().unwrap_or(f64::NAN),
            };
            if !number.is_finite() || number < 0.0 {
                bail!(
                    "{source}, line {}: {metric_name} is `{value}`; a counter is a finite number of 0 or more\n{}",
                    n + 1,
                    scrape_fix(source)
                );
            }
        }
    }
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .with_context(|| format!("cannot parse {source}"))?;
    let mut series = BTreeMap::new();
    for sample in scrape
        .samples
        .iter()
        .filter(|s| READ.contains(&s.metric.as_str()))
    {
        let count = match sample.value {
            Value::Counter(v) | Value::Untyped(v) | Value::Gauge(v) => v,
            _ => bail!(
                "{source}: {} is a histogram or summary; it must be a counter\n{}",
                sample.metric,
                scrape_fix(source)
            ),
        };
        if sample.metric == METRIC && sample.labels.get("function").is_none_or(str::is_empty) {
            if sample.labels.get("method").is_some() {
                // of-watchdog's own counter: `code` and `method`, no function.
                let mut labels: Vec<String> = sample
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{v}\""))
                    .collect();
                labels.sort();
                bail!(
                    "{source}: a {METRIC} sample is labelled {{{}}}, as of-watchdog counts its requests: the pod's metrics are of-watchdog's, which name no caller, and its process figures are the watchdog's, not the function's\n\
                     fix: leave the pods of-watchdog serves out of --metrics (the plan sizes their functions from the stack's figures, and says so); give the scrapes of the pods on fmerge-runtime",
                    labels.join(",")
                );
            }
            bail!(
                "{source}: a {METRIC} sample has no `function` label ({:?}); the runtime labels each with the function called\n{}",
                sample.labels,
                scrape_fix(source)
            );
        }
        let mut labels: Vec<(String, String)> = sample
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        labels.sort();
        let metric = sample.metric.clone();
        let mut occurrence = 0;
        while series.contains_key(&(metric.clone(), labels.clone(), occurrence)) {
            occurrence += 1;
        }
        series.insert((metric, labels, occurrence), count);
    }
    if !series.keys().any(|(metric, _, _)| metric == METRIC) {
        bail!(
            "{source} has no {METRIC} samples: it is not a scrape of fmerge-runtime's metrics (or no request was counted yet)\n{}",
            scrape_fix(source)
        );
    }
    Ok(series)
}

/// The fix for a `--metrics` file that is not a scrape of the runtime's
/// metrics. 8081 is the runtime's default `metrics_port` (docs/operating.md).
fn scrape_fix(source: &str) -> String {
    format!(
        "fix: give the text a function's /metrics serves, e.g. `curl -s http://<function>:8081/metrics > {source}`"
    )
}

/// Requests by who made them: a function of the application (`caller`),
/// one the runtime could not name (`other`), or outside (no caller, an
/// empty one, `external`, or `unverified`: a claim the application did not
/// sign).
fn classify(series: BTreeMap<Series, f64>, source: String) -> Traffic {
    let mut traffic = Traffic {
        source,
        covered: Some(BTreeSet::new()),
        callers_named: true,
        ..Traffic::default()
    };
    for ((metric, labels, _), count) in series {
        let label = |name: &str| {
            labels
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let sum_or_count = |figures: &mut BTreeMap<CallPair, Timed>, pair: CallPair| {
            let timed = figures.entry(pair).or_default();
            if metric.ends_with("_sum") {
                timed.seconds += count;
            } else {
                timed.count += count;
            }
        };
        if metric == SERVE_SUM || metric == SERVE_COUNT {
            if let (Some(caller), Some(function)) = (label("caller"), label("function")) {
                sum_or_count(&mut traffic.served, CallPair::new(caller, function));
            }
            continue;
        }
        if metric == HANDLER_SUM || metric == HANDLER_COUNT {
            if let (Some(caller), Some(function)) = (label("caller"), label("function")) {
                sum_or_count(&mut traffic.handled, CallPair::new(caller, function));
            }
            continue;
        }
        if metric != METRIC {
            if let (Some(caller), Some(callee), Some("gateway")) =
                (label("caller"), label("callee"), label("transport"))
            {
                // The callee as `invoke` was given it: `name.namespace`
                // names `name`, as the graph's edges do.
                let callee = super::function_of(callee).to_string();
                sum_or_count(&mut traffic.hops, CallPair::new(caller, callee));
            }
            continue;
        }
        let function = label("function").unwrap_or_default().to_string();
        if let Some(covered) = traffic.covered.as_mut() {
            covered.insert(function.clone());
        }
        match label("caller").unwrap_or_default() {
            "" | "external" | "unverified" => {
                *traffic.external.entry(function).or_default() += count
            }
            "other" => *traffic.unnamed.entry(function).or_default() += count,
            caller => {
                *traffic
                    .calls
                    .entry(CallPair::new(caller, function))
                    .or_default() += count
            }
        }
    }
    traffic
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

pub mod scrape;
pub mod usage;

#[cfg(test)]
mod tests;
