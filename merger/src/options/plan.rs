//! `fmerge plan`'s objective, constraints and search ([`PlanFlags`]), each
//! defined once, as a field of a struct deriving clap's `Args`: the field
//! is its flag, its help, its default and its check (its value parser, so
//! that a bad value is a usage error before anything is read), and
//! [`PlanFlags::planning`] hands it to the planner. That function names
//! every field of [`PlanFlags`] and of the planner's [`Constraints`]
//! without `..`: a flag not passed on, or a constraint no flag gives,
//! does not compile. `build --all` plans with the same struct at its
//! defaults.

use super::heading;
use clap::Args;
use clap::builder::TypedValueParser;
use fmerge_plan::model::{Constraints, DEFAULT_HOP_MS, Objective};
use fmerge_plan::search::{DEFAULT_TIME_LIMIT, Method};
use std::time::Duration;

/// `fmerge plan`'s objective, constraints and search.
#[derive(Args, Debug, Clone)]
pub struct PlanFlags {
    /// The memory a merged pod may have: the sum of its members' `limits: memory:` (e.g. 512Mi).
    #[arg(long, value_name = "QTY", value_parser = Checked(quantity), help_heading = heading::PLAN)]
    pub max_memory: Option<f64>,
    /// The memory the whole application may reserve: the `limits: memory:` of
    /// every deployment the plan leaves (merged pods at their own limits,
    /// the callees' deployments it drops not counted) (e.g. 4Gi).
    #[arg(long, value_name = "QTY", value_parser = Checked(quantity), help_heading = heading::PLAN)]
    pub max_total_memory: Option<f64>,
    /// The cores the whole application may reserve: `limits: cpu:`, counted
    /// as --max-total-memory counts memory (e.g. 4, 2500m).
    #[arg(long, value_name = "QTY", value_parser = Checked(quantity), help_heading = heading::PLAN)]
    pub max_total_cpu: Option<f64>,
    /// What the plan is for (memory asks --min-gain-ms or --min-calls-removed).
    #[arg(long, value_name = "WHAT", value_enum, default_value_t = Objective::default(),
          help_heading = heading::PLAN)]
    pub objective: Objective,
    /// The least expected latency the plan must remove, ms per request.
    #[arg(long, value_name = "MS", value_parser = Checked(at_least_zero), help_heading = heading::PLAN)]
    pub min_gain_ms: Option<f64>,
    /// The fewest gateway calls the plan must remove per request.
    #[arg(long, value_name = "N", value_parser = Checked(at_least_zero), help_heading = heading::PLAN)]
    pub min_calls_removed: Option<f64>,
    /// Functions no group may hold two of, comma-separated (repeatable).
    #[arg(long, value_name = "A,B", value_parser = Checked(names), help_heading = heading::PLAN)]
    pub keep_apart: Vec<Names>,
    /// Set a merged pod's limits as if its members never peak together:
    /// each keeps the room it had alone beside what the others use (lower
    /// limits, at the risk of an out-of-memory kill when they do) [default:
    /// limits that hold when every member peaks at once].
    #[arg(long, help_heading = heading::PLAN)]
    pub limits_assume_apart: bool,
    /// The latency of one gateway hop, for the projected gain
    /// [default: fmerge's bench figure, which the report prints].
    #[arg(long, value_name = "MS", value_parser = Checked(latency_ms), help_heading = heading::PLAN)]
    pub hop_ms: Option<f64>,
    /// Which search makes the plan.
    #[arg(long, value_name = "HOW", value_enum, default_value_t = Method::default(),
          help_heading = heading::PLAN)]
    pub search: Method,
    /// The seconds the search may take (and --front's, again): past them,
    /// the best plan found, which the report says is not proven optimal.
    #[arg(long, value_name = "SECONDS", value_parser = Checked(seconds),
          default_value_t = DEFAULT_TIME_LIMIT.as_secs_f64(), help_heading = heading::PLAN)]
    pub time_limit: f64,
}

impl Default for PlanFlags {
    fn default() -> Self {
        super::layer::defaults()
    }
}

/// One `--keep-apart` set: two or more function names.
#[derive(Debug, Clone, PartialEq)]
pub struct Names(pub Vec<String>);

/// What the planner is given: its constraints, where their hop cost comes
/// from (for the report), the search and its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Planning {
    pub constraints: Constraints,
    pub hop_source: &'static str,
    pub method: Method,
    pub time_limit: Duration,
}

