//! `--call-log FILE`: the order of each function's calls as the runtime
//! recorded them (`FMERGE_CALL_LOG`, read from `GET :<metrics_port>/calls`),
//! the fallback for what the source scan ([`super::rounds`]) cannot place.
//!
//! A record is one `invoke` as its caller saw it: `<request> <caller>
//! <callee> <start µs> <end µs>`, the request naming the handler request
//! that made it, and, as a sixth column where the runtime writes it, that
//! request's parent (the request whose call started it; `-` from outside),
//! from which the planner takes rates per call path ([`paths`]). Per request, calls whose intervals overlap share a round
//! and a call that starts once every call of the round has ended starts the
//! next ([`rounds`]). A function with callees its code does not place takes
//! its rounds from its requests, as an upper bound over them ([`bound`]):
//! what the planner takes from the code is an upper bound too. A function
//! whose code places every call keeps the code's rounds, and requests that
//! do not fit them are noted.

use super::{Graph, Round, function_of};
use anyhow::{Context as _, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;

/// The requests of a call log, per caller: each request's calls in rounds.
#[derive(Debug, Default)]
pub struct CallLog {
    /// The file, for notes.
    pub source: String,
    pub requests: BTreeMap<String, Vec<Vec<Round>>>,
    /// Every call, with the request that made it and that request's parent
    /// where the record names one ([`paths`]).
    pub calls: Vec<Record>,
}

/// One call of the log: the request that made it, its caller and callee,
/// and the parent request (the one whose call started `request`; `None`
/// for a request from outside, or a record of five columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub request: String,
    pub caller: String,
    pub callee: String,
    pub parent: Option<String>,
    /// Whether the record has the sixth column at all.
    pub parented: bool,
}

/// The columns, as the errors name them.
const COLUMNS: &str = "<request> <caller> <callee> <start µs> <end µs> [<parent request>|-]";

/// Reads a call log: one or more `/calls` replies, appended.
pub fn read(path: &Path) -> Result<CallLog> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the call log {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// One call of a request: when it started and ended, and the callee (in
/// that order, which sorts the calls by their start).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub callee: String,
}

/// A call log's text; `source` names it in errors.
pub fn parse(text: &str, source: &str) -> Result<CallLog> {
    let mut calls: BTreeMap<(&str, &str), Vec<Span>> = BTreeMap::new();
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (parent, parented) = match fields.get(5) {
            Some(&"-") => (None, true),
            Some(p) => (Some(p.to_string()), true),
            None => (None, false),
        };
        let five = fields.get(..5).filter(|_| fields.len() <= 6).unwrap_or(&[]);
        let record = match *five {
            [request, caller, callee, start, end] => start
                .parse::<u64>()
                .ok()
                .zip(end.parse::<u64>().ok())
                .filter(|(s, e)| s <= e)
                .map(|(start, end)| {
                    let callee = function_of(callee).to_string();
                    (request, caller, Span { start, end, callee })
                }),
            _ => None,
        };
        let Some((request, caller, span)) = record else {
            bail!(
                "{source}:{}: not a call record: {line:?}; a line is `{COLUMNS}` (whole microseconds, the end not before the start), \
                 as `GET /calls` on a function's metrics port serves them with FMERGE_CALL_LOG set\nfix: correct or delete the line",
                i + 1
            );
        };
        records.push(Record {
            request: request.to_string(),
            caller: caller.to_string(),
            callee: span.callee.clone(),
            parent,
            parented,
        });
        calls.entry((caller, request)).or_default().push(span);
    }
    let mut log = CallLog {
        source: source.to_string(),
        calls: records,
        ..CallLog::default()
    };
    for ((caller, _), spans) in calls {
        log.requests
            .entry(caller.to_string())
            .or_default()
            .push(rounds(spans));
    }
    Ok(log)
}

/// One request's calls in rounds: a call that starts before every call of
/// the current round has ended runs with them; one that starts after starts
/// the next round. Callees sorted in each round.
pub fn rounds(mut spans: Vec<Span>) -> Vec<Round> {
    spans.sort();
    let mut out: Vec<Round> = Vec::new();
    let mut ends = 0;
    for Span { start, end, callee } in spans {
        match out.last_mut() {
            Some(round) if start < ends => {
                round.calls.push(callee);
                ends = ends.max(end);
            }
            _ => {
                out.push(Round {
                    calls: vec![callee],
                    looped: Vec::new(),
                });
                ends = end;
            }
        }
    }
    for r in &mut out {
        r.calls.sort();
    }
    out
}

