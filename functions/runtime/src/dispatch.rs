//! In-process dispatch to merged callees, and to the group's caller, the
//! function this binary serves (a merged callee's call back to it), each
//! under the guards its own server would have held it to.

use crate::call::Call;
pub(crate) use crate::callees::merged;
use crate::callees::{GROUP_CALLER_INDEX, Merged, callees};
use crate::limits::{self, deadline_after};
use crate::record::Record;
use crate::{CallLimits, Entry, Error, Input, Response, ServerSettings, isolation, namespaced};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

/// The merged callee `function` names, if any: its bare name, or
/// OpenFaaS's `<name>.<namespace>` form in this deployment's namespace (the
/// same name in another namespace is another function, reached over HTTP).
/// Gives the table's entry, whose name lives for ever. In a merged binary,
/// the group's caller is found too (after the table, so that a call of
/// a callee costs no more): a callee's call back to it would have
/// reached this same binary through the gateway.
pub(crate) fn lookup(function: &str) -> Option<&'static Merged> {
    let callees = callees();
    if callees.is_empty() {
        return None;
    }
    let find = |name: &str| {
        callees.iter().find(|c| c.name == name).or_else(|| {
            GROUP_CALLER
                .get()
                .map(|(caller, _)| caller)
                .filter(|h| h.name == name)
        })
    };
    // A package name has no `.`: the bare name first, then the namespaced form.
    find(function).or_else(|| {
        let (name, namespace) = function.split_once('.')?;
        find(name).filter(|_| namespace == this_namespace())
    })
}

/// This deployment's namespace: `$OPENFAAS_NAMESPACE` (what of-watchdog
/// reads), else the pod's service account namespace, else OpenFaaS's
/// default `openfaas-fn`.
fn this_namespace() -> &'static str {
    static NAMESPACE: OnceLock<String> = OnceLock::new();
    NAMESPACE.get_or_init(|| {
        crate::server_settings::process()
            .namespace
            .clone()
            .or_else(|| {
                std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                    .ok()
            })
            .map(|ns| ns.trim().to_string())
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "openfaas-fn".to_string())
    })
}

/// Runs an entry and turns a panic into a 500 reply instead of unwinding
/// into the caller or killing the connection.
pub(crate) async fn run_guarded(function: &str, entry: Entry, input: Input) -> Response {
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| entry(input))) {
        Ok(fut) => fut,
        Err(panic) => return Error::panicked(function, &*panic).into_response(function),
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(reply) => reply,
        Err(panic) => Error::panicked(function, &*panic).into_response(function),
    }
}

/// Calls a merged callee in-process, as the callee's own server would have
/// run it: under its name (logs, metrics, the call context of its own
/// invokes), counted per caller, within its own guards (see [`Guards`]),
/// and replied with the same status, headers and body (for an `invoke`'s
/// body, the same status and body: all `invoke` reads). Dropped before it
/// ends (the caller gave up), the callee's work is cancelled and the call
/// counted as the callee's server counts a client that went away.
///
/// The guards are checked here and the callee's future is boxed, so that
/// the future returned holds neither the input nor the callee's state:
/// every caller's own state carries (and copies) it. `invoke` calls this
/// when it is polled, so nothing happens earlier than it did.
pub(crate) fn call(callee: &'static Merged, input: Input) -> impl Future<Output = Response> + Send {
    let (name, entry) = (callee.name, callee.entry);
    let method = input.method();
    let head = method == http::Method::HEAD;
    // The caller is who runs here, never what a header says.
    let record = Record::start(name, Call::caller(), method, None, Instant::now());
    let guards = guards(callee);
    let admitted = guards
        .limits
        .admit(name, guards.in_flight)
        .and_then(|admitted| {
            guards.limits.body_fits(input.body_len() as u64)?;
            // An invoke's body comes with no headers: no `X-Timeout`, and the
            // running call's ids, as its headers would carry them.
            let headers = input.headers();
            let limit = guards.limits.exec_limit(headers);
            let (timer, deadline) = timer(limit, Call::running_deadline());
            let context = match headers {
                Some(headers) => Call::new(name, headers, deadline),
                None => Call::inherit(name, deadline),
            };
            let run = crate::boxed(|| context.scope(run_guarded(name, entry, input)));
            Ok((admitted, limit, timer, run))
        });
    async move {
        let mut response = match admitted {
            Err(refusal) => *refusal,
            // A timer, or a task on the callee's own threads when it is
            // isolated, is boxed: most calls need neither, and the state of
            // every call would carry its size.
            Ok((_admitted, limit, timer, run)) => match (isolation::pool(callee), timer) {
                (None, None) => run.await,
                (None, Some(_)) => Box::pin(limits::within(name, limit, timer, run)).await,
                (Some(pool), _) => {
                    let task = pool.spawn(run, deadline_after(limit).map(Into::into));
                    Box::pin(limits::run_within(name, limit, timer, task)).await
                }
            },
        };
        record.finish(response.status(), response.body().len());
        // What HTTP does to a reply to HEAD: no body.
        if head {
            *response.body_mut() = crate::Bytes::new();
        }
        response
    }
}

