//! An oracle for `fmerge plan` that starts from the graph: it reads the
//! `calls.json` `fmerge graph` writes (as plain JSON, no type of fmerge's),
//! and a `--metrics` scrape when the case has one, with its own code, and
//! builds from `docs/planning.md` alone its own reading of the application:
//! calls per invocation (one unit: per request of the application), entry
//! points (unscraped ones from the code), and each call site's share of the
//! invocations and iterations. Acyclic graphs only ([`topological`]).
//! `oracle_value.rs` values plans on that reading and enumerates them;
//! `ilp.rs` solves the calls objective on it as an integer program.
//! What a case asks for is the planner's own [`Constraints`], the one type
//! that names `fmerge plan`'s flags: the oracle turns it into the command
//! line and reads its values, never the planner's use of them.
//!
//! A part of the oracle tests (`#[path = "support/oracle.rs"] mod oracle;`).

use fmerge_plan::model::Constraints;
use serde_json::Value;
use std::collections::BTreeMap;

pub const MIB: f64 = 1048576.0;

/// The command line that asks `fmerge plan` for `c` (quantities in plain
/// bytes and millicores, which Kubernetes reads too).
pub fn args(c: &Constraints) -> Vec<String> {
    let mut args = vec!["--hop-ms".to_string(), c.hop_ms.to_string()];
    let mut flag = |name: &str, value: String| {
        args.push(name.to_string());
        args.push(value);
    };
    flag("--objective", c.objective.name());
    if let Some(m) = c.max_memory {
        flag("--max-memory", format!("{}", m.round()));
    }
    if let Some(m) = c.max_total_memory {
        flag("--max-total-memory", format!("{}", m.round()));
    }
    if let Some(c) = c.max_total_cpu {
        flag("--max-total-cpu", format!("{}m", (c * 1000.0).round()));
    }
    if let Some(g) = c.min_gain_ms {
        flag("--min-gain-ms", g.to_string());
    }
    if let Some(m) = c.min_calls_removed {
        flag("--min-calls-removed", m.to_string());
    }
    for set in &c.keep_apart {
        flag("--keep-apart", set.join(","));
    }
    args
}

/// One call site of a function's rounds: how often it is made and how many
/// times one after another when it is.
#[derive(Debug, Clone)]
pub struct Site {
    pub callee: usize,
    /// The share of the caller's invocations it is made on.
    pub chance: f64,
    /// Calls one after another when made (a looped site's iterations).
    pub times: f64,
}

/// The oracle's own reading of an application.
#[derive(Debug, Clone)]
pub struct Reading {
    pub names: Vec<String>,
    /// Bytes of `limits.memory`, cores of `limits.cpu`, and the requests.
    pub memory: Vec<Option<f64>>,
    pub cpu: Vec<Option<f64>>,
    pub requests_memory: Vec<Option<f64>>,
    pub requests_cpu: Vec<Option<f64>>,
    /// No group may hold it.
    pub left_out: Vec<bool>,
    /// Pairs no group may hold both of (conflicts and `--keep-apart`).
    pub apart: Vec<(usize, usize)>,
    /// Known callees, with calls per invocation.
    pub calls: Vec<Vec<(usize, f64)>>,
    /// Each function's rounds, as sites; calls the code places nowhere in a
    /// round of their own, one after another.
    pub rounds: Vec<Vec<Vec<Site>>>,
    /// Measured cost of a gateway call, ms.
    pub hop_ms: BTreeMap<(usize, usize), f64>,
    /// Each function's outside requests as a share of the application's.
    pub share: Vec<f64>,
    /// Callers before callees.
    pub order: Vec<usize>,
    pub flags: Constraints,
}

/// A scrape's figures: outside requests per function, calls per caller and
/// callee, and the functions it has a sample of.
#[derive(Debug, Default)]
struct Scrape {
    external: BTreeMap<String, f64>,
    calls: BTreeMap<(String, String), f64>,
    covered: Vec<String>,
}

/// The `http_requests_total{function=…,caller=…} N` lines of a scrape.
fn scrape(text: &str) -> Scrape {
    let mut s = Scrape::default();
    for line in text
        .lines()
        .filter(|l| l.starts_with("http_requests_total{"))
    {
        let (labels, count) = line["http_requests_total{".len()..]
            .split_once('}')
            .unwrap();
        let count: f64 = count.trim().parse().unwrap();
        let label = |key: &str| {
            labels.split(',').find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
            })
        };
        let function = label("function").unwrap();
        s.covered.push(function.clone());
        match label("caller").unwrap_or_default().as_str() {
            "" | "external" | "unverified" => *s.external.entry(function).or_default() += count,
            "other" => panic!("the oracle does not spread `other` callers"),
            caller => *s.calls.entry((caller.into(), function)).or_default() += count,
        }
    }
    s
}