/// An upper bound of `requests`' rounds: the k-th round holds each callee
/// as often as the most any request's k-th round did.
pub fn bound(requests: &[Vec<Round>]) -> Vec<Round> {
    let longest = requests.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .map(|k| {
            let mut most: BTreeMap<&str, usize> = BTreeMap::new();
            for r in requests.iter().filter_map(|r| r.get(k)) {
                for (callee, n) in counts(r.calls.iter()) {
                    let m = most.entry(callee).or_default();
                    *m = (*m).max(n);
                }
            }
            Round {
                calls: most
                    .into_iter()
                    .flat_map(|(c, n)| std::iter::repeat_n(c.to_string(), n))
                    .collect(),
                looped: Vec::new(),
            }
        })
        .collect()
}

fn counts<'a>(callees: impl Iterator<Item = &'a String>) -> BTreeMap<&'a str, usize> {
    let mut out = BTreeMap::new();
    for c in callees {
        *out.entry(c.as_str()).or_default() += 1;
    }
    out
}

/// Whether a request's rounds fit the code's: each of its rounds within
/// one of the code's, in order (a round of the code's with looped sites
/// may take several, one per iteration; a code's round none takes is a
/// branch not run).
pub fn fits(traced: &[Round], code: &[Round]) -> bool {
    let mut j = 0;
    for t in traced {
        let need = counts(t.calls.iter());
        let within = |r: &Round| {
            let have = counts(r.calls.iter().chain(&r.looped));
            need.iter()
                .all(|(c, n)| have.get(c).is_some_and(|h| h >= n))
        };
        match (j..code.len()).find(|&k| within(&code[k])) {
            Some(k) if code[k].looped.is_empty() => j = k + 1,
            Some(k) => j = k,
            None => return false,
        }
    }
    true
}

/// Rounds as text: `[a, b] then [c]`.
pub fn show(rounds: &[Round]) -> String {
    rounds
        .iter()
        .map(|r| {
            let looped = r.looped.iter().map(|c| format!("{c} (looped)"));
            let all: Vec<String> = r.calls.iter().cloned().chain(looped).collect();
            format!("[{}]", all.join(", "))
        })
        .collect::<Vec<_>>()
        .join(" then ")
}

impl Graph {
    /// Takes the rounds of each function whose code leaves callees
    /// unplaced from `log`, and notes the functions whose requests in `log`
    /// do not fit the rounds of their code (which stay).
    pub fn order_from(&mut self, log: &CallLog) -> Vec<String> {
        let mut notes = Vec::new();
        for i in 0..self.functions.len() {
            let name = self.functions[i].name.clone();
            let Some(requests) = log.requests.get(&name) else {
                continue;
            };
            let unplaced = self.unplaced(&name).join(", ");
            let f = &mut self.functions[i];
            if !unplaced.is_empty() {
                f.rounds = bound(requests);
                f.traced = Some(requests.len());
                notes.push(format!(
                    "{name}: its code does not show when it calls {unplaced}; its calls are taken in the rounds of its {} requests in {} (the most calls each round saw): {}",
                    requests.len(),
                    log.source,
                    show(&f.rounds)
                ));
                continue;
            }
            if f.traced.is_some() {
                continue; // rounds from a call log already
            }
            let misfits: Vec<&Vec<Round>> =
                requests.iter().filter(|r| !fits(r, &f.rounds)).collect();
            if let Some(example) = misfits.first() {
                notes.push(format!(
                    "{name}: {} of its {} requests in {} do not fit the rounds its code shows ({}), e.g. {}; the plan keeps the code's (a merged callee that answers before the next call starts runs the calls one after another; else check the code)",
                    misfits.len(),
                    requests.len(),
                    log.source,
                    show(&f.rounds),
                    show(example)
                ));
            }
        }
        notes
    }
}

pub mod paths;
#[cfg(test)]
mod tests;
