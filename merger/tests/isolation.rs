//! A callee that blocks its thread (`std::thread::sleep`, blocking file I/O)
//! would stall the merged caller's handler threads: `fmerge build` finds it
//! and runs it on threads of its own, and `FMERGE_ISOLATE` overrides what it
//! found. What it finds is what each fixture callee's code does: the
//! callees that only look as if they might block are not flagged, those
//! that block are, with the chain of calls from the handler. The `blocking`
//! fixture, merged, on 127.0.0.1.
//!
//! Run: `cargo test --release -p fmerge --test isolation`

mod support;

use std::path::Path;
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::merge_in as merge;
use support::{BuiltBinary, Function, HttpReply, assert_says, fixture, free_port, get, post};

/// Callees that do not block their thread, though each does something the
/// name list this check once was took for blocking.
const CALM: &[&str] = &[
    "bl-async-redis",
    "bl-reqwest",
    "bl-once",
    "bl-fd",
    "bl-offload",
];
/// Callees that block their thread.
const BLOCKING: &[&str] = &[
    "bl-sleep",
    "bl-sync-redis",
    "bl-sync-http",
    "bl-fs-read",
    "bl-busy",
];

/// fmerge's stderr for bl-front merged with `callees` (a group above), one
/// merge per group for all the tests, in one fixture workspace (one cargo
/// build of the group's crates).
fn merged_with(callees: &'static [&'static str]) -> &'static str {
    static CALM_OUT: OnceLock<String> = OnceLock::new();
    static BLOCKING_OUT: OnceLock<String> = OnceLock::new();
    let out = if callees == CALM {
        &CALM_OUT
    } else {
        &BLOCKING_OUT
    };
    out.get_or_init(|| {
        let ws = support::shared_fixture("blocking");
        let functions: Vec<&str> = std::iter::once("bl-front")
            .chain(callees.iter().copied())
            .collect();
        let dir = ws.join(callees[0]);
        // bl-front calls bl-slow only: the others are merged to have their
        // handlers judged.
        let args = ["--out", dir.to_str().unwrap(), "--allow-uncalled"];
        support::merged(ws, &[functions.as_slice(), &args].concat()).stderr
    })
}

/// The warning that `callee` blocks its thread and so runs isolated, if
/// fmerge gave one.
fn blocking_warning<'a>(stderr: &'a str, callee: &str) -> Option<&'a str> {
    stderr.lines().find(|l| {
        l.contains(&format!("warning: {callee} (crate "))
            && l.contains("runs on threads of its own")
    })
}

/// `callee` of [`CALM`] is merged and not found blocking.
fn calm(callee: &str) {
    let stderr = merged_with(CALM);
    assert!(
        stderr.contains(&format!("{callee} ")),
        "{callee} was merged:\n{stderr}"
    );
    assert_eq!(blocking_warning(stderr, callee), None, "{stderr}");
}

/// `callee` of [`BLOCKING`] is found blocking, by a chain holding each of `chain`.
fn blocks(callee: &str, chain: &[&str]) {
    let stderr = merged_with(BLOCKING);
    let warning = blocking_warning(stderr, callee)
        .unwrap_or_else(|| panic!("no warning that {callee} blocks its thread:\n{stderr}"));
    assert_says(warning, chain);
}

#[test]
fn async_redis_connections_opened_and_dropped_per_request_do_not_block() {
    calm("bl-async-redis");
}

#[test]
fn a_reqwest_client_whose_tls_set_up_probes_certificate_files_once_does_not_block() {
    calm("bl-reqwest");
}

#[test]
fn one_time_initialisation_in_oncelock_and_lazylock_does_not_block() {
    calm("bl-once");
}

#[test]
fn closing_descriptors_does_not_block() {
    calm("bl-fd");
}

#[test]
fn work_handed_to_spawn_blocking_and_tokio_fs_does_not_block() {
    calm("bl-offload");
}

#[test]
fn thread_sleep_blocks() {
    blocks(
        "bl-sleep",
        &["bl-sleep's handler → `std::thread::functions::sleep` (it waits)"],
    );
}

#[test]
fn a_synchronous_redis_connection_blocks() {
    blocks(
        "bl-sync-redis",
        &[
            "bl-sync-redis's handler → `redis::client::Client::get_connection`",
            "`connect` (it waits on a descriptor or a file)",
        ],
    );
}

