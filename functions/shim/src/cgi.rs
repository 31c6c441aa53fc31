//! What a member sees of a call, built as of-watchdog 0.11.6 builds it: the
//! CGI variables of `getEnvironment` (pkg/watchdog.go), its settings under the
//! namespaced prefix, and of-watchdog's parsing of durations (config.go), so
//! that a member runs merged exactly as it ran behind its own watchdog.

use std::ffi::OsString;
use std::time::Duration;

use crate::RUN_MEMBER_VAR;

/// A call to a member, as the gateway would have forwarded it.
#[derive(Clone, Debug, Default)]
pub struct Call {
    /// The member's name.
    pub name: String,
    pub method: String,
    /// The path after `/function/<name>`, `/` when empty, percent-decoded as
    /// Go's `URL.Path` is.
    pub path: String,
    /// The raw query, without `?`, if any.
    pub query: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub chunked: bool,
}

/// The prefix under which a member's own settings live in the merged
/// binary's environment: `social-graph-get-followers` gives
/// `SOCIAL_GRAPH_GET_FOLLOWERS__`.
/// (The merge contract's rule, `<FUNCTION>__KEY`, with an empty key.)
pub fn namespaced_prefix(name: &str) -> String {
    crate::contract::namespaced(name, "")
}

/// Go's `textproto.CanonicalMIMEHeaderKey`: `x-call-id` becomes `X-Call-Id`;
/// a key with a byte that is not a token character is left as it is.
pub fn canonical_key(key: &str) -> String {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if !key.bytes().all(token) {
        return key.to_string();
    }
    let mut upper = true;
    key.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

/// Splits a request-target into the member name, the rest of the path and
/// the query, when it is `/function/<name>[/<rest>][?query]`. A name with a
/// namespace (`name.ns`) is returned whole: only the caller's namespace is
/// merged, so the server relays those.
pub fn function_target(target: &str) -> Option<(&str, &str, Option<&str>)> {
    // An absolute-form target (`http://host/function/x`, sent through
    // proxies) names the same resource as its path.
    let target = match target.find("://") {
        Some(i) if !target.starts_with('/') => target[i + 3..]
            .find('/')
            .map_or("/", |j| &target[i + 3 + j..]),
        _ => target,
    };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let rest = path.strip_prefix("/function/")?;
    let (name, rest) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    (!name.is_empty()).then_some((name, rest, query))
}

/// Percent-decodes a path as Go's `url.Parse` does for `URL.Path`; a path
/// with a malformed escape is kept as it is.
pub fn decode_path(path: &str) -> String {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(v) => {
                    out.push(v);
                    i += 3;
                    continue;
                }
                None => return path.to_string(),
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| path.to_string())
}

/// of-watchdog's CGI variables for a call (`getEnvironment`): `Http_<Header>`
/// with Go's canonical name and the first value, then the method, query,
/// path and transfer encoding. Go's server drops `Host` (it becomes
/// `r.Host`) and, for a chunked body, `Transfer-Encoding` and
/// `Content-Length` from the header map, so they are dropped here too.
pub fn cgi_vars(call: &Call) -> Vec<(String, String)> {
    let mut seen: Vec<String> = Vec::new();
    let mut vars = Vec::new();
    for (k, v) in &call.headers {
        let key = canonical_key(k);
        let dropped = key == "Host"
            || (call.chunked && (key == "Transfer-Encoding" || key == "Content-Length"));
        if dropped || seen.contains(&key) {
            continue;
        }
        vars.push((format!("Http_{}", key.replace('-', "_")), v.clone()));
        seen.push(key);
    }
    vars.push(("Http_Method".into(), call.method.clone()));
    if let Some(q) = call.query.as_ref().filter(|q| !q.is_empty()) {
        vars.push(("Http_Query".into(), q.clone()));
    }
    vars.push((
        "Http_Path".into(),
        if call.path.is_empty() {
            "/".into()
        } else {
            call.path.clone()
        },
    ));
    if call.chunked {
        vars.push(("Http_Transfer_Encoding".into(), "chunked".into()));
    }
    vars
}

/// The whole environment of the process that runs `call`: `base` without the
/// caller's own CGI variables, without [`RUN_MEMBER_VAR`] and without the
/// variables the caller's deployment sets (`caller_env`), the member's
/// namespaced settings under their plain names, and the call's CGI
/// variables. Later entries win.
pub fn member_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    call: &Call,
    caller_env: &[&str],
) -> Vec<(OsString, OsString)> {
    let mut env = own_env(base, &call.name, caller_env);
    env.extend(
        cgi_vars(call)
            .into_iter()
            .map(|(k, v)| (k.into(), v.into())),
    );
    env
}

/// [`member_env`] without the call's CGI variables: what every call to
/// member `name` has in common.
pub fn own_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    name: &str,
    caller_env: &[&str],
) -> Vec<(OsString, OsString)> {
    let prefix = namespaced_prefix(name);
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut own = Vec::new();
    for (k, v) in base {
        let Some(key) = k.to_str() else {
            env.push((k, v));
            continue;
        };
        if key.starts_with("Http_") || key == RUN_MEMBER_VAR || caller_env.contains(&key) {
            continue;
        }
        if let Some(plain) = key.strip_prefix(&prefix).filter(|p| !p.is_empty()) {
            own.push((OsString::from(plain), v.clone()));
        }
        env.push((k, v));
    }
    env.extend(own);
    env
}

/// of-watchdog's `parseIntOrDurationValue`: a non-negative integer is
/// seconds, else a Go duration; `None` where Go falls back to the default.
pub fn parse_watchdog_duration(val: &str) -> Option<GoDuration> {
    if let Ok(secs) = val.parse::<i64>()
        && secs >= 0
    {
        return Some(GoDuration {
            negative: false,
            value: Duration::from_secs(secs.unsigned_abs()),
        });
    }
    parse_go_duration(val)
}

/// A Go `time.Duration`, which may be negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoDuration {
    pub negative: bool,
    pub value: Duration,
}

impl GoDuration {
    /// The timeout it means to `exec.CommandContext`: none unless positive.
    pub fn timeout(self) -> Option<Duration> {
        (!self.negative && !self.value.is_zero()).then_some(self.value)
    }
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`.
pub fn parse_go_duration(s: &str) -> Option<GoDuration> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(GoDuration {
            negative,
            value: Duration::ZERO,
        });
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return None;
        }
        let unit_end = rest[num_end..]
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .map_or(rest.len(), |i| num_end + i);
        let scale = crate::contract::duration_unit_nanos(&rest[num_end..unit_end])?;
        nanos += num.parse::<f64>().ok()? * scale;
        rest = &rest[unit_end..];
    }
    // Go refuses durations beyond int64 nanoseconds (about 292 years).
    (nanos <= i64::MAX as f64).then(|| GoDuration {
        negative,
        value: Duration::from_nanos(nanos.round() as u64),
    })
}
