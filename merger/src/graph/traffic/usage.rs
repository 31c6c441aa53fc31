//! What each function's pods use, from the same scrape as the traffic: the
//! standard process metrics the runtime exports,
//! `process_resident_memory_bytes` (a gauge) and `process_cpu_seconds_total`
//! (a counter). The planner makes a merged pod's requests of them.
//!
//! A scrape of several pods is their texts concatenated, each ending with
//! `# EOF` (as the runtime's encoder writes it). A process sample belongs to
//! the function its `function` label names, else to the one function the
//! pod's other samples name; a pod that serves several functions (a merged
//! one) is left out: its usage is not one function's.
//!
//! Memory is the most any of the function's pods holds (in the later scrape
//! when two are given). Cpu needs two scrapes: the cpu seconds the
//! function's pods used between them, over the seconds between the scrapes
//! (the files' modification times), per pod.

use std::collections::BTreeMap;
use std::path::Path;

/// Resident memory, bytes: a gauge.
pub const MEMORY: &str = "process_resident_memory_bytes";
/// Cpu used since the process started, seconds: a counter.
pub const CPU: &str = "process_cpu_seconds_total";

/// One function's measured usage, per pod.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Bytes of resident memory.
    pub memory_bytes: Option<f64>,
    /// Cores.
    pub cpu: Option<f64>,
}

/// One pod's process figures.
#[derive(Debug, Clone, Copy, Default)]
struct Pod {
    memory: Option<f64>,
    cpu_seconds: Option<f64>,
}

/// The pods of one scrape, per function.
fn pods(text: &str) -> BTreeMap<String, Vec<Pod>> {
    let mut out: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    for part in text.split("\n# EOF") {
        let mut named: Vec<String> = Vec::new();
        let mut samples: Vec<(Option<String>, &str, f64)> = Vec::new();
        for line in part.lines() {
            let prometheus_parse::LineInfo::Sample {
                metric_name,
                labels,
                value,
                ..
            } = prometheus_parse::LineInfo::parse(line)
            else {
                continue;
            };
            let function = labels.and_then(function_label);
            if metric_name == MEMORY || metric_name == CPU {
                if let Ok(v) = value.parse::<f64>()
                    && v.is_finite()
                    && v >= 0.0
                {
                    samples.push((function, metric_name, v));
                }
            } else if let Some(f) = function
                && !named.contains(&f)
            {
                named.push(f);
            }
        }
        let mut pod: BTreeMap<String, Pod> = BTreeMap::new();
        for (function, metric, v) in samples {
            let Some(function) = function.or_else(|| match &named[..] {
                [one] => Some(one.clone()),
                _ => None,
            }) else {
                continue;
            };
            let p = pod.entry(function).or_default();
            if metric == MEMORY {
                p.memory = Some(v);
            } else {
                p.cpu_seconds = Some(v);
            }
        }
        for (function, p) in pod {
            out.entry(function).or_default().push(p);
        }
    }
    out
}

/// The value of the `function` label in a sample's labels text.
fn function_label(labels: &str) -> Option<String> {
    let at = labels.find("function=\"")? + "function=\"".len();
    let rest = &labels[at..];
    Some(rest[..rest.find('"')?].to_string())
}

/// The earlier of two scrapes, and the seconds from it to the later.
#[derive(Debug, Clone, Copy)]
pub struct EarlierScrape<'a> {
    pub text: &'a str,
    pub seconds: f64,
}

/// Each function's usage from one scrape (`after`; memory only) or two
/// (`before` too).
pub fn usage(before: Option<EarlierScrape<'_>>, after: &str) -> BTreeMap<String, Usage> {
    let later = pods(after);
    let earlier = before.map(|b| (pods(b.text), b.seconds));
    later
        .iter()
        .map(|(function, pods)| {
            let memory_bytes = pods.iter().filter_map(|p| p.memory).reduce(f64::max);
            let cpu = earlier.as_ref().and_then(|(then, seconds)| {
                let sum = |pods: &[Pod]| -> Option<f64> {
                    pods.iter().map(|p| p.cpu_seconds).sum::<Option<f64>>()
                };
                let now = sum(pods)?;
                let was = then.get(function).and_then(|p| sum(p)).unwrap_or(0.0);
                // A counter that went down restarted: its pods count whole.
                let used = if now >= was { now - was } else { now };
                (*seconds > 0.0).then(|| used / seconds / pods.len() as f64)
            });
            (function.clone(), Usage { memory_bytes, cpu })
        })
        .filter(|(_, u)| u.memory_bytes.is_some() || u.cpu.is_some())
        .collect()
}

/// The seconds between two files' modification times (when the scrapes
/// were written), if the file system keeps them.
pub fn seconds_between(before: &Path, after: &Path) -> Option<f64> {
    let at = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let d = at(after)?.duration_since(at(before)?).ok()?;
    Some(d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pods, one function each, as the runtime's encoder ends them.
    const BEFORE: &str = "\
http_requests_total{function=\"a\",caller=\"external\"} 3
process_resident_memory_bytes 10485760
process_cpu_seconds_total 1.0
# EOF
http_requests_total{function=\"b\",caller=\"a\"} 3
process_resident_memory_bytes 20971520
process_cpu_seconds_total 2.0
# EOF
";

    #[test]
    fn usage_is_each_pods_own_memory_and_cpu_over_the_seconds_between() {
        let after = BEFORE
            .replace("10485760", "12582912")
            .replace("cpu_seconds_total 1.0", "cpu_seconds_total 3.0");
        let u = usage(
            Some(EarlierScrape {
                text: BEFORE,
                seconds: 10.0,
            }),
            &after,
        );
        assert_eq!(u["a"].memory_bytes, Some(12582912.0));
        assert_eq!(u["a"].cpu, Some(0.2));
        assert_eq!(u["b"].cpu, Some(0.0));
        // One scrape: memory only.
        let u = usage(None, BEFORE);
        assert_eq!(u["b"].memory_bytes, Some(20971520.0));
        assert_eq!(u["b"].cpu, None);
    }

    #[test]
    fn a_pod_of_several_functions_measures_none_of_them() {
        let merged = "\
http_requests_total{function=\"a\",caller=\"external\"} 3
http_requests_total{function=\"b\",caller=\"a\"} 3
process_resident_memory_bytes 10485760
# EOF
";
        assert!(usage(None, merged).is_empty());
        // A `function` label names it.
        let labelled = merged.replace(
            "process_resident_memory_bytes 10485760",
            "process_resident_memory_bytes{function=\"a\"} 10485760",
        );
        assert_eq!(usage(None, &labelled)["a"].memory_bytes, Some(10485760.0));
    }
}
