//! Clients that lie, and settings that would quietly weaken a function:
//! made-up methods and forged callers cannot grow the metrics or draw
//! call-graph edges, a bad `X-Call-Id` is neither logged nor passed on, a
//! callee's reply is read up to a limit, of-watchdog settings the runtime
//! does not implement stop the start, and a function of another namespace
//! is never replaced by a merged one of the same name.
//!
//! Run: `cargo test --release -p fmerge-runtime --test hostile`.

mod support;

use fmerge_runtime::{BoxResponse, Bytes, Error, Input, Request, Response, invoke};
use fmerge_testkit::dataplane::{self, ProbeServer, ResidentKib, method_flood, probe};
use fmerge_testkit::{CALLER_KEY, Gateway, free_port};
use std::process::Command;
use support::{caller_sig, get, merge_locally, probe_on, unix_now};

fn metrics_text(port: u16) -> String {
    get(port, "/metrics", &[]).body
}

#[test]
fn a_flood_of_made_up_methods_is_one_unknown_label() {
    let ProbeServer { server: s, metrics } = probe(&[]);
    let statuses = method_flood(s.port, 3000);
    assert_eq!(statuses, vec![200; 3001]);
    let text = metrics_text(metrics);
    let series = text
        .lines()
        .filter(|l| l.starts_with("http_requests_total{"))
        .count();
    eprintln!(
        "3000 made-up methods: {series} series, {} bytes of metrics",
        text.len()
    );
    assert!(
        text.contains(r#"code="200",method="unknown"} 3000"#),
        "{text}"
    );
    assert!(series <= 2, "{series} series:\n{text}");
    assert!(text.len() < 16 << 10, "{} bytes", text.len());
}

#[test]
fn a_forged_caller_header_creates_no_label() {
    let ProbeServer { server: s, metrics } = probe(&[]);
    for i in 0..100 {
        let forged = format!("attacker-{i}");
        let r = get(s.port, "/echo", &[("X-Fmerge-Caller", &forged)]);
        assert_eq!(r.status, 200);
    }
    // With a signature copied from another name, or made up.
    let fake = [
        ("X-Fmerge-Caller", "write-home-timeline"),
        ("X-Fmerge-Caller-Sig", "t=1700000000,s=00ff"),
    ];
    get(s.port, "/echo", &fake);
    let text = metrics_text(metrics);
    assert!(!text.contains("attacker"), "{text}");
    assert!(!text.contains(r#"caller="write-home-timeline""#), "{text}");
    assert!(
        text.contains(r#"caller="unverified",code="200",method="get"} 101"#),
        "{text}"
    );
}

#[test]
fn a_caller_key_too_short_or_an_unimplemented_of_watchdog_setting_stops_the_start() {
    for (key, value, says) in [
        ("jwt_auth", "true", "jwt_auth=true"),
        ("mode", "streaming", "mode=\"streaming\""),
        ("ready_path", "/ready", "ready_path"),
        (fmerge_contract::CALLER_KEY_VAR, "short", "at least 16"),
    ] {
        let out = Command::new(dataplane::example_binary("fmerge-runtime", "probe"))
            .env("port", free_port().to_string())
            .env("metrics_port", "0")
            .env(key, value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}={value}: {stderr}");
        assert!(stderr.contains(says), "{key}={value}: {stderr}");
        assert!(stderr.contains("\nfix: "), "{key}={value}: {stderr}");
        assert!(!stderr.contains("listening"), "{key}={value}: {stderr}");
    }
}

#[test]
fn a_bad_call_id_is_neither_logged_nor_passed_on_and_a_callee_reply_is_read_up_to_a_limit() {
    let callee_port = free_port();
    let gateway = Gateway::start(&[("callee", callee_port)]);
    let _callee = probe_on(callee_port, &[]);
    let ProbeServer { server: caller, .. } = probe(&[
        ("GATEWAY_URL", &gateway.url()),
        ("FMERGE_ACCESS_LOG", "1"),
        ("FMERGE_INVOKE_MAX_REPLY_BYTES", "1048576"),
    ]);
    let long = "x".repeat(200);
    for bad in ["a b c", "id\"quoted", long.as_str()] {
        let r = get(
            caller.port,
            "/invoke?target=callee&path=/echo",
            &[("X-Call-Id", bad)],
        );
        assert_eq!(r.status, 200, "{r:?}");
        let echo: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert!(echo["headers"].get("x-call-id").is_none(), "{bad}: {echo}");
    }
    let good = get(
        caller.port,
        "/invoke?target=callee&path=/echo",
        &[("X-Call-Id", "0b5c-11ef:a/b+c=")],
    );
    let echo: serde_json::Value = serde_json::from_str(&good.body).unwrap();
    assert_eq!(echo["headers"]["x-call-id"], "0b5c-11ef:a/b+c=");
    let log = caller.output();
    assert!(!log.contains("[a b]"), "{log}");
    assert!(!log.contains(&long), "{log}");
    assert!(log.contains("[0b5c-11ef:a/b+c=]"), "{log}");
    // 2 MiB from the callee against a 1 MiB limit: refused, named.
    let big = get(
        caller.port,
        "/invoke?target=callee&path=/big%3Fkb%3D2048",
        &[],
    );
    assert_eq!(big.status, 502, "{big:?}");
    assert!(
        big.body.contains("FMERGE_INVOKE_MAX_REPLY_BYTES"),
        "{big:?}"
    );
    let small = get(
        caller.port,
        "/invoke?target=callee&path=/big%3Fkb%3D512",
        &[],
    );
    assert_eq!(small.status, 200);
    assert_eq!(small.body.len(), 512 << 10);
}

async fn local(_: Request) -> Result<Response, Error> {
    Ok(Response::new(Bytes::from_static(b"the local echo")))
}

fn local_entry(input: Input) -> BoxResponse {
    fmerge_runtime::run_handler("echo", local, input)
}

#[test]
fn a_merged_name_in_another_namespace_goes_to_that_namespace() {
    // Once, before any `invoke`: the only test here that invokes.
    merge_locally("echo", local_entry);
    let staging_port = free_port();
    let gateway = Gateway::start(&[("echo.staging", staging_port)]);
    let _staging = probe_on(staging_port, &[]);
    // SAFETY: no other thread of this test reads the environment yet.
    unsafe { std::env::set_var("GATEWAY_URL", gateway.url()) };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for name in ["echo", "echo.openfaas-fn"] {
            let reply = invoke(name, "{}").await.unwrap();
            assert_eq!(&reply[..], b"the local echo", "{name}");
        }
        // The probe in staging answers POST / with a 404 of its own.
        let err = invoke("echo.staging", "{}").await.unwrap_err();
        assert!(err.message().contains("no route /"), "{err}");
    });
    assert_eq!(gateway.requests_for("echo.staging"), 1);
}

/// The longest line `text` holds.
fn longest_line(text: &str) -> usize {
    text.lines().map(str::len).max().unwrap_or(0)
}

#[test]
fn a_32_mib_bad_json_string_gets_a_short_400_and_log_line_in_bounded_memory() {
    let port = free_port();
    let s = probe_on(port, &[("max_body_size", "40000000")]);
    let mut body = vec![b'a'; 32 << 20];
    body[0] = b'"';
    *body.last_mut().unwrap() = b'"';
    let ResidentKib { now: before, .. } = dataplane::rss_kib(s.pid());
    let reply = dataplane::request(port, "POST", "/json", &[], &body).unwrap();
    assert_eq!(
        reply.status,
        400,
        "{}",
        &reply.body[..reply.body.len().min(300)]
    );
    let error = support::error_of(&reply.body);
    assert!(
        error.starts_with(r#"malformed JSON request: invalid type: string "aaaa"#),
        "{}",
        &error[..error.len().min(300)]
    );
    assert!(
        error.contains("… at line 1 column "),
        "{}",
        &error[..error.len().min(300)]
    );
    assert!(
        reply.body.len() < 1200,
        "a reply of {} bytes",
        reply.body.len()
    );
    assert!(
        longest_line(&s.output()) < 1200,
        "a log line of {} bytes",
        longest_line(&s.output())
    );
    // The body itself (32 MiB, counted in max_buffered_bytes) and little
    // else: serde's rendering of the whole string would be 32 MiB more at
    // least, the reply and the log line as much again.
    let ResidentKib { peak, .. } = dataplane::rss_kib(s.pid());
    assert!(
        peak < before + (32 << 10) + (24 << 10),
        "peak {peak} KiB, {before} KiB before"
    );
}

#[test]
fn a_panic_with_a_huge_payload_is_logged_short_and_replied_with_a_stable_message() {
    let port = free_port();
    let s = probe_on(port, &[]);
    let payload = "p".repeat(4 << 20);
    let reply = dataplane::request(port, "POST", "/panic", &[], payload.as_bytes()).unwrap();
    let start = &reply.body[..reply.body.len().min(300)];
    assert_eq!(reply.status, 500, "{start}");
    assert!(
        reply.body == r#"{"error":"function fmerge-runtime panicked"}"#,
        "{start}"
    );
    let output = s.output();
    assert!(
        output.contains("fmerge-runtime: function fmerge-runtime panicked: ppp"),
        "{}",
        &output[..output.len().min(2000)]
    );
    assert!(
        longest_line(&output) < 4200,
        "a log line of {} bytes",
        longest_line(&output)
    );
    // The process serves on.
    assert_eq!(get(port, "/echo", &[]).status, 200);
}

#[test]
fn a_caller_signature_replayed_past_a_short_window_is_unverified() {
    let ProbeServer { server: s, metrics } = probe(&[]);
    let now = unix_now();
    // A signature seen a minute ago, replayed; and one made now.
    for (caller, t) in [("replayed", now - 60), ("fresh", now)] {
        let sig = caller_sig(caller, PROBE, "GET", "/echo", t);
        let headers = [("X-Fmerge-Caller", caller), ("X-Fmerge-Caller-Sig", &sig)];
        assert_eq!(get(s.port, "/echo", &headers).status, 200);
    }
    let text = metrics_text(metrics);
    assert!(!text.contains(r#"caller="replayed""#), "{text}");
    assert!(text.contains(r#"caller="fresh""#), "{text}");
    assert!(text.contains(r#"caller="unverified""#), "{text}");
}

/// The probe function's name, as callers sign for it.
const PROBE: &str = "fmerge-runtime";

#[test]
fn a_caller_signature_proves_only_its_own_call_and_never_reaches_the_handler() {
    use hmac::Mac;
    let ProbeServer { server: s, metrics } = probe(&[]);
    let now = unix_now();
    // Made for another function, for another request line, and one that
    // covers the caller and time only (captured from any call).
    let elsewhere = caller_sig("elsewhere", "another-function", "GET", "/echo", now);
    let other_line = caller_sig("other-line", PROBE, "GET", "/echo?x=1", now);
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(CALLER_KEY.as_bytes()).unwrap();
    mac.update(format!("captured\n{now}").as_bytes());
    let captured = format!("t={now},s={}", hex::encode(mac.finalize().into_bytes()));
    let this_call = caller_sig("this-call", PROBE, "GET", "/echo", now);
    for (caller, sig) in [
        ("elsewhere", &elsewhere),
        ("other-line", &other_line),
        ("captured", &captured),
        ("this-call", &this_call),
    ] {
        let headers = [("X-Fmerge-Caller", caller), ("X-Fmerge-Caller-Sig", sig)];
        let r = get(s.port, "/echo", &headers);
        assert_eq!(r.status, 200, "{r:?}");
        assert!(
            !r.body.to_lowercase().contains("x-fmerge-caller-sig"),
            "the handler saw the signature: {}",
            r.body
        );
    }
    let text = metrics_text(metrics);
    for refused in ["elsewhere", "other-line", "captured"] {
        assert!(!text.contains(&format!(r#"caller="{refused}""#)), "{text}");
    }
    assert!(text.contains(r#"caller="this-call""#), "{text}");
}