/// A call of the graph: caller, callee, sites in the code, calls seen
/// (when known), measured cost.
struct Call {
    from: usize,
    to: usize,
    sites: f64,
    seen: Option<f64>,
    hop_ms: Option<f64>,
}

/// Reads `calls.json` (and the scrape given to `fmerge plan --metrics`).
pub fn read(graph: &str, metrics: Option<&str>, flags: &Constraints) -> Reading {
    let g: Value = serde_json::from_str(graph).unwrap();
    let functions = g["functions"].as_array().unwrap();
    let names: Vec<String> = functions
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    let n = names.len();
    let index = |name: &str| names.iter().position(|x| x == name);
    let field =
        |key: &str| -> Vec<Option<f64>> { functions.iter().map(|f| f[key].as_f64()).collect() };
    let scraped = metrics.map(scrape);
    let measured = scraped.is_some() || !g["traffic"].is_null();
    // Outside requests where known: from the scrape (a function it has no
    // sample of is unknown), else from the graph.
    let external: Vec<Option<f64>> = match &scraped {
        Some(s) => names
            .iter()
            .map(|x| {
                s.covered
                    .contains(x)
                    .then(|| s.external.get(x).copied().unwrap_or(0.0))
            })
            .collect(),
        None => field("external"),
    };
    let mut edges: Vec<Call> = Vec::new();
    for e in g["edges"].as_array().unwrap() {
        let (Some(from), Some(to)) = (
            index(e["from"].as_str().unwrap()),
            e["to"].as_str().and_then(index),
        ) else {
            continue; // an unknown callee, or one outside the stack
        };
        let seen = match &scraped {
            Some(s) => s.covered.contains(&names[to]).then(|| {
                s.calls
                    .get(&(names[from].clone(), names[to].clone()))
                    .copied()
                    .unwrap_or(0.0)
            }),
            None => e["calls"].as_f64(),
        };
        // A scrape brings the calls' measured costs too (this one reads
        // none): the graph's are replaced.
        let hop_ms = e["hop_ms"].as_f64().filter(|_| scraped.is_none());
        edges.push(Call {
            from,
            to,
            sites: e["sites"].as_f64().unwrap_or(0.0),
            seen,
            hop_ms,
        });
    }
    if let Some(s) = &scraped {
        // Calls only the traffic shows: an edge of no site.
        for ((from, to), &count) in &s.calls {
            if let (Some(from), Some(to)) = (index(from), index(to))
                && !edges.iter().any(|c| c.from == from && c.to == to)
            {
                edges.push(Call {
                    from,
                    to,
                    sites: 0.0,
                    seen: Some(count),
                    hop_ms: None,
                });
            }
        }
    }
    // A function's requests: from outside and from every call seen into it.
    let mut runs = vec![0.0; n];
    if measured {
        for i in 0..n {
            runs[i] = external[i].unwrap_or(0.0)
                + edges
                    .iter()
                    .filter(|c| c.to == i)
                    .filter_map(|c| c.seen)
                    .sum::<f64>();
        }
    }
    let mut calls: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    let mut hop_ms = BTreeMap::new();
    for c in &edges {
        let per_run = match c.seen {
            Some(seen) if measured && runs[c.from] > 0.0 => seen / runs[c.from],
            _ => c.sites,
        };
        match calls[c.from].iter_mut().find(|(v, _)| *v == c.to) {
            Some(known) => known.1 += per_run,
            None => calls[c.from].push((c.to, per_run)),
        }
        if let Some(ms) = c.hop_ms {
            hop_ms.insert((c.from, c.to), ms);
        }
    }
    let share = entry_shares(&names, &external, &calls, measured);
    let rounds = (0..n)
        .map(|u| sites(&names, &functions[u]["rounds"], &calls[u]))
        .collect();
    let mut apart = Vec::new();
    for c in g["conflicts"].as_array().into_iter().flatten() {
        if let (Some(a), Some(b)) = (
            index(c["a"].as_str().unwrap()),
            index(c["b"].as_str().unwrap()),
        ) {
            apart.push((a, b));
        }
    }
    for set in &flags.keep_apart {
        for a in set {
            for b in set {
                apart.push((index(a).unwrap(), index(b).unwrap()));
            }
        }
    }
    apart.retain(|(a, b)| a != b);
    Reading {
        memory: field("memory_bytes"),
        cpu: field("cpu"),
        requests_memory: field("requests_memory_bytes"),
        requests_cpu: field("requests_cpu"),
        left_out: functions.iter().map(|f| !f["left_out"].is_null()).collect(),
        order: topological(&calls),
        names,
        apart,
        calls,
        rounds,
        hop_ms,
        share,
        flags: flags.clone(),
    }
}