#[test]
fn synchronous_http_over_std_net_blocks() {
    blocks(
        "bl-sync-http",
        &[
            "bl-sync-http's handler → `ureq::",
            "`<std::net::tcp::TcpStream>::connect",
        ],
    );
}

#[test]
fn a_std_fs_read_per_request_blocks() {
    blocks(
        "bl-fs-read",
        &[
            "bl-fs-read's handler → `std::fs::read_to_string::inner` (it waits on a descriptor or a file)",
        ],
    );
}

#[test]
fn a_busy_loop_on_the_clock_blocks() {
    blocks(
        "bl-busy",
        &["bl-busy's handler (a busy loop that waits on the clock)"],
    );
}

/// Sends `n` calls to bl-front that bl-slow holds until `latch/go` exists,
/// and waits until `started` of them are blocked in bl-slow.
fn latched(
    url: &str,
    latch: &Path,
    n: usize,
    started: usize,
    merged: &Function,
) -> Vec<JoinHandle<HttpReply>> {
    let calls = (0..n)
        .map(|_| {
            let (url, body) = (url.to_string(), format!("latch:{}", latch.display()));
            std::thread::spawn(move || post(&url, &body))
        })
        .collect();
    let blocked = || std::fs::read_dir(latch).unwrap().count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while blocked() < started && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        blocked() >= started,
        "bl-slow's threads are not all blocked\n{}",
        merged.output()
    );
    calls
}

/// The merged binary serving bl-front on `port` with `env`, and no gateway
/// to call.
fn front(binary: &Path, port: u16, env: &[(&str, &str)]) -> Function {
    let gateway = [("GATEWAY_URL", "http://127.0.0.1:9")];
    Function::start(
        binary,
        "bl-front",
        port,
        env.iter().chain(&gateway).copied(),
    )
}

/// Lets the calls [`latched`] holds go on, and expects each to be answered.
fn release(latch: &Path, blocked: Vec<JoinHandle<HttpReply>>) {
    std::fs::write(latch.join("go"), b"").unwrap();
    for call in blocked {
        assert_eq!(call.join().unwrap(), HttpReply::new(200, "released"));
    }
}

#[test]
fn a_callee_that_blocks_its_thread_is_found_and_isolated_by_default_and_fmerge_isolate_overrides() {
    let ws = fixture("blocking", &[]);
    let BuiltBinary { binary, stderr } = merge(ws.path(), &["bl-front", "bl-slow"], &[]);
    assert_says(
        &stderr,
        &[
            "bl-slow (crate bl_slow) blocks its thread: bl-slow's handler → `std::fs::write::inner`",
            "runs on threads of its own",
            "FMERGE_ISOLATE",
        ],
    );
    // By default: isolated, so the caller answers while its callee blocks.
    let latch = tempfile::tempdir().unwrap();
    let port = free_port();
    let merged = front(&binary, port, &[("TOKIO_WORKER_THREADS", "2")]);
    let url = format!("{}/", merged.url());
    let blocked = latched(&url, latch.path(), 4, 2, &merged);
    assert_eq!(
        post(&url, "ping"),
        HttpReply::new(200, "pong"),
        "{}",
        merged.output()
    );
    assert!(!latch.path().join("go").exists());
    release(latch.path(), blocked);
    assert_says(&merged.output(), &["bl-slow run on threads of their own"]);
    drop(merged);

    // FMERGE_ISOLATE=none: nothing isolated, and two blocked calls
    // hold both of the caller's handler threads, so the ping waits for them.
    let latch = tempfile::tempdir().unwrap();
    let merged = front(
        &binary,
        port,
        &[("FMERGE_ISOLATE", "none"), ("TOKIO_WORKER_THREADS", "2")],
    );
    let blocked = latched(&url, latch.path(), 2, 2, &merged);
    let ping = {
        let url = url.clone();
        std::thread::spawn(move || post(&url, "ping"))
    };
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(
        !ping.is_finished(),
        "the ping was answered while both handler threads were blocked: bl-slow ran isolated"
    );
    release(latch.path(), blocked);
    assert_eq!(ping.join().unwrap(), HttpReply::new(200, "pong"));
    assert!(
        !merged.output().contains("run on threads of their own"),
        "{}",
        merged.output()
    );
}

