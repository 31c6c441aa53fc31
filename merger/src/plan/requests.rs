//! The traffic's figures in the model: each call's calls per invocation of
//! its caller and the calls seen (a cycle is cut at its call back), and each
//! function's share of the application's requests, measured where the
//! traffic has them and taken from the code where it has none.

use super::Graph;
use super::model::{CallEdge, CallsTo, Model};

/// Each known call's calls per invocation, calls seen and measured cost
/// into `m`: from the traffic when it has both the caller's and the call's
/// figures; from the code (a call per site) when either is unknown.
pub(super) fn calls(graph: &Graph, m: &mut Model) {
    let n = m.n();
    let measured = graph.traffic.is_some();
    // Calls per invocation: observed calls over the caller's own requests.
    let mut runs = vec![0.0; n];
    if measured {
        for (i, f) in graph.functions.iter().enumerate() {
            runs[i] += f.external.unwrap_or(0.0);
            // In requests until [`entry_points`] makes them shares: the
            // cycle cut starts from them and weighs the calls back by them.
            m.external[i] = f.external.unwrap_or(0.0);
        }
        for e in &graph.edges {
            if let Some(to) = e.to.as_deref().and_then(|t| m.index(t)) {
                runs[to] += e.calls.unwrap_or(0.0);
            }
        }
    }
    for e in &graph.edges {
        let (Some(from), Some(to)) = (m.index(&e.from), e.to.as_deref().and_then(|t| m.index(t)))
        else {
            continue; // unknown callees and functions outside the stack stay remote
        };
        // From the traffic when the caller ran and the call was counted;
        // from the code (a call per site) otherwise: calls counted from a
        // caller that never ran say nothing of how often it makes them.
        let per_call = match e.calls {
            Some(calls) if measured && runs[from] > 0.0 => calls / runs[from],
            _ => e.sites as f64,
        };
        m.calls[from].push(CallsTo {
            callee: to,
            calls: per_call,
        });
        if let (true, Some(calls)) = (measured, e.calls) {
            m.seen.insert(CallEdge { from, to }, calls);
        }
        if let Some(ms) = e.hop_ms {
            m.measured_hop_ms.insert(CallEdge { from, to }, ms);
        }
    }
    // Rates per call path, where the call log names parent requests: each
    // path the graph's calls hold, with its callees (a callee not listed:
    // none on that path).
    for p in &graph.paths {
        let (Some(via), Some(from), Some(to)) = (m.index(&p.via), m.index(&p.from), m.index(&p.to))
        else {
            continue;
        };
        let known = |u: usize, v: usize| m.calls[u].iter().any(|c| c.callee == v);
        if known(via, from) && known(from, to) {
            let path = m
                .via
                .entry(CallEdge {
                    from: via,
                    to: from,
                })
                .or_default();
            path.push(CallsTo {
                callee: to,
                calls: p.calls,
            });
        }
    }
    if !m.via.is_empty() {
        m.paths = graph.paths_source.clone();
    }
}

/// Each function's requests from outside, as its share of the
/// application's: the one unit of every figure per request. Measured where
/// the traffic has the function's figures; from the code where it has none
/// (or there is no traffic): after the cycle cut, a function no other calls
/// is an entry point (a function that calls itself, or that only its own
/// callees call back, too) with as many requests as the measured entry
/// points have on average, or one each when none is measured.
pub(super) fn entry_points(graph: &Graph, m: &mut Model) {
    m.measured = graph.traffic.is_some();
    let measured: Vec<Option<f64>> = graph
        .functions
        .iter()
        .map(|f| f.external.filter(|_| m.measured))
        .collect();
    let known: Vec<f64> = measured
        .iter()
        .flatten()
        .copied()
        .filter(|&x| x > 0.0)
        .collect();
    let mean = if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    };
    m.assumed.clear();
    for (i, &seen) in measured.iter().enumerate() {
        let called = m.calls.iter().any(|c| c.iter().any(|c| c.callee == i));
        m.external[i] = match seen {
            Some(x) => x,
            None if called => 0.0,
            None => {
                if m.measured {
                    m.assumed.push(i);
                }
                mean
            }
        };
    }
    let total: f64 = m.external.iter().sum();
    if total > 0.0 {
        for x in &mut m.external {
            *x /= total;
        }
    }
}
