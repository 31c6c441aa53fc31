//! Who is running, on whose behalf: the task-local context of one call.
//!
//! `serve` and in-process dispatch set it around a handler; `invoke` reads
//! it to name the caller (metrics, `X-Fmerge-Caller`) and to pass the
//! request's `X-Call-Id` and W3C `traceparent` on, as the OpenFaaS gateway
//! does. A handler that spawns a task leaves the context behind (tokio's
//! task-locals do not follow `spawn`); calls from there name the group's
//! caller (the function whose `main` started the process) as their caller
//! and carry no ids.

use crate::metrics;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use sha2::Sha256;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::task::futures::TaskLocalFuture;

/// The header `invoke` sets on an outgoing call: the calling function.
pub const CALLER_HEADER: HeaderName = HeaderName::from_static("x-fmerge-caller");
/// The header `invoke` sets on an outgoing call while the call log is on:
/// the calling request's id, which the callee's log records as the parent
/// of the request it starts ([`crate::call_log`]).
pub const REQUEST_HEADER: HeaderName = HeaderName::from_static("x-fmerge-request");
/// The caller label of a request that came with no `X-Fmerge-Caller`.
pub const EXTERNAL: &str = "external";

/// The longest `traceparent`/`tracestate` passed on (W3C allows 512 bytes
/// of `tracestate`).
const MAX_TRACE_HEADER: usize = 512;

/// The headers passed from a request to the calls it makes; the first is
/// the call id.
pub(crate) const PROPAGATED: [HeaderName; 3] = [
    HeaderName::from_static("x-call-id"),
    HeaderName::from_static("traceparent"),
    HeaderName::from_static("tracestate"),
];

#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub function: &'static str,
    pub propagated: Vec<(HeaderName, HeaderValue)>,
    /// This handler request's number in the call log (0: the log is off).
    pub request: u64,
    /// The id of the request whose call started this one, for the call
    /// log (`None`: from outside, or the log is off).
    pub parent: Option<Arc<str>>,
    /// When the nearest timer around this call drops it (`None`: no timer).
    pub deadline: Option<tokio::time::Instant>,
}

tokio::task_local! {
    static CURRENT: Call;
}

impl Call {
    pub fn new(
        function: &'static str,
        headers: &HeaderMap,
        deadline: Option<tokio::time::Instant>,
    ) -> Call {
        let propagated = PROPAGATED
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                let value = headers.get(name)?;
                // A client's id is passed on only if it could be logged.
                let valid = match i {
                    0 => call_id(headers).is_some(),
                    _ => value.len() <= MAX_TRACE_HEADER,
                };
                valid.then(|| (name.clone(), value.clone()))
            })
            .collect();
        let parent = match crate::call_log::enabled() {
            true => headers
                .get(REQUEST_HEADER)
                .filter(|id| crate::call_log::valid_id(id.as_bytes()))
                .and_then(|id| id.to_str().ok())
                .map(Arc::from),
            false => None,
        };
        Call {
            function,
            propagated,
            request: crate::call_log::next_request(),
            parent,
            deadline,
        }
    }

    /// The context of an in-process `invoke` of `function` from the running
    /// call: what `new` reads from the headers `invoke` would have sent.
    pub fn inherit(function: &'static str, deadline: Option<tokio::time::Instant>) -> Call {
        Call {
            function,
            propagated: CURRENT
                .try_with(|c| c.propagated.clone())
                .unwrap_or_default(),
            request: crate::call_log::next_request(),
            parent: CURRENT
                .try_with(|c| c.request)
                .ok()
                .and_then(crate::call_log::request_id)
                .map(Arc::from),
            deadline,
        }
    }

    /// The running call's parent request, for the call log.
    pub fn parent() -> Option<Arc<str>> {
        CURRENT.try_with(|c| c.parent.clone()).ok().flatten()
    }

    /// The running call's deadline, if a call runs here and has one.
    pub fn running_deadline() -> Option<tokio::time::Instant> {
        CURRENT.try_with(|c| c.deadline).ok().flatten()
    }

    /// The running call's number in the call log (0: no call runs here, or
    /// the log is off).
    pub fn number() -> u64 {
        CURRENT.try_with(|c| c.request).unwrap_or(0)
    }

    /// `fut` run as this call. (A plain function, not `async`: an `async fn`
    /// would hold `fut` twice in its state, and every caller copies it.)
    pub fn scope<F: std::future::Future>(self, fut: F) -> TaskLocalFuture<Call, F> {
        CURRENT.scope(self, fut)
    }

    /// Sets the running call's propagated headers on an outgoing call's
    /// `headers`, where not set already.
    pub fn pass_on(headers: &mut HeaderMap) {
        let _ = CURRENT.try_with(|c| {
            for (name, value) in &c.propagated {
                if !headers.contains_key(name) {
                    headers.insert(name.clone(), value.clone());
                }
            }
            // The calling request, for the callee's call log, in place of
            // any the handler set (the log's parents are the runtime's).
            if let Some(id) = crate::call_log::request_id(c.request)
                && let Ok(id) = HeaderValue::from_str(&id)
            {
                headers.insert(REQUEST_HEADER, id);
            }
        });
    }

    /// Who calls from this task: the running call's function, else the
    /// group's caller (the function whose `main` started the process), else
    /// [`EXTERNAL`].
    pub fn caller() -> &'static str {
        CURRENT
            .try_with(|c| c.function)
            .ok()
            .or_else(crate::function_config::group_caller)
            .unwrap_or(EXTERNAL)
    }
}

