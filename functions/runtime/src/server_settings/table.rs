//! The server's settings, each written once: its variable, default,
//! parser and the row `docs/operating.md` shows for it (the doc's rows are
//! checked against these by `tests/settings.rs`). Names and
//! meanings are of-watchdog's where it has them.

use super::macros::Row;
use super::parse::{
    self, Secret, duration, flag, ip_address, names, number, positive, positive_duration, records,
    secret, some_text, text, whole_seconds,
};
use std::net::IpAddr;
use std::time::Duration;

/// `max_body_size`'s default, 32 MiB; also the default limit of a reply
/// `invoke` reads over HTTP.
pub(crate) const DEFAULT_MAX_BODY_SIZE: usize = 32 << 20;

/// Where `invoke` reaches functions not merged in, by default.
const DEFAULT_GATEWAY: &str = "http://gateway.openfaas:8080";

/// The most records `FMERGE_CALL_LOG` may keep: at most a few hundred
/// bytes each, tens of MiB in all.
pub(crate) const MAX_RECORDS: usize = 100_000;

settings_table! {
    /// The server's settings, read once from the environment (see
    /// `docs/operating.md`).
    server ServerSettings {
        port: u16 {
            key: "port",
            default: 8080,
            parse: number("a port number (0-65535)"),
            doc_default: "`8080`",
            meaning: "the function's port",
        },
        listen_address: IpAddr {
            key: "listen_address",
            default: IpAddr::from([0, 0, 0, 0]),
            parse: ip_address,
            doc_default: "`0.0.0.0`",
            meaning: "the address to bind (what OpenFaaS expects; `127.0.0.1` or `::` also work)",
        },
        read_timeout: Duration {
            key: "read_timeout",
            default: Duration::from_secs(30),
            parse: duration,
            doc_default: "`30s`",
            meaning: "reading a whole request: its line, headers and body together (as Go's \
                `ReadTimeout`), counted from the connection's accept for its first request and \
                from the first byte of each later one; also the idle time of a keep-alive \
                connection before its next request (Go's `IdleTimeout` defaults to \
                `ReadTimeout` the same way). `0`: none",
            past_it: "line or headers: connection closed; body: **408**, connection closed",
        },
        write_timeout: Duration {
            key: "write_timeout",
            default: Duration::from_secs(30),
            parse: positive_duration,
            doc_default: "`30s`",
            meaning: "writing one reply: wholly written within this of its request's head, as \
                Go's `WriteTimeout` counts it (a handler that takes longer gets no reply, as behind \
                of-watchdog; a client that does not read its reply loses its connection). The 504 \
                the runtime answers itself gets a `write_timeout` of its own, so that it comes \
                through where of-watchdog's is lost (an `exec_timeout` not below \
                `write_timeout`). On SIGTERM, how long in-flight requests may still finish once \
                new connections are refused. Must be over 0",
            past_it: "connection closed, the reply not written",
        },
        healthcheck_interval: Duration {
            key: "healthcheck_interval",
            default: write_timeout,
            parse: duration,
            doc_default: "`write_timeout`",
            meaning: "on SIGTERM, how long `/_/health` answers 503 while new connections are \
                still accepted, so that the endpoint is unrouted before the port closes",
        },
        max_buffered_bytes: usize {
            key: "max_buffered_bytes",
            default: parse::memory_limit().map_or(0, |bytes| (bytes / 2) as usize),
            parse: number("a number of bytes"),
            doc_default: "half the cgroup memory limit (v2 `memory.max`, v1 \
                `memory.limit_in_bytes`), else half the machine's memory",
            meaning: "request bodies held in memory at once, across all requests, until their \
                handlers finish: many large bodies get 503 instead of an OOM kill that would take \
                every merged function down. Charged on the bytes that arrived (each body rounded \
                up to the next KiB), never on a declared `Content-Length`; a body that finds it \
                spent waits for it (see [Limits](#limits-and-what-they-protect)). `0`: none. Not \
                in of-watchdog",
            past_it: "**503** with `Retry-After: 1`, connection closed",
        },
        max_connections: usize {
            key: "max_connections",
            default: 4096,
            parse: positive("a number of connections", "would refuse every connection"),
            doc_default: "`4096`",
            meaning: "open connections, and function requests served at once; a new client past \
                it closes the keep-alive connection idle longest, else the one that waited longest \
                for its request head (never one inside a request), so probes are answered whoever holds the others; a function request past \
                it waits for a slot (see [Limits](#limits-and-what-they-protect)). Not in \
                of-watchdog",
            past_it: "waits, then **503** with `Retry-After: 1`",
        },
        metrics_port: u16 {
            key: "metrics_port",
            default: 8081,
            parse: number("a port number"),
            doc_default: "`8081`",
            meaning: "Prometheus `/metrics` (of-watchdog's port), and the call log, on a thread \
                of its own with of-watchdog's bounds (see \
                [Limits](#limits-and-what-they-protect)). `0`: no metrics server. A port that is \
                taken is logged and the function serves on without metrics",
        },
        access_log: bool {
            key: "FMERGE_ACCESS_LOG",
            default: false,
            parse: flag,
            doc_default: "off",
            meaning: "`1`/`true`: one line per request, as of-watchdog writes it (see \
                [Logs](#logs))",
        },
        call_log: usize {
            key: "FMERGE_CALL_LOG",
            default: 0,
            parse: records(MAX_RECORDS),
            doc_default: "`0` (off)",
            meaning: "records of `invoke` to keep for `fmerge graph --call-log` (at most \
                100000): each call's start and end as its caller saw it, in a ring in memory \
                served by `GET :<metrics_port>/calls` (see [Endpoints](#endpoints)). Needs \
                `metrics_port`",
            past_it: "the oldest records are dropped, and `/calls` says how many",
        },
        gateway_url: String {
            key: "GATEWAY_URL",
            default: DEFAULT_GATEWAY.to_string(),
            parse: text,
            doc_default: "`http://gateway.openfaas:8080`",
            meaning: "where `invoke` sends calls to functions not merged in",
        },
        invoke_timeout: Duration {
            key: "FMERGE_INVOKE_TIMEOUT_SECS",
            default: Duration::from_secs(30),
            parse: whole_seconds,
            doc_default: "`30`",
            meaning: "timeout of one `invoke` over HTTP, a whole number of seconds",
            past_it: "**502** to the caller",
        },
        invoke_max_reply: usize {
            key: "FMERGE_INVOKE_MAX_REPLY_BYTES",
            default: DEFAULT_MAX_BODY_SIZE,
            parse: number("a number of bytes"),
            doc_default: "`33554432` (32 MiB, `max_body_size`'s default)",
            meaning: "the largest reply `invoke` reads from a callee over HTTP (a declared length \
                over it is refused before the body is read)",
            past_it: "**502** to the caller",
        },
        isolate_threads: usize {
            key: "FMERGE_ISOLATE_THREADS",
            default: 2,
            parse: positive("a positive number", "would give an isolated callee no thread"),
            doc_default: "`2`",
            meaning: "threads of each isolated callee (its pool). Each call abandoned at the \
                callee's `exec_timeout` whose handler blocks keeps its thread until the handler \
                returns",
            past_it: "every thread held past the deadline of the call it runs: **503** on \
                `/_/ready` (the pod leaves rotation until one comes back; `/_/health` stays 200), \
                `fmerge_isolated_threads_stuck` equal to `fmerge_isolated_threads`, and the \
                callee's calls get their 504 at its `exec_timeout`",
        },
        isolate: Option<Vec<String>> {
            key: "FMERGE_ISOLATE",
            default: None,
            parse: names,
            doc_default: "the callees `fmerge build` found blocking",
            meaning: "merged callees that run on threads of their own; set, the list replaces the \
                default (`none`: none). See `functions/README.md`",
        },
        caller_key: Option<Secret> {
            key: "FMERGE_CALLER_KEY",
            default: None,
            parse: secret,
            doc_default: "unset (or the secret `fmerge-caller-key`)",
            meaning: "the application's key that proves callers (see [Metrics](#metrics)); the \
                start log says only whether it is set",
            past_it: "shorter than 16 bytes: the start stops",
        },
        namespace: Option<String> {
            key: "OPENFAAS_NAMESPACE",
            default: None,
            parse: some_text,
            doc_default: "the pod's namespace, else `openfaas-fn`",
            meaning: "this deployment's namespace: `invoke(\"b.<ns>\")` runs a merged `b` \
                in-process only in this namespace; another namespace's `b` is reached over HTTP",
        },
    }

    /// The limits each call is held to, the same for an HTTP request and an
    /// in-process call of a merged callee (which reads them as
    /// `<CALLEE>__<key>`; see the runtime's `limits`).
    limits CallLimits {
        exec_timeout: Duration {
            key: "exec_timeout",
            default: Duration::from_secs(30),
            none: Duration::ZERO,
            parse: duration,
            doc_default: "`30s`",
            meaning: "a handler still running after this is abandoned, even one that blocks its \
                thread or never yields. A request's `X-Timeout` header (Go duration) may lower \
                it, never lift it (`0`, a zero duration or garbage are ignored; of-watchdog lets \
                `X-Timeout: 0` lift it). Counts from the request's arrival, as of-watchdog's: a \
                request still waiting for a handler thread (all of them blocked) gets its 504 \
                from the connection layer. `0`: none",
            past_it: "**504**",
        },
        max_inflight: usize {
            key: "max_inflight",
            default: 0,
            none: 0,
            parse: number("a number of requests"),
            doc_default: "`0` (no limit)",
            meaning: "requests in flight; `/_/ready` answers 429 while it is met",
            past_it: "**429** `Concurrent request limit exceeded. Max concurrent requests: N`",
        },
        max_body_size: usize {
            key: "max_body_size",
            default: DEFAULT_MAX_BODY_SIZE,
            none: usize::MAX,
            parse: number("a number of bytes"),
            doc_default: "`33554432` (32 MiB)",
            meaning: "one request body: a declared `Content-Length` over it is refused before a \
                byte of the body is read, a chunked body as soon as it passes it. Not in \
                of-watchdog",
            past_it: "**413**, connection closed",
        },
    }
}