/// Callers before callees. The oracle reads acyclic graphs only: how the
/// model prices a cycle is a simplification of the requests it sees, which
/// the oracle of simulated requests checks instead
/// (`merger/src/plan/tests/simulated.rs`), not a rule to copy here.
fn topological(calls: &[Vec<(usize, f64)>]) -> Vec<usize> {
    let n = calls.len();
    let mut callers = vec![0; n];
    for list in calls {
        for &(v, _) in list {
            callers[v] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| callers[i] == 0).collect();
    let mut order = Vec::new();
    while let Some(u) = ready.pop() {
        order.push(u);
        for &(v, _) in &calls[u] {
            callers[v] -= 1;
            if callers[v] == 0 {
                ready.push(v);
            }
        }
    }
    assert_eq!(order.len(), n, "the oracle reads acyclic graphs only");
    order
}

/// Each function's share of the application's requests: measured where the
/// traffic has its figures; where it has none (or there is no traffic), a
/// function nothing calls is an entry point with the measured
/// entry points' mean (one when none is measured). The shares add up to 1.
fn entry_shares(
    names: &[String],
    external: &[Option<f64>],
    calls: &[Vec<(usize, f64)>],
    measured: bool,
) -> Vec<f64> {
    let known: Vec<f64> = external
        .iter()
        .flatten()
        .copied()
        .filter(|&x| measured && x > 0.0)
        .collect();
    let mean = if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    };
    let requests: Vec<f64> = (0..names.len())
        .map(|i| match external[i].filter(|_| measured) {
            Some(x) => x,
            None if calls.iter().flatten().any(|&(v, _)| v == i) => 0.0,
            None => mean,
        })
        .collect();
    let total: f64 = requests.iter().sum();
    requests
        .iter()
        .map(|r| if total > 0.0 { r / total } else { 0.0 })
        .collect()
}

/// One function's rounds as sites, from its calls per invocation: a callee's
/// calls are shared among its sites; while fewer than the sites, each site
/// is made on that share of the invocations; past one each, a site made
/// once is made once and the looped sites take the rest, one after another;
/// without a looped site the surplus runs at once. A callee placed nowhere
/// gets a round of its own, its calls one after another.
fn sites(names: &[String], rounds: &Value, calls: &[(usize, f64)]) -> Vec<Vec<Site>> {
    let index = |name: &Value| names.iter().position(|x| Some(x.as_str()) == name.as_str());
    let mut placed: Vec<Vec<(usize, bool)>> = Vec::new();
    for round in rounds.as_array().into_iter().flatten() {
        let mut sites = Vec::new();
        for (key, looped) in [("calls", false), ("looped", true)] {
            for name in round[key].as_array().into_iter().flatten() {
                if let Some(v) = index(name).filter(|v| calls.iter().any(|c| c.0 == *v)) {
                    sites.push((v, looped));
                }
            }
        }
        if !sites.is_empty() {
            placed.push(sites);
        }
    }
    for &(v, _) in calls {
        if !placed.iter().flatten().any(|s| s.0 == v) {
            placed.push(vec![(v, true)]);
        }
    }
    placed
        .iter()
        .map(|round| {
            round
                .iter()
                .map(|&(v, looped)| {
                    let m = calls.iter().find(|c| c.0 == v).unwrap().1;
                    let of_v: Vec<bool> = placed
                        .iter()
                        .flatten()
                        .filter(|s| s.0 == v)
                        .map(|s| s.1)
                        .collect();
                    let (all, loops) = (
                        of_v.len() as f64,
                        of_v.iter().filter(|&&l| l).count() as f64,
                    );
                    let (chance, times) = if m <= all {
                        (m / all, 1.0)
                    } else if looped {
                        (1.0, (m - (all - loops)) / loops)
                    } else {
                        (1.0, 1.0)
                    };
                    Site {
                        callee: v,
                        chance,
                        times,
                    }
                })
                .collect()
        })
        .collect()
}

impl Reading {
    pub fn n(&self) -> usize {
        self.names.len()
    }

    pub fn index(&self, name: &str) -> usize {
        self.names
            .iter()
            .position(|x| x == name)
            .unwrap_or_else(|| panic!("no {name}"))
    }

    /// A gateway call's cost, ms: measured, else `--hop-ms`.
    pub fn hop(&self, u: usize, v: usize) -> f64 {
        self.hop_ms
            .get(&(u, v))
            .copied()
            .unwrap_or(self.flags.hop_ms)
    }
}
