//! Rates per call path from a call log whose records name their parent
//! request: how often a function calls each callee when a given caller
//! called it, where the scrape's figures give only its average over every
//! caller. `s` calls `t` on the requests `B` makes of it and never on
//! `A`'s: the average prices half a call of `t` on both paths.

use super::{CallLog, Graph};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `from`'s calls of `to` per call `via` makes of `from`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathRate {
    pub via: String,
    pub from: String,
    pub to: String,
    pub calls: f64,
}

/// The rates per call path `log` shows: for each caller `via` of each
/// function `from` whose records name their parent, every callee of
/// `from` the log shows, at its calls on the requests `via` made of it
/// over `via`'s calls of `from` (0 where it made none).
pub fn rates(log: &CallLog) -> Vec<PathRate> {
    let caller_of: BTreeMap<&str, &str> = log
        .calls
        .iter()
        .map(|r| (r.request.as_str(), r.caller.as_str()))
        .collect();
    let parented: BTreeSet<&str> = log
        .calls
        .iter()
        .filter(|r| r.parented)
        .map(|r| r.caller.as_str())
        .collect();
    let mut pairs: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    let mut callees: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut via: BTreeMap<(&str, &str, &str), f64> = BTreeMap::new();
    for r in &log.calls {
        *pairs.entry((&r.caller, &r.callee)).or_default() += 1.0;
        callees.entry(&r.caller).or_default().insert(&r.callee);
        let parent = r.parent.as_deref().and_then(|p| caller_of.get(p));
        if let Some(&v) = parent {
            *via.entry((v, &r.caller, &r.callee)).or_default() += 1.0;
        }
    }
    let mut out = Vec::new();
    for (&(v, from), &made) in &pairs {
        if !parented.contains(from) {
            continue;
        }
        for &to in callees.get(from).into_iter().flatten() {
            let calls = via.get(&(v, from, to)).copied().unwrap_or(0.0);
            out.push(PathRate {
                via: v.to_string(),
                from: from.to_string(),
                to: to.to_string(),
                calls: calls / made,
            });
        }
    }
    out
}

impl Graph {
    /// Takes the rates per call path of `log` ([`rates`]); notes the
    /// paths whose rate differs from the function's average over all its
    /// callers by more than a tenth of a call.
    pub fn paths_from(&mut self, log: &CallLog) -> Vec<String> {
        let rates = rates(log);
        if rates.is_empty() {
            return Vec::new();
        }
        let mut notes = Vec::new();
        let mut all: BTreeMap<(&str, &str), (f64, f64)> = BTreeMap::new();
        for r in &rates {
            let made = log
                .calls
                .iter()
                .filter(|c| c.caller == r.via && c.callee == r.from)
                .count() as f64;
            let e = all.entry((&r.from, &r.to)).or_default();
            e.0 += r.calls * made;
            e.1 += made;
        }
        for r in &rates {
            let (calls, made) = all[&(r.from.as_str(), r.to.as_str())];
            let mean = calls / made;
            if (r.calls - mean).abs() > 0.1 {
                notes.push(format!(
                    "{}: {} calls of {} per call from {}, against {mean:.2} on average over its callers (rates per call path, {})",
                    r.from, r.calls, r.to, r.via, log.source
                ));
            }
        }
        self.paths = rates;
        self.paths_source = Some(log.source.clone());
        notes
    }
}
