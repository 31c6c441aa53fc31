//! Prometheus metrics per function, served on their own port (see
//! `metrics_port`).
//!
//! The names are of-watchdog's (`http_requests_total`,
//! `http_request_duration_seconds`, `http_requests_in_flight`) with a
//! `function` label, and a `caller` label on the first two. A merged callee's
//! in-process calls are counted under its own name, exactly as its HTTP
//! requests were before the merge, so per-function counts survive merging.
//! `fmerge_invoke_duration_seconds` is the caller's side: what each
//! `invoke` cost, over the gateway or in-process;
//! `fmerge_handler_duration_seconds` what of a request served over HTTP its
//! handler ran (what a merged caller's in-process call keeps of it: the
//! planner's measure of a callee's own time). The process's own
//! resident memory and CPU time are `process_metrics`'.

use hyper::{Method, StatusCode};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::OnceLock;
use std::time::Duration;

/// Go's `prometheus.DefBuckets`, what of-watchdog uses.
const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Labels {
    function: &'static str,
    caller: &'static str,
    code: u16,
    method: &'static str,
}

/// From 100 µs: an in-process call takes microseconds, a gateway hop
/// milliseconds.
const INVOKE_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// How an `invoke` reached its callee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    Gateway,
    InProcess,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InvokeLabels {
    caller: &'static str,
    callee: &'static str,
    transport: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FunctionLabel {
    function: &'static str,
}

/// Whose handler ran, for whom.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandlerLabels {
    function: &'static str,
    caller: &'static str,
}

struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    durations: Family<Labels, Histogram>,
    in_flight: Family<FunctionLabel, Gauge>,
    invokes: Family<InvokeLabels, Histogram>,
    handlers: Family<HandlerLabels, Histogram>,
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::default();
        let requests = Family::<Labels, Counter>::default();
        let durations = Family::<Labels, Histogram>::new_with_constructor(
            (|| Histogram::new(BUCKETS)) as fn() -> Histogram,
        );
        let in_flight = Family::<FunctionLabel, Gauge>::default();
        let invokes = Family::<InvokeLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(INVOKE_BUCKETS)) as fn() -> Histogram,
        );
        let handlers = Family::<HandlerLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(INVOKE_BUCKETS)) as fn() -> Histogram,
        );
        registry.register(
            "http_requests",
            "Requests handled, per function (in-process calls of a merged callee included) and caller",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Seconds spent serving requests, per function and caller",
            durations.clone(),
        );
        registry.register(
            "http_requests_in_flight",
            "Requests being handled now, per function",
            in_flight.clone(),
        );
        registry.register(
            "fmerge_invoke_duration_seconds",
            "Seconds an invoke took as its caller saw it (the hop's cost), per caller, callee and transport (gateway or in-process)",
            invokes.clone(),
        );
        registry.register(
            "fmerge_handler_duration_seconds",
            "Seconds the handler ran per request served over HTTP (on its handler thread, from its start to its reply: what an in-process call keeps), per function and caller",
            handlers.clone(),
        );
        registry.register_collector(Box::new(Gauges));
        registry.register_collector(Box::new(crate::process_metrics::ProcessCollector));
        Metrics {
            registry,
            requests,
            durations,
            in_flight,
            invokes,
            handlers,
        }
    })
}