/// The caller named by a request's headers, if the application's key
/// proves that a function of it sent them: any client can send
/// `X-Fmerge-Caller`, and the planner reads this label as call-graph edges.
/// No header: [`EXTERNAL`]; a header without a valid `X-Fmerge-Caller-Sig`
/// (or no key here): [`UNVERIFIED`]; past `MAX_CALLERS` names: `other`.
/// The signature must be for this call: made for `callee` and the request
/// line `method` `target` (see [`Signed`]).
pub(crate) fn caller_of(
    headers: &HeaderMap,
    callee: &str,
    method: &str,
    target: &str,
) -> &'static str {
    let Some(name) = headers.get(&CALLER_HEADER).and_then(|v| v.to_str().ok()) else {
        return EXTERNAL;
    };
    let signed = Signed {
        caller: name,
        callee,
        method,
        target,
    };
    if !proven(headers, &signed) {
        return UNVERIFIED;
    }
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    metrics::bounded(&SEEN, name)
}

/// The header that proves `X-Fmerge-Caller`: `t=<unix seconds>,s=<hex
/// HMAC-SHA256(key, "<caller>\n<callee>\n<method> <target>\n<t>")>`, set by
/// `invoke` over HTTP (see [`Signed`]). It never reaches a handler.
pub const CALLER_SIG_HEADER: HeaderName = HeaderName::from_static("x-fmerge-caller-sig");
/// The caller label of a request whose `X-Fmerge-Caller` is not proven.
pub const UNVERIFIED: &str = "unverified";
use fmerge_contract::CALLER_KEY_VAR;
/// The OpenFaaS secret holding it, when the variable is unset.
pub const CALLER_KEY_FILE: &str = "/var/openfaas/secrets/fmerge-caller-key";
/// How far a signature's time may be from this clock: the skew between
/// two nodes' clocks and a call's time in the gateway, no more, since a
/// signature seen on the wire can be replayed within it. (It proves one
/// label per caller and second, not one request: refusing a signature seen
/// before would refuse a caller's other calls in the same second; see
/// `docs/operating.md`.)
const SIG_WINDOW_SECS: u64 = 30;
/// The shortest key accepted.
const MIN_KEY_BYTES: usize = 16;

fn key() -> &'static Result<Option<Vec<u8>>, String> {
    static KEY: OnceLock<Result<Option<Vec<u8>>, String>> = OnceLock::new();
    KEY.get_or_init(|| {
        // The table's reading of the environment, made here when first
        // needed (`process()` may have been read before a test sets it).
        let given = crate::server_settings::ServerSettings::from_env()
            .ok()
            .and_then(|s| s.caller_key);
        let (key, from) = match given {
            Some(v) => (v.0, CALLER_KEY_VAR),
            None => match std::fs::read(CALLER_KEY_FILE) {
                Ok(v) => (v, CALLER_KEY_FILE),
                Err(_) => return Ok(None),
            },
        };
        let key = key.trim_ascii().to_vec();
        if key.len() < MIN_KEY_BYTES {
            return Err(format!(
                "the caller key in {from} has {} bytes\nfix: use at least {MIN_KEY_BYTES} random bytes (e.g. `openssl rand -hex 32`), the same for every function of the application",
                key.len()
            ));
        }
        Ok(Some(key))
    })
}