/// The timer a callee with `limit` needs, given its caller's `deadline`,
/// and the callee's deadline. Over HTTP a callee starts after its caller,
/// so when the caller's deadline comes no later than the callee's own, the
/// caller gives up first and the callee is dropped with it (as its server
/// counts a client that went away): then the callee needs no timer of its
/// own (its 504 could never come first).
fn timer(
    limit: std::time::Duration,
    caller: Option<tokio::time::Instant>,
) -> (Option<tokio::time::Instant>, Option<tokio::time::Instant>) {
    let own = deadline_after(limit);
    let timer = own.filter(|own| caller.is_none_or(|caller| *own < caller));
    (timer, timer.or(caller))
}

/// What a merged callee's own server would have enforced: its
/// [`CallLimits`], read from its namespaced settings (`<CALLEE>__<key>`)
/// with the server's defaults; for the function this binary serves, its
/// server's own, in flight counted with its requests.
pub(crate) struct Guards {
    limits: CallLimits,
    in_flight: &'static AtomicUsize,
}

/// The group's caller (the function this binary serves), as a callee, with
/// its server's guards.
static GROUP_CALLER: OnceLock<(Merged, Guards)> = OnceLock::new();

/// Makes the group's caller (the function this binary serves) callable
/// in-process, under its server's guards and counted in its `in_flight`
/// (`serve` calls it once).
pub(crate) fn serve_group_caller(
    name: &'static str,
    entry: Entry,
    settings: &ServerSettings,
    in_flight: &'static AtomicUsize,
) {
    let callee = Merged {
        index: GROUP_CALLER_INDEX,
        name,
        entry,
        isolate: false,
    };
    let guards = Guards {
        limits: settings.limits,
        in_flight,
    };
    let _ = GROUP_CALLER.set((callee, guards));
}

/// The guards of each merged callee, in the order of [`callees`].
fn guards_table() -> &'static Result<Vec<Guards>, String> {
    static TABLE: OnceLock<Result<Vec<Guards>, String>> = OnceLock::new();
    TABLE.get_or_init(|| {
        callees()
            .iter()
            .map(|&Merged { name, .. }| {
                let settings =
                    ServerSettings::from_lookup(|key| std::env::var(namespaced(name, key)).ok())
                        .map_err(|e| {
                            format!(
                                "merged function {name} (settings read from {}...): {e}",
                                namespaced(name, "")
                            )
                        })?;
                Ok(Guards {
                    limits: settings.limits,
                    in_flight: Box::leak(Box::new(AtomicUsize::new(0))),
                })
            })
            .collect()
    })
}

/// Reads every merged callee's guards: `serve` stops the start on an error.
pub(crate) fn check_guards() -> Result<(), String> {
    guards_table().as_ref().map(|_| ()).map_err(Clone::clone)
}

fn guards(callee: &Merged) -> &'static Guards {
    static UNCOUNTED: AtomicUsize = AtomicUsize::new(0);
    static NONE: Guards = Guards {
        limits: CallLimits::NONE,
        in_flight: &UNCOUNTED,
    };
    if callee.index == GROUP_CALLER_INDEX {
        return GROUP_CALLER.get().map_or(&NONE, |(_, guards)| guards);
    }
    match guards_table() {
        Ok(table) => &table[callee.index],
        // `serve` refused to start; a test calling in directly gets none.
        Err(_) => &NONE,
    }
}