/// Names the functions a process serves in its metrics from the start
/// (`http_requests_in_flight{function} 0`): an idle pod's process figures
/// then belong to its function, which is how `fmerge plan` tells whose
/// usage a scrape of several pods holds.
pub(crate) fn serving(functions: &[&'static str]) {
    for &function in functions {
        let _ = metrics()
            .in_flight
            .get_or_create(&FunctionLabel { function });
    }
}

/// Counts a request of `function` in flight until dropped.
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// How many label sets of each kind a thread keeps at hand (see [`LOCAL`]);
/// past them it looks up the family each time.
const LOCAL_SETS: usize = 64;

/// The metrics of label sets a thread has used, found by the identity of
/// their names (static strings from a handful of places): a family lookup
/// hashes every label under a lock, and it happens for every request and
/// every in-process call. Clones of a metric share its value, and nothing
/// removes metrics from a family, so these never go stale.
#[derive(Default)]
struct Local {
    requests: Vec<(Labels, (Counter, Histogram))>,
    invokes: Vec<(InvokeLabels, Histogram)>,
    handlers: Vec<(HandlerLabels, Histogram)>,
    in_flight: Vec<(&'static str, Gauge)>,
}

thread_local! {
    static LOCAL: std::cell::RefCell<Local> = std::cell::RefCell::default();
}

/// `f` with this thread's [`Local`], or with a throwaway one while the
/// thread is being torn down.
fn with_local<R>(f: impl FnOnce(&mut Local) -> R) -> R {
    let mut f = Some(f);
    LOCAL
        .try_with(|local| (f.take().expect("once"))(&mut local.borrow_mut()))
        .unwrap_or_else(|_| (f.take().expect("once"))(&mut Local::default()))
}

/// The metric `sets` holds for the label set `is` picks, else the one
/// `make` looks up in its family, kept while `sets` has room; `f` gets it.
fn at_hand<L, M, R>(
    sets: &mut Vec<(L, M)>,
    is: impl Fn(&L) -> bool,
    make: impl FnOnce() -> (L, M),
    f: impl FnOnce(&M) -> R,
) -> R {
    if let Some((_, metric)) = sets.iter().find(|(labels, _)| is(labels)) {
        return f(metric);
    }
    let (labels, metric) = make();
    let r = f(&metric);
    if sets.len() < LOCAL_SETS {
        sets.push((labels, metric));
    }
    r
}

/// The same static string (address and length), not merely equal text.
fn same(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b)
}

pub(crate) fn started(function: &'static str) -> InFlight {
    let gauge = with_local(|local| {
        at_hand(
            &mut local.in_flight,
            |f| same(f, function),
            || {
                let family = &metrics().in_flight;
                (
                    function,
                    family.get_or_create(&FunctionLabel { function }).clone(),
                )
            },
            Gauge::clone,
        )
    });
    gauge.inc();
    InFlight(gauge)
}

/// Records one finished request of `function` on behalf of `caller`.
pub(crate) fn finished(
    function: &'static str,
    caller: &'static str,
    method: &Method,
    status: StatusCode,
    elapsed: Duration,
) {
    let labels = Labels {
        function,
        caller,
        code: status.as_u16(),
        method: method_label(method),
    };
    let seconds = elapsed.as_secs_f64();
    with_local(|local| {
        at_hand(
            &mut local.requests,
            |l| {
                l.code == labels.code
                    && same(l.function, function)
                    && same(l.caller, caller)
                    && same(l.method, labels.method)
            },
            || {
                let m = metrics();
                let counter = m.requests.get_or_create(&labels).clone();
                let histogram = m.durations.get_or_create(&labels).clone();
                (labels.clone(), (counter, histogram))
            },
            |(counter, histogram)| {
                counter.inc();
                histogram.observe(seconds);
            },
        )
    });
}

/// Records how long `function`'s handler ran for one request of `caller`
/// served over HTTP.
pub(crate) fn handled(function: &'static str, caller: &'static str, elapsed: Duration) {
    let seconds = elapsed.as_secs_f64();
    with_local(|local| {
        at_hand(
            &mut local.handlers,
            |l| same(l.function, function) && same(l.caller, caller),
            || {
                let labels = HandlerLabels { function, caller };
                let histogram = metrics().handlers.get_or_create(&labels).clone();
                (labels, histogram)
            },
            |histogram| histogram.observe(seconds),
        )
    });
}

/// Records one `invoke` of `callee` by `caller`, answered or not, as the
/// caller saw it. Callee names come from the code but may be computed, so
/// they are bounded like callers.
pub(crate) fn invoked(caller: &'static str, callee: &str, transport: Transport, elapsed: Duration) {
    let transport = match transport {
        Transport::Gateway => "gateway",
        Transport::InProcess => "in-process",
    };
    let seconds = elapsed.as_secs_f64();
    with_local(|local| {
        at_hand(
            &mut local.invokes,
            // By text: a computed callee name is not a static string. (A
            // callee counted as `other` is kept too, and found by no name
            // but `other`, whose label it is anyway.)
            |l| same(l.caller, caller) && same(l.transport, transport) && l.callee == callee,
            || {
                let labels = InvokeLabels {
                    caller,
                    callee: callee_label(callee),
                    transport,
                };
                let histogram = metrics().invokes.get_or_create(&labels).clone();
                (labels, histogram)
            },
            |histogram| histogram.observe(seconds),
        )
    });
}

/// `name` as a label value: itself for the first [`MAX_CALLERS`] distinct
/// names `seen` gets, [`OTHER`] after, so that no one can grow the metrics
/// without bound. Each name is kept for the process's life (as its metrics
/// are), so labels borrow it instead of allocating per request.
pub(crate) fn bounded(seen: &std::sync::Mutex<Vec<&'static str>>, name: &str) -> &'static str {
    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = seen.iter().find(|s| **s == name) {
        return known;
    }
    if seen.len() >= MAX_CALLERS {
        return OTHER;
    }
    let kept: &'static str = Box::leak(name.into());
    seen.push(kept);
    kept
}

/// Distinct callers counted under their own name.
pub const MAX_CALLERS: usize = 64;
/// The caller label beyond [`MAX_CALLERS`].
pub const OTHER: &str = "other";

/// `callee` as a label: itself for the first [`MAX_CALLERS`]
/// names, [`OTHER`] after.
pub(crate) fn callee_label(callee: &str) -> &'static str {
    static CALLEES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    bounded(&CALLEES, callee)
}

/// The method label: one of HTTP's standard methods, or `unknown` (as
/// client_golang does), so that a client sending made-up methods cannot
/// grow the metrics.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "get",
        Method::HEAD => "head",
        Method::POST => "post",
        Method::PUT => "put",
        Method::DELETE => "delete",
        Method::CONNECT => "connect",
        Method::OPTIONS => "options",
        Method::TRACE => "trace",
        Method::PATCH => "patch",
        _ => "unknown",
    }
}

