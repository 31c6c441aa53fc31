//! What each function's pods use, from the same scrape as the traffic: the
//! standard process metrics the runtime exports,
//! `process_resident_memory_bytes` (a gauge) and `process_cpu_seconds_total`
//! (a counter). The planner makes a merged pod's requests of them.
//!
//! A scrape of several pods is their texts concatenated, each ending with
//! `# EOF` (as the runtime's encoder writes it), or one text whose samples
//! name their pod (Prometheus' federate or query output: a `pod`,
//! `kubernetes_pod_name` or `instance` label), or both. A process sample
//! belongs to the function its `function` label names, else to the one
//! function the pod's other samples name; a pod that serves several
//! functions (a merged one) is left out: its usage is not one function's.
//!
//! Memory is the most any of the function's pods holds in any scrape given
//! (the peak the scrapes saw; one scrape is one instant, and says so). Cpu
//! needs two scrapes: the cpu seconds the function's pods used between the
//! first and the last, over the seconds between the samples' own
//! timestamps (the text format's optional field, in ms; fmerge's own clock
//! when it scrapes, [`super::scrape`]), per pod. A file's modification time is
//! not when its scrape was taken (a copy changes it), so without timestamps
//! no cpu is measured; a later scrape whose timestamps are not later is
//! refused.

use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// Resident memory, bytes: a gauge.
pub const MEMORY: &str = "process_resident_memory_bytes";
/// Cpu used since the process started, seconds: a counter.
pub const CPU: &str = "process_cpu_seconds_total";

/// One function's measured usage, per pod.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Bytes of resident memory: the most any pod held in any scrape.
    pub memory_bytes: Option<f64>,
    /// How many scrapes the memory comes from (1: one instant, not a
    /// window's peak).
    pub memory_scrapes: usize,
    /// Cores, per pod, over the window between the two scrapes.
    pub cpu: Option<f64>,
    /// The cpu seconds its pods used over that window, in all: over the
    /// requests of the window, its cpu per request.
    pub cpu_seconds: Option<f64>,
    /// Its pods in the later scrape: its replicas.
    pub pods: usize,
}

/// One pod's process figures.
#[derive(Debug, Clone, Copy, Default)]
struct Pod {
    memory: Option<f64>,
    cpu_seconds: Option<f64>,
    /// The cpu sample's own timestamp, seconds since the epoch.
    at: Option<f64>,
}

/// The labels that name the pod a sample came from, first found first:
/// what Prometheus' Kubernetes discovery is usually relabelled to, then the
/// target it scraped.
const POD_LABELS: [&str; 3] = ["pod", "kubernetes_pod_name", "instance"];

/// A sample's parts: its function, if labelled; its metric; its value; its
/// own timestamp, seconds.
type Sample<'a> = (Option<String>, &'a str, f64, Option<f64>);

/// The pods of one scrape, per function: each text that ends with `# EOF`,
/// and within it each pod its samples name ([`POD_LABELS`]), is one pod.
fn pods(text: &str) -> BTreeMap<String, Vec<Pod>> {
    let mut out: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    for part in text.split("\n# EOF") {
        // Per pod named in the part ("" when none is): the functions its
        // other samples name, and its process samples.
        let mut in_part: BTreeMap<String, (Vec<String>, Vec<Sample>)> = BTreeMap::new();
        for line in part.lines() {
            let prometheus_parse::LineInfo::Sample {
                metric_name,
                labels,
                value,
                timestamp,
            } = prometheus_parse::LineInfo::parse(line)
            else {
                continue;
            };
            let function = labels.and_then(|l| label(l, "function"));
            let pod = labels
                .and_then(|l| POD_LABELS.iter().find_map(|name| label(l, name)))
                .unwrap_or_default();
            let (named, samples) = in_part.entry(pod).or_default();
            if metric_name == MEMORY || metric_name == CPU {
                if let Ok(v) = value.parse::<f64>()
                    && v.is_finite()
                    && v >= 0.0
                {
                    let at = timestamp
                        .and_then(|t| t.parse::<f64>().ok())
                        .map(|ms| ms / 1000.0);
                    samples.push((function, metric_name, v, at));
                }
            } else if let Some(f) = function
                && !named.contains(&f)
            {
                named.push(f);
            }
        }
        for (named, samples) in in_part.into_values() {
            let mut pod: BTreeMap<String, Pod> = BTreeMap::new();
            for (function, metric, v, at) in samples {
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
                    (p.cpu_seconds, p.at) = (Some(v), at);
                }
            }
            for (function, p) in pod {
                out.entry(function).or_default().push(p);
            }
        }
    }
    out
}