/// Reads the key once: `serve` stops the start on a key too short.
pub(crate) fn check_key() -> Result<(), String> {
    key().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// What a caller signature covers: who calls, whom, and the request line
/// as the callee sees it (its method, its path and query; `/` for none),
/// with the time. A signature captured on its way to one function, or for
/// one call, proves nothing to another function or for another call; it
/// can be replayed only as the same call to the same function, within
/// `SIG_WINDOW_SECS`. The body is not covered: it may be streamed.
pub(crate) struct Signed<'a> {
    pub caller: &'a str,
    pub callee: &'a str,
    pub method: &'a str,
    pub target: &'a str,
}

fn mac(key: &[u8], signed: &Signed<'_>, t: u64) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    let target = if signed.target.is_empty() {
        "/"
    } else {
        signed.target
    };
    for part in [signed.caller, "\n", signed.callee, "\n", signed.method, " "] {
        mac.update(part.as_bytes());
    }
    mac.update(target.as_bytes());
    mac.update(b"\n");
    mac.update(t.to_string().as_bytes());
    mac
}

/// The `X-Fmerge-Caller-Sig` value for `signed` now, if this process has a key.
pub(crate) fn signature(signed: &Signed<'_>) -> Option<HeaderValue> {
    let key = key().as_ref().ok()?.as_ref()?;
    let t = unix_now();
    let s = hex::encode(mac(key, signed, t).finalize().into_bytes());
    HeaderValue::from_str(&format!("t={t},s={s}")).ok()
}

/// Whether `headers` name `name` in `X-Fmerge-Caller` and prove it with
/// `X-Fmerge-Caller-Sig` for the request line `method` `target` sent to
/// `name` itself (as [`caller_of`] checks a caller): a request only a
/// holder of the application's key could send.
pub(crate) fn signed(headers: &HeaderMap, name: &str, method: &str, target: &str) -> bool {
    let signed = Signed {
        caller: name,
        callee: name,
        method,
        target,
    };
    headers.get(&CALLER_HEADER).and_then(|v| v.to_str().ok()) == Some(name)
        && proven(headers, &signed)
}

/// Whether `headers`' `X-Fmerge-Caller-Sig` proves `signed` now with this
/// process's key.
fn proven(headers: &HeaderMap, signed: &Signed<'_>) -> bool {
    let Some(Some(key)) = key().as_ref().ok() else {
        return false;
    };
    let sig = headers
        .get(&CALLER_SIG_HEADER)
        .and_then(|v| v.to_str().ok());
    sig.is_some_and(|sig| verified(key, signed, sig, unix_now()))
}