#[test]
fn a_callee_that_blocks_its_thread_can_be_isolated_so_the_caller_keeps_answering() {
    let ws = fixture("blocking", &[]);
    let BuiltBinary { binary, .. } = merge(ws.path(), &["bl-front", "bl-slow"], &[]);
    let latch = tempfile::tempdir().unwrap();
    let port = free_port();
    let merged = front(
        &binary,
        port,
        &[
            // `nope` is not merged: said, and ignored.
            ("FMERGE_ISOLATE", "bl-slow, nope"),
        ],
    );
    let url = format!("{}/", merged.url());
    // More blocked calls than the caller has worker threads (one per core):
    // without isolation every one of them would be stuck, and so the ping.
    let blocked = latched(&url, latch.path(), 4, 2, &merged);
    assert_eq!(
        post(&url, "ping"),
        HttpReply::new(200, "pong"),
        "the caller answers while its callee blocks"
    );
    assert!(
        !latch.path().join("go").exists(),
        "and the callee was still blocked then"
    );
    release(latch.path(), blocked);
    assert_says(
        &merged.output(),
        &["FMERGE_ISOLATE names nope, which is not merged into this binary (bl-slow)"],
    );
}

#[test]
fn an_isolated_callee_with_every_thread_stuck_past_exec_timeout_takes_the_pod_out_of_rotation() {
    let ws = fixture("blocking", &[]);
    let BuiltBinary { binary, .. } = merge(ws.path(), &["bl-front", "bl-slow"], &[]);
    let latch = tempfile::tempdir().unwrap();
    let (port, metrics_port) = (free_port(), free_port());
    let metrics = metrics_port.to_string();
    let merged = front(
        &binary,
        port,
        &[
            ("BL_SLOW__exec_timeout", "1s"),
            ("FMERGE_ISOLATE_THREADS", "2"),
            ("metrics_port", &metrics),
        ],
    );
    let url = format!("{}/", merged.url());
    let ready = format!("{}/_/ready", merged.url());
    assert_eq!(get(&ready).status, 200);
    // Both of bl-slow's threads blocked, and past its exec_timeout.
    let blocked = latched(&url, latch.path(), 2, 2, &merged);
    let until = |status: u16| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&ready).status != status && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        get(&ready).status
    };
    assert_eq!(until(503), 503, "ready while stuck\n{}", merged.output());
    assert_eq!(get(&format!("{}/_/health", merged.url())).status, 200);
    let gauges = get(&format!("http://127.0.0.1:{metrics_port}/metrics")).body;
    assert_says(
        &gauges,
        &[
            r#"fmerge_isolated_threads_stuck{function="bl-slow"} 2"#,
            r#"fmerge_isolated_threads{function="bl-slow"} 2"#,
        ],
    );
    // The calls got bl-slow's 504 at its exec_timeout (bl-front's 500);
    // the threads come back.
    std::fs::write(latch.path().join("go"), b"").unwrap();
    for call in blocked {
        let HttpReply { status, body } = call.join().unwrap();
        assert_eq!(status, 500, "{body}");
        assert!(
            body.contains("function bl-slow answered HTTP 504"),
            "{body}"
        );
    }
    assert_eq!(until(200), 200, "{}", merged.output());
    assert_eq!(post(&url, "sleep:1"), HttpReply::new(200, "slept 1"));
}

#[test]
fn a_bad_fmerge_isolate_threads_stops_the_start_naming_it() {
    let ws = fixture("blocking", &[]);
    let BuiltBinary { binary, .. } = merge(ws.path(), &["bl-front", "bl-slow"], &[]);
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = std::process::Command::new(&binary)
        .env("port", free_port().to_string())
        .env("listen_address", "127.0.0.1")
        .env("metrics_port", "0")
        .env("FMERGE_ISOLATE_THREADS", "zero")
        .stdout(std::process::Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    // A start that goes on serving would never exit: stopped after a while.
    let status = fmerge_testkit::exit_within(&mut child, Duration::from_secs(30));
    let stderr = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{stderr}");
    assert_says(
        &stderr,
        &[
            "FMERGE_ISOLATE_THREADS=\"zero\" is not a positive number",
            "fix: ",
        ],
    );
}