impl PlanFlags {
    /// The flags as the planner takes them: every field named on both
    /// sides, so that neither can gain one the other misses.
    pub fn planning(self) -> Planning {
        let PlanFlags {
            max_memory,
            max_total_memory,
            max_total_cpu,
            objective,
            min_gain_ms,
            min_calls_removed,
            keep_apart,
            limits_assume_apart,
            hop_ms: given_hop_ms,
            search,
            time_limit,
        } = self;
        let HopCost { ms, source } = hop_ms(given_hop_ms);
        Planning {
            constraints: Constraints {
                objective,
                hop_ms: ms,
                max_memory,
                max_total_memory,
                max_total_cpu,
                min_gain_ms,
                min_calls_removed,
                keep_apart: keep_apart.into_iter().map(|Names(set)| set).collect(),
                limits_assume_apart,
            },
            hop_source: source,
            method: search,
            // `seconds` let through only what a Duration holds.
            time_limit: Duration::from_secs_f64(time_limit),
        }
    }
}

/// Where [`DEFAULT_HOP_MS`] comes from, as the plan's report says it.
const DEFAULT_SOURCE: &str = "the default, fmerge's bench on its pinned testbed's chain (docs/PERFORMANCE.md, \"The default hop cost\"); measure yours with --metrics or give --hop-ms";

/// The per-hop latency to project gains with, ms, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct HopCost {
    pub ms: f64,
    pub source: &'static str,
}

/// The per-hop latency to project gains with: `--hop-ms`, else
/// [`DEFAULT_HOP_MS`].
pub fn hop_ms(given: Option<f64>) -> HopCost {
    match given {
        Some(ms) => HopCost {
            ms,
            source: "--hop-ms",
        },
        None => HopCost {
            ms: DEFAULT_HOP_MS,
            source: DEFAULT_SOURCE,
        },
    }
}

/// A flag's check as clap's value parser, given the flag's name (`--long`,
/// from clap) to say in its error; the error is `cause\nfix: …`, which
/// clap prints after its own `invalid value '…' for '--flag <V>': `.
#[derive(Clone, Copy)]
pub struct Checked<T>(pub fn(&str, &str) -> Result<T, String>);

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Checked<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let flag = arg
            .and_then(clap::Arg::get_long)
            .map(|long| format!("--{long}"))
            .unwrap_or_default();
        let check = self.0;
        (move |text: &str| check(&flag, text)).parse_ref(cmd, arg, value)
    }
}

/// A memory (bytes) or cpu (cores) quantity, more than zero, read as
/// Kubernetes reads it (`fmerge_ship::quantity`, the one parser).
fn quantity(flag: &str, text: &str) -> Result<f64, String> {
    fmerge_ship::quantity::positive(flag, text).map_err(|e| format!("{e:#}"))
}

/// `text` as a number, or `fix` for a word.
fn number(flag: &str, text: &str, fix: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| format!("{flag} {text} is not a number\nfix: {fix}"))
}

/// A minimum: a number of 0 or more.
fn at_least_zero(flag: &str, text: &str) -> Result<f64, String> {
    const FIX: &str = "give a number of 0 or more";
    match number(flag, text, FIX)? {
        v if v.is_finite() && v >= 0.0 => Ok(v),
        v if v < 0.0 => Err(format!("{flag} {v} is below 0\nfix: {FIX}")),
        v => Err(format!("{flag} {v} is no finite number\nfix: {FIX}")),
    }
}

/// The latency of a gateway hop: milliseconds, more than 0.
fn latency_ms(flag: &str, text: &str) -> Result<f64, String> {
    const FIX: &str = "give the latency of one gateway hop in milliseconds, more than 0";
    match number(flag, text, FIX)? {
        ms if ms.is_finite() && ms > 0.0 => Ok(ms),
        ms => Err(format!("{flag} {ms} is no latency\nfix: {FIX}")),
    }
}

/// A time limit: seconds, more than 0, that a `Duration` holds.
fn seconds(flag: &str, text: &str) -> Result<f64, String> {
    const FIX: &str = "give the seconds the search may take, more than 0";
    match number(flag, text, FIX)? {
        s if s > 0.0 && Duration::try_from_secs_f64(s).is_ok() => Ok(s),
        s => Err(format!("{flag} {s} is no time\nfix: {FIX}")),
    }
}

/// A set of functions, comma-separated: two or more names.
fn names(flag: &str, text: &str) -> Result<Names, String> {
    let names: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    if names.len() < 2 {
        return Err(format!(
            "{flag} {} names fewer than two functions, and one function is never apart from itself\n\
             fix: name two or more, separated by commas: {flag} A,B",
            names.join(",")
        ));
    }
    Ok(Names(names))
}

#[cfg(test)]
mod tests;