/// The exposition text (OpenMetrics).
pub(crate) fn encode() -> String {
    let mut text = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &metrics().registry) {
        text = format!("# cannot encode metrics: {e}\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal names from different places (a callee's name from the merged
    /// table, the same name from its own crate) are one series, whichever
    /// thread counts them and whether or not it had them at hand.
    #[test]
    fn equal_names_from_different_places_are_one_series() {
        let literal: &'static str = "metrics-test-fn";
        let copy: &'static str = Box::leak(literal.to_string().into_boxed_str());
        assert!(!std::ptr::eq(literal, copy));
        let ms = Duration::from_millis(1);
        for function in [literal, copy, literal] {
            finished(function, "external", &Method::POST, StatusCode::OK, ms);
        }
        std::thread::spawn(move || finished(copy, "external", &Method::POST, StatusCode::OK, ms))
            .join()
            .unwrap();
        let text = encode();
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("http_requests_total{") && l.contains(literal))
            .collect();
        assert_eq!(
            series,
            [
                r#"http_requests_total{function="metrics-test-fn",caller="external",code="200",method="post"} 4"#
            ]
        );
        for callee in [literal, copy] {
            invoked("external", callee, Transport::InProcess, ms);
        }
        let count = format!(
            r#"fmerge_invoke_duration_seconds_count{{caller="external",callee="{literal}",transport="in-process"}} 2"#
        );
        assert!(encode().lines().any(|l| l == count), "{}", encode());
    }
}

/// How the isolated callees' threads are read (see [`Gauges`]): set once
/// the isolated callees have threads.
static ISOLATED: OnceLock<ReadIsolated> = OnceLock::new();

/// Per isolated callee: its name, its threads stuck, its threads.
type ReadIsolated = fn() -> Vec<(&'static str, usize, usize)>;

/// Makes each scrape read the isolated callees' threads with `read`: per
/// callee, its name, its threads stuck, its threads.
pub(crate) fn read_isolated_with(read: ReadIsolated) {
    let _ = ISOLATED.set(read);
}

/// `fmerge_isolated_threads_stuck` and `fmerge_isolated_threads`, read at
/// each scrape from what `isolation` gives [`read_isolated_with`].
#[derive(Debug)]
pub(crate) struct Gauges;

impl Collector for Gauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (stuck, all) = (
            Family::<FunctionLabel, Gauge>::default(),
            Family::<FunctionLabel, Gauge>::default(),
        );
        let read = ISOLATED.get().map(|read| read()).unwrap_or_default();
        for (function, stuck_now, threads) in read {
            let label = FunctionLabel { function };
            stuck.get_or_create(&label).set(stuck_now as i64);
            all.get_or_create(&label).set(threads as i64);
        }
        for (name, help, family) in [
            (
                "fmerge_isolated_threads_stuck",
                "Threads of an isolated callee still running a call past its exec_timeout; all of them: /_/ready answers 503",
                &stuck,
            ),
            (
                "fmerge_isolated_threads",
                "Threads of an isolated callee (FMERGE_ISOLATE_THREADS)",
                &all,
            ),
        ] {
            family.encode(encoder.encode_descriptor(name, help, None, family.metric_type())?)?;
        }
        Ok(())
    }
}
