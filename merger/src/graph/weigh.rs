//! Traffic on the call graph: [`Graph::weigh`].

use super::{Edge, Graph, traffic};
use std::collections::{BTreeMap, BTreeSet};

impl Graph {
    /// Puts traffic figures on the edges and entry points; figures for
    /// functions outside the stack are left out, with a note each. A
    /// function the traffic does not cover (no sample of its own) keeps no
    /// figure, and neither do the calls into it: unknown, not zero. Requests
    /// from callers the runtime could not name are spread over the
    /// function's callers in the code, in proportion to their seen calls
    /// (else to their call sites).
    pub fn weigh(&mut self, traffic: &traffic::Traffic) -> Vec<String> {
        let mut notes = traffic.notes.clone();
        let names: BTreeSet<String> = self.functions.iter().map(|f| f.name.clone()).collect();
        let covered = |name: &str| traffic.covered.as_ref().is_none_or(|c| c.contains(name));
        // A caller the stack does not hold (another application, or the
        // rest of this one when part of it is planned) is outside: its
        // calls are requests from outside, which keep a deployment.
        let mut from_outside: BTreeMap<&str, f64> = BTreeMap::new();
        for (pair, &n) in &traffic.calls {
            if !names.contains(&pair.caller) && names.contains(&pair.callee) {
                *from_outside.entry(pair.callee.as_str()).or_default() += n;
                notes.push(format!(
                    "traffic shows {n} calls {} → {}, and {0} is not in the stack: counted as requests from outside",
                    pair.caller, pair.callee
                ));
            }
        }
        for f in &mut self.functions {
            f.external = covered(&f.name).then(|| {
                traffic.external.get(&f.name).copied().unwrap_or(0.0)
                    + from_outside.get(f.name.as_str()).copied().unwrap_or(0.0)
            });
            // Requests whose caller the runtime could not name (`other`)
            // are spread over the callers in the code below, an estimate:
            // no proof that none came from a caller the plan drops.
            let unnamed = traffic.unnamed.get(&f.name).copied().unwrap_or(0.0);
            let got = traffic.external.get(&f.name).copied().unwrap_or(0.0)
                + unnamed
                + traffic
                    .calls
                    .iter()
                    .filter(|(pair, _)| pair.callee == f.name)
                    .map(|(_, n)| n)
                    .sum::<f64>();
            f.watched =
                covered(&f.name) && ((traffic.callers_named && unnamed == 0.0) || got == 0.0);
            let usage = traffic.usage.get(&f.name).copied().unwrap_or_default();
            // Per request over the same window as the requests counted.
            f.cpu_ms = usage
                .cpu_seconds
                .filter(|_| got > 0.0)
                .map(|s| s / got * 1000.0);
            // Its handler's time where the runtime timed it (what an
            // in-process call keeps), else its serving time.
            let mean = |timed: &BTreeMap<traffic::CallPair, traffic::Timed>| {
                let (seconds, count) = timed
                    .iter()
                    .filter(|(pair, _)| pair.callee == f.name)
                    .fold((0.0, 0.0), |(s, c), (_, t)| (s + t.seconds, c + t.count));
                (count > 0.0).then(|| seconds / count * 1000.0)
            };
            let handled = mean(&traffic.handled);
            f.handler_timed = handled.is_some();
            f.serve_ms = handled.or_else(|| mean(&traffic.served));
            (f.usage_memory_bytes, f.usage_cpu) = (usage.memory_bytes, usage.cpu);
            (f.usage_pods, f.usage_scrapes) = match usage.pods {
                0 => (None, None),
                pods => (Some(pods), Some(usage.memory_scrapes)),
            };
            if f.external.is_none() {
                notes.push(format!(
                    "{} has no figures in {} (not scraped, or no request counted yet): its requests and the calls into it are unknown, and the plan takes them from the code; scrape every function's /metrics",
                    f.name, traffic.source
                ));
            }
        }
        // Calls the code does not name (a name computed at run time, or a
        // call the bitcode reader does not see) are edges all the same: the
        // traffic names both ends.
        for (
            traffic::CallPair {
                caller: from,
                callee: to,
            },
            n,
        ) in &traffic.calls
        {
            let known = self.edge(from, to).is_some();
            if !known && names.contains(from) && names.contains(to) {
                notes.push(format!(
                    "traffic shows {n} calls {from} → {to}, which no `invoke` with a literal name makes (a name computed at run time): planned from the traffic, one call after another"
                ));
                self.edges.push(Edge {
                    from: from.clone(),
                    to: Some(to.clone()),
                    ..Edge::default()
                });
            }
        }
        fn mean_ms(
            m: &BTreeMap<traffic::CallPair, traffic::Timed>,
            key: &traffic::CallPair,
        ) -> Option<f64> {
            m.get(key)
                .filter(|t| t.count > 0.0)
                .map(|t| t.seconds / t.count * 1000.0)
        }
        for e in &mut self.edges {
            // What merging removes: the call as its caller saw it, less the
            // callee's handler's time (its work, and its own calls, stay;
            // the server's hand-offs to and from the handler's thread go),
            // else less its serving time (a runtime without handler times).
            let key = e.to.as_ref().map(|to| traffic::CallPair::new(&e.from, to));
            let seen = key.as_ref().and_then(|k| mean_ms(&traffic.hops, k));
            let served = key
                .as_ref()
                .and_then(|k| mean_ms(&traffic.handled, k).or_else(|| mean_ms(&traffic.served, k)));
            e.hop_ms = match (seen, served) {
                (Some(seen), Some(served)) => Some((seen - served).max(0.0)),
                (Some(_), None) => {
                    notes.push(format!(
                        "{} → {}: the caller's side of its calls is in {} but not the callee's serving time, so their cost is not taken from it; scrape {1}'s /metrics too",
                        e.from,
                        e.to.as_deref().unwrap_or_default(),
                        traffic.source
                    ));
                    None
                }
                _ => None,
            };
            if let Some(to) = e.to.as_ref().filter(|to| covered(to)) {
                e.calls = Some(
                    traffic
                        .calls
                        .get(&traffic::CallPair::new(&e.from, to))
                        .copied()
                        .unwrap_or(0.0),
                );
            }
        }
        for (function, &n) in &traffic.unnamed {
            let into: Vec<usize> = (0..self.edges.len())
                .filter(|&i| {
                    let e = &self.edges[i];
                    e.to.as_ref() == Some(function) && e.calls.is_some() && names.contains(&e.from)
                })
                .collect();
            let seen: f64 = into
                .iter()
                .map(|&i| self.edges[i].calls.unwrap_or(0.0))
                .sum();
            let sites: usize = into.iter().map(|&i| self.edges[i].sites).sum();
            if into.is_empty() {
                notes.push(format!(
                    "{n} requests to {function} came from callers the runtime could not name (`other`), and no function of the stack calls it in its code; left out"
                ));
                continue;
            }
            for &i in &into {
                let e = &mut self.edges[i];
                let share = if seen > 0.0 {
                    e.calls.unwrap_or(0.0) / seen
                } else {
                    e.sites as f64 / sites as f64
                };
                *e.calls.get_or_insert(0.0) += n * share;
            }
        }
        for name in traffic
            .external
            .keys()
            .chain(traffic.unnamed.keys())
            .chain(traffic.calls.keys().map(|c| &c.callee))
        {
            if !names.contains(name) {
                notes.push(format!(
                    "traffic names {name}, which is not in the stack; left out"
                ));
            }
        }
        notes.sort();
        notes.dedup();
        self.traffic = Some(traffic.source.clone());
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Function;

    fn graph() -> Graph {
        let function = |name: &str| Function {
            name: name.into(),
            ..Function::default()
        };
        let edge = |from: &str, to: &str, sites| Edge {
            from: from.into(),
            to: Some(to.into()),
            sites,
            ..Edge::default()
        };
        Graph {
            functions: vec![function("a"), function("b"), function("c"), function("d")],
            edges: vec![edge("a", "c", 1), edge("b", "c", 3), edge("a", "d", 1)],
            ..Graph::default()
        }
    }

    #[test]
    fn a_function_without_figures_is_unknown_and_said_so() {
        let mut g = graph();
        let t = traffic::parse_prometheus(
            "http_requests_total{function=\"a\",caller=\"\"} 10\n\
             http_requests_total{function=\"b\",caller=\"\"} 0\n\
             http_requests_total{function=\"c\",caller=\"a\"} 10\n",
            "m",
        )
        .unwrap();
        let notes = g.weigh(&t);
        assert_eq!(g.function("a").unwrap().external, Some(10.0));
        assert_eq!(g.function("b").unwrap().external, Some(0.0));
        assert_eq!(g.function("d").unwrap().external, None);
        let into_d = g.edge("a", "d").unwrap();
        assert_eq!(into_d.calls, None, "unknown, not zero");
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("d has no figures in prometheus m")),
            "{notes:?}"
        );
    }

    #[test]
    fn unnamed_callers_are_spread_over_the_callers_in_the_code() {
        // Seen calls: a → c 10, b → c 0: the 6 unnamed go to a.
        let mut g = graph();
        let scrape = "http_requests_total{function=\"c\",caller=\"a\"} 10\n\
             http_requests_total{function=\"c\",caller=\"other\"} 6\n";
        g.weigh(&traffic::parse_prometheus(scrape, "m").unwrap());
        let calls = |g: &Graph, from: &str| g.edge(from, "c").and_then(|e| e.calls);
        assert_eq!(calls(&g, "a"), Some(16.0));
        assert_eq!(calls(&g, "b"), Some(0.0));
        // None seen: by call sites, 1 to 3.
        let mut g = graph();
        let scrape = "http_requests_total{function=\"c\",caller=\"other\"} 8\n";
        g.weigh(&traffic::parse_prometheus(scrape, "m").unwrap());
        assert_eq!(calls(&g, "a"), Some(2.0));
        assert_eq!(calls(&g, "b"), Some(6.0));
        assert_eq!(g.function("c").unwrap().external, Some(0.0), "not external");
        assert!(!g.function("c").unwrap().watched, "spread, not named");
    }

    /// A scrape of a's 10 calls of c: c served them in 1 ms each, a saw 3 ms
    /// each, its histogram naming the callee `callee`.
    fn a_calls_c(callee: &str) -> String {
        format!(
            "http_requests_total{{function=\"c\",caller=\"a\"}} 10\n\
             http_request_duration_seconds_sum{{function=\"c\",caller=\"a\"}} 0.01\n\
             http_request_duration_seconds_count{{function=\"c\",caller=\"a\"}} 10\n\
             fmerge_invoke_duration_seconds_sum{{caller=\"a\",callee=\"{callee}\",transport=\"gateway\"}} 0.03\n\
             fmerge_invoke_duration_seconds_count{{caller=\"a\",callee=\"{callee}\",transport=\"gateway\"}} 10\n"
        )
    }

    #[test]
    fn a_namespaced_callee_keeps_its_measured_hop_cost() {
        // a invokes "c.openfaas-fn": the histogram's callee label says so,
        // the edge and c's own figures name c.
        let mut g = graph();
        let scrape = a_calls_c("c.openfaas-fn");
        g.weigh(&traffic::parse_prometheus(&scrape, "m").unwrap());
        let hop = g.edge("a", "c").and_then(|e| e.hop_ms);
        assert!(hop.is_some_and(|ms| (ms - 2.0).abs() < 1e-9), "{hop:?}");
    }

    #[test]
    fn a_hop_costs_what_its_caller_saw_less_the_callees_handler_where_timed() {
        // c served a's calls in 1 ms each, of which its handler ran 0.4 ms
        // (the rest: the server's hand-offs to and from the handler's
        // thread, which an in-process call does not make): merging removes
        // 3 - 0.4 ms a call, and c's own time is its handler's.
        let mut g = graph();
        let scrape = a_calls_c("c")
            + "fmerge_handler_duration_seconds_sum{function=\"c\",caller=\"a\"} 0.004\n\
             fmerge_handler_duration_seconds_count{function=\"c\",caller=\"a\"} 10\n";
        g.weigh(&traffic::parse_prometheus(&scrape, "m").unwrap());
        let hop = g.edge("a", "c").and_then(|e| e.hop_ms);
        assert!(hop.is_some_and(|ms| (ms - 2.6).abs() < 1e-9), "{hop:?}");
        let c = g.function("c").unwrap();
        assert!(c.handler_timed, "{c:?}");
        assert!(
            c.serve_ms.is_some_and(|ms| (ms - 0.4).abs() < 1e-9),
            "{c:?}"
        );
        // Without handler times (an older runtime): its serving time.
        let mut g = graph();
        g.weigh(&traffic::parse_prometheus(&a_calls_c("c"), "m").unwrap());
        let c = g.function("c").unwrap();
        assert!(!c.handler_timed);
        assert!(
            c.serve_ms.is_some_and(|ms| (ms - 1.0).abs() < 1e-9),
            "{c:?}"
        );
    }

    #[test]
    fn a_hop_costs_what_its_caller_saw_less_the_callees_own_serving() {
        // a saw 3 ms per call of c over the gateway; c served a's calls in
        // 1 ms each: merging removes 2. a → d: d's side is missing.
        let mut g = graph();
        let scrape = a_calls_c("c")
            + "http_requests_total{function=\"d\",caller=\"a\"} 10\n\
             fmerge_invoke_duration_seconds_sum{caller=\"a\",callee=\"d\",transport=\"gateway\"} 0.05\n\
             fmerge_invoke_duration_seconds_count{caller=\"a\",callee=\"d\",transport=\"gateway\"} 10\n";
        let notes = g.weigh(&traffic::parse_prometheus(&scrape, "m").unwrap());
        let hop = |to: &str| g.edge("a", to).and_then(|e| e.hop_ms);
        assert!((hop("c").unwrap() - 2.0).abs() < 1e-9, "{:?}", hop("c"));
        assert_eq!(hop("d"), None, "not the caller's view alone");
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("a → d:") && n.contains("scrape d")),
            "{notes:?}"
        );
    }

    #[test]
    fn each_function_gets_its_serving_time_and_cpu_per_request_of_the_window() {
        // Between the scrapes c served 20 requests (a's 10, 10 from
        // outside) in 60 ms and its pod used 40 ms of cpu: 3 ms serving,
        // 2 ms of cpu a request. No timestamps: no cores, yet the cpu per
        // request needs no clock.
        let scrape = |requests: u32, seconds: f64, cpu: f64| {
            format!(
                "http_requests_total{{function=\"c\",caller=\"a\"}} {requests}\n\
                 http_requests_total{{function=\"c\",caller=\"\"}} {requests}\n\
                 http_request_duration_seconds_sum{{function=\"c\",caller=\"a\"}} {seconds}\n\
                 http_request_duration_seconds_count{{function=\"c\",caller=\"a\"}} {requests}\n\
                 http_request_duration_seconds_sum{{function=\"c\",caller=\"\"}} {seconds}\n\
                 http_request_duration_seconds_count{{function=\"c\",caller=\"\"}} {requests}\n\
                 process_cpu_seconds_total{{function=\"c\"}} {cpu}\n# EOF\n"
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let (before, after) = (dir.path().join("1.txt"), dir.path().join("2.txt"));
        std::fs::write(&before, scrape(5, 0.01, 1.0)).unwrap();
        std::fs::write(&after, scrape(15, 0.04, 1.04)).unwrap();
        let mut g = graph();
        g.weigh(&traffic::prometheus(&[before.clone(), after]).unwrap());
        let c = g.function("c").unwrap();
        assert!(
            c.serve_ms.is_some_and(|ms| (ms - 3.0).abs() < 1e-9),
            "{c:?}"
        );
        assert!(c.cpu_ms.is_some_and(|ms| (ms - 2.0).abs() < 1e-9), "{c:?}");
        assert_eq!(c.usage_cpu, None, "no window, no cores");
        // One scrape: a mean serving time since the pod started (20 ms
        // over 10 requests), no cpu.
        let mut g = graph();
        g.weigh(&traffic::prometheus(&[before]).unwrap());
        let c = g.function("c").unwrap();
        assert!(
            c.serve_ms.is_some_and(|ms| (ms - 2.0).abs() < 1e-9),
            "{c:?}"
        );
        assert_eq!(c.cpu_ms, None);
        assert_eq!(g.function("a").unwrap().serve_ms, None, "not scraped");
    }
}