/// The value of label `name` in a sample's labels text (`a="1",b="2"`).
fn label(labels: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let mut from = 0;
    while let Some(found) = labels[from..].find(&key) {
        let at = from + found;
        let whole = at == 0 || matches!(labels.as_bytes()[at - 1], b',' | b' ' | b'{');
        if whole {
            let rest = &labels[at + key.len()..];
            return Some(rest[..rest.find('"')?].to_string());
        }
        from = at + key.len();
    }
    None
}

/// Each function's usage from scrapes taken one after another: from one,
/// memory only; from more, memory at its peak over all of them and cpu
/// between the first and the last. Notes say what was not measured.
/// `source` names the last scrape in an error.
pub fn usage(scrapes: &[&str], source: &str) -> Result<(BTreeMap<String, Usage>, Vec<String>)> {
    let Some((last, rest)) = scrapes.split_last() else {
        return Ok(Default::default());
    };
    let later = pods(last);
    let earlier = rest.first().map(|first| pods(first));
    let between: Vec<BTreeMap<String, Vec<Pod>>> =
        rest.iter().skip(1).map(|text| pods(text)).collect();
    let mut notes = Vec::new();
    let mut out = BTreeMap::new();
    for (function, pods) in &later {
        let then = earlier.as_ref().and_then(|e| e.get(function));
        let peak = |pods: &[Pod]| pods.iter().filter_map(|p| p.memory).reduce(f64::max);
        let memories: Vec<f64> = [Some(&pods[..]), then.map(|p| &p[..])]
            .into_iter()
            .chain(between.iter().map(|b| b.get(function).map(|p| &p[..])))
            .flatten()
            .filter_map(peak)
            .collect();
        let memory_bytes = memories.iter().copied().reduce(f64::max);
        let (cpu, cpu_seconds) = match then {
            None => (None, None),
            Some(then) => {
                let sum = |pods: &[Pod]| -> Option<f64> {
                    pods.iter().map(|p| p.cpu_seconds).sum::<Option<f64>>()
                };
                let when = |pods: &[Pod]| -> Option<f64> {
                    pods.iter()
                        .map(|p| p.at)
                        .collect::<Option<Vec<f64>>>()?
                        .into_iter()
                        .reduce(f64::max)
                };
                // A counter that went down restarted: its pods count whole.
                // What they used needs no clock: over the window's requests,
                // cpu per request; cores need the window's length.
                let used = match (sum(pods), sum(then)) {
                    (Some(now), Some(was)) if now >= was => Some(now - was),
                    (Some(now), Some(_)) => Some(now),
                    _ => None,
                };
                match (used, when(pods), when(then)) {
                    (Some(used), Some(t1), Some(t0)) => {
                        let seconds = t1 - t0;
                        if seconds <= 0.0 {
                            bail!(
                                "{source}: {function}'s {CPU} is timestamped {t1} s, not after the earlier scrape's {t0} s, so no cpu rate can be made of them\n\
                                 fix: give the earlier scrape first and the later second, taken a window apart (a minute or more)"
                            );
                        }
                        (Some(used / seconds / pods.len() as f64), Some(used))
                    }
                    (Some(used), _, _) => {
                        notes.push(format!(
                            "{function}'s {CPU} samples carry no timestamp, so its cores are not measured (a file's time is not its scrape's): its pods are sized from the stack's figures; give --metrics http://POD:8081/metrics for each pod (fmerge scrapes them on its own clock), or scrape with timestamps (Prometheus' federate or API output keeps them)"
                        ));
                        (None, Some(used))
                    }
                    _ => (None, None),
                }
            }
        };
        let usage = Usage {
            memory_bytes,
            memory_scrapes: memories.len(),
            cpu,
            cpu_seconds,
            pods: pods.len(),
        };
        if usage.memory_bytes.is_some() || usage.cpu_seconds.is_some() {
            out.insert(function.clone(), usage);
        }
    }
    Ok((out, notes))
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

    /// `text` with each process sample timestamped at `ms`.
    fn stamped(text: &str, ms: u64) -> String {
        text.lines()
            .map(|l| {
                if l.starts_with("process_") {
                    format!("{l} {ms}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    }

    #[test]
    fn memory_is_the_peak_of_the_window_not_the_last_instant() {
        // a held 10Mi at the first scrape and 8Mi at the second.
        let after = BEFORE.replace("10485760", "8388608");
        let (u, _) = usage(&[BEFORE, &after], "m").unwrap();
        assert_eq!(u["a"].memory_bytes, Some(10485760.0));
    }

    #[test]
    fn the_window_is_the_scrapes_own_timestamps_never_a_files_time() {
        let after = BEFORE.replace("cpu_seconds_total 1.0", "cpu_seconds_total 3.0");
        // No timestamps: no cpu, and a note says why.
        let (u, notes) = usage(&[BEFORE, &after], "m").unwrap();
        assert_eq!(u["a"].cpu, None);
        assert!(
            notes.iter().any(|n| n.contains("carry no timestamp")),
            "{notes:?}"
        );
        // Timestamps 50 ms apart: 2 cpu seconds in 0.05 s is 40 cores, and
        // the window is the scrapes' own.
        let (u, _) = usage(&[&stamped(BEFORE, 1_000), &stamped(&after, 1_050)], "m").unwrap();
        assert!((u["a"].cpu.unwrap() - 40.0).abs() < 1e-9);
        // A later scrape that is not later is refused.
        let e = usage(&[&stamped(BEFORE, 2_000), &stamped(&after, 1_000)], "m")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not after the earlier scrape") && e.contains("\nfix: "),
            "{e}"
        );
    }

    #[test]
    fn usage_is_each_pods_own_memory_and_cpu_over_the_seconds_between() {
        let after = BEFORE
            .replace("10485760", "12582912")
            .replace("cpu_seconds_total 1.0", "cpu_seconds_total 3.0");
        let (u, _) = usage(&[&stamped(BEFORE, 0), &stamped(&after, 10_000)], "m").unwrap();
        assert_eq!(u["a"].memory_bytes, Some(12582912.0));
        assert_eq!(u["a"].memory_scrapes, 2);
        assert_eq!(u["a"].cpu, Some(0.2));
        assert_eq!(u["b"].cpu, Some(0.0));
        // One scrape: memory only, from one instant.
        let (u, _) = usage(&[BEFORE], "m").unwrap();
        assert_eq!(u["b"].memory_bytes, Some(20971520.0));
        assert_eq!((u["b"].memory_scrapes, u["b"].cpu), (1, None));
    }

    /// One text of several pods, as Prometheus' federate endpoint gives it:
    /// samples grouped by metric, each naming its pod (`instance`), no
    /// `# EOF` between pods.
    fn federated(a0: (u64, f64), a1: (u64, f64), ms: u64) -> String {
        format!(
            "\
http_requests_total{{caller=\"external\",function=\"a\",instance=\"10.0.0.1:8081\"}} 3 {ms}
http_requests_total{{caller=\"external\",function=\"a\",instance=\"10.0.0.2:8081\"}} 3 {ms}
http_requests_total{{caller=\"a\",function=\"b\",instance=\"10.0.0.3:8081\"}} 6 {ms}
process_cpu_seconds_total{{instance=\"10.0.0.1:8081\"}} {} {ms}
process_cpu_seconds_total{{instance=\"10.0.0.2:8081\"}} {} {ms}
process_cpu_seconds_total{{instance=\"10.0.0.3:8081\"}} 5 {ms}
process_resident_memory_bytes{{instance=\"10.0.0.1:8081\"}} {} {ms}
process_resident_memory_bytes{{instance=\"10.0.0.2:8081\"}} {} {ms}
process_resident_memory_bytes{{instance=\"10.0.0.3:8081\"}} 4194304 {ms}
",
            a0.1, a1.1, a0.0, a1.0
        )
    }

    #[test]
    fn pods_named_by_their_instance_in_one_text_are_each_a_replica() {
        // a runs two pods: 12Mi and 6Mi, each using 1 cpu second in 10 s.
        let before = federated((12 << 20, 1.0), (6 << 20, 2.0), 0);
        let after = federated((12 << 20, 2.0), (6 << 20, 3.0), 10_000);
        let (u, _) = usage(&[&before, &after], "m").unwrap();
        assert_eq!(u["a"].pods, 2, "{:?}", u["a"]);
        assert_eq!(u["a"].memory_bytes, Some(12582912.0));
        assert_eq!(u["a"].cpu_seconds, Some(2.0));
        assert!((u["a"].cpu.unwrap() - 0.1).abs() < 1e-9, "{:?}", u["a"]);
        // b's one pod, named by its counter beside it.
        assert_eq!((u["b"].pods, u["b"].memory_bytes), (1, Some(4194304.0)));
    }

    #[test]
    fn a_pod_of_several_functions_measures_none_of_them() {
        let merged = "\
http_requests_total{function=\"a\",caller=\"external\"} 3
http_requests_total{function=\"b\",caller=\"a\"} 3
process_resident_memory_bytes 10485760
# EOF
";
        assert!(usage(&[merged], "m").unwrap().0.is_empty());
        // A `function` label names it.
        let labelled = merged.replace(
            "process_resident_memory_bytes 10485760",
            "process_resident_memory_bytes{function=\"a\"} 10485760",
        );
        assert_eq!(
            usage(&[&labelled], "m").unwrap().0["a"].memory_bytes,
            Some(10485760.0)
        );
    }
}