/// Whether `sig` proves `signed` with `key` at `now`.
fn verified(key: &[u8], signed: &Signed<'_>, sig: &str, now: u64) -> bool {
    let Some((t, s)) = sig.split_once(',').and_then(|(t, s)| {
        Some((
            t.strip_prefix("t=")?.parse::<u64>().ok()?,
            s.strip_prefix("s=")?,
        ))
    }) else {
        return false;
    };
    let Ok(s) = hex::decode(s) else { return false };
    now.abs_diff(t) <= SIG_WINDOW_SECS && mac(key, signed, t).verify_slice(&s).is_ok()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The request's `X-Call-Id`, if it is one that may be logged and passed
/// on: at most 128 of `A-Z a-z 0-9 . _ : / + = -`.
pub(crate) fn call_id(headers: &HeaderMap) -> Option<&str> {
    let id = headers.get(&PROPAGATED[0])?.to_str().ok()?;
    let valid = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/+=-".contains(&b));
    valid.then_some(id)
}

/// The request `invoke` sends: `body` POSTed as `application/json`.
pub(crate) fn post(body: bytes::Bytes) -> crate::Request {
    let mut request = crate::Request::new(body);
    *request.method_mut() = http::Method::POST;
    request.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    request
}

/// Marks an outgoing request as sent by `caller` on behalf of the running
/// call: `X-Fmerge-Caller` and the call's propagated headers.
pub(crate) fn mark(request: &mut crate::Request, caller: &'static str) {
    let headers = request.headers_mut();
    // Checked as `from_str` checks, without copying the name.
    if let Ok(value) =
        http::HeaderValue::from_maybe_shared(bytes::Bytes::from_static(caller.as_bytes()))
    {
        headers.insert(CALLER_HEADER, value);
    }
    // Over HTTP it is proven with the application's key (see `caller_of`);
    // a signature the handler copied from elsewhere is never passed on.
    headers.remove(&CALLER_SIG_HEADER);
    Call::pass_on(headers);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::OTHER;

    fn call<'a>(caller: &'a str, callee: &'a str, target: &'a str) -> Signed<'a> {
        Signed {
            caller,
            callee,
            method: "POST",
            target,
        }
    }

    #[test]
    fn an_in_process_call_names_the_request_that_made_it_as_its_parent() {
        crate::call_log::enable(16);
        let outer = Call::new("a", &HeaderMap::new(), None);
        assert_eq!(outer.parent, None, "from outside");
        let id = crate::call_log::request_id(outer.request).expect("the log is on");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (inner, mut headers) = runtime.block_on(outer.scope(async {
            let mut headers = HeaderMap::new();
            headers.insert(REQUEST_HEADER, HeaderValue::from_static("set-by.handler"));
            Call::pass_on(&mut headers);
            (Call::inherit("b", None), headers)
        }));
        assert_eq!(inner.parent.as_deref(), Some(id.as_str()));
        assert_eq!(
            headers.remove(REQUEST_HEADER).unwrap(),
            id.as_str(),
            "an outgoing call carries the running request's id, not the handler's"
        );
    }

    #[test]
    fn a_signature_is_refused_past_a_short_window_either_way() {
        let key = b"another-test-key-of-enough-bytes";
        let a = call("a", "f", "/x");
        let at = |t: u64| {
            format!(
                "t={t},s={}",
                hex::encode(mac(key, &a, t).finalize().into_bytes())
            )
        };
        let now = 1_800_000_000;
        assert!(verified(key, &a, &at(now), now));
        assert!(verified(key, &a, &at(now - 10), now));
        assert!(verified(key, &a, &at(now + 10), now));
        assert!(!verified(key, &a, &at(now - 60), now));
        assert!(!verified(key, &a, &at(now + 60), now));
        assert!(!verified(key, &call("b", "f", "/x"), &at(now), now));
    }

    #[test]
    fn a_signature_proves_only_the_call_it_was_made_for() {
        let key = b"another-test-key-of-enough-bytes";
        let now = 1_800_000_000;
        let made = call("a", "f", "/x?y=1");
        let sig = format!(
            "t={now},s={}",
            hex::encode(mac(key, &made, now).finalize().into_bytes())
        );
        assert!(verified(key, &made, &sig, now));
        for other in [
            call("a", "g", "/x?y=1"),
            call("a", "f", "/x?y=2"),
            call("a", "f", "/"),
            Signed {
                method: "GET",
                ..call("a", "f", "/x?y=1")
            },
        ] {
            assert!(!verified(key, &other, &sig, now));
        }
        // No target is the root, as the callee sees it.
        let root = |target| {
            hex::encode(
                mac(key, &call("a", "f", target), now)
                    .finalize()
                    .into_bytes(),
            )
        };
        assert_eq!(root(""), root("/"));
    }

    #[test]
    fn only_a_signed_caller_is_a_label_and_callers_are_bounded() {
        // SAFETY: the only test in this binary that reads or sets it.
        unsafe { std::env::set_var(CALLER_KEY_VAR, "a-test-key-of-enough-bytes") };
        let with = |name: &str, sig: Option<HeaderValue>| {
            let mut h = HeaderMap::new();
            h.insert(CALLER_HEADER, name.parse().unwrap());
            if let Some(sig) = sig {
                h.insert(CALLER_SIG_HEADER, sig);
            }
            caller_of(&h, "f", "POST", "/x")
        };
        let sign = |name: &str| signature(&call(name, "f", "/x"));
        assert_eq!(caller_of(&HeaderMap::new(), "f", "GET", "/"), EXTERNAL);
        let signed = |name: &str| with(name, sign(name));
        assert_eq!(signed("write-home-timeline"), "write-home-timeline");
        assert_eq!(with("attacker-1", None), UNVERIFIED);
        // Another name's signature, a forged one, an old one.
        assert_eq!(with("attacker-1", sign("write-home-timeline")), UNVERIFIED);
        assert_eq!(
            with("a", Some(HeaderValue::from_static("t=1,s=00"))),
            UNVERIFIED
        );
        let key = key().as_ref().unwrap().as_ref().unwrap();
        let old = unix_now() - 3600;
        let stale = format!(
            "t={old},s={}",
            hex::encode(mac(key, &call("b", "f", "/x"), old).finalize().into_bytes())
        );
        assert_eq!(with("b", Some(stale.parse().unwrap())), UNVERIFIED);
        for i in 0..100 {
            signed(&format!("caller-{i}"));
        }
        assert_eq!(signed("caller-99"), OTHER);
        assert_eq!(signed("write-home-timeline"), "write-home-timeline");
    }
}
