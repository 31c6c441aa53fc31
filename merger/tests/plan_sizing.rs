//! `fmerge plan --metrics URL`: fmerge scrapes each pod's metrics endpoint
//! itself over `--metrics-window`, on its own clock, and sizes the merged
//! pod from what the pods used in that window: cpu from the counters'
//! increase over fmerge's own seconds, memory at its peak over every
//! scrape of the window (one between the ends included).
//!
//! The first test's pods are HTTP servers on 127.0.0.1 that answer each
//! `GET /metrics` as the runtime would at that moment: counters that grow
//! with the time since they started, and a resident memory that peaks
//! once, so that the figures are known exactly. The last runs a real pod:
//! `media` on fmerge-runtime, its requests driven through the window.
//!
//! Run: `cargo test --release -p fmerge --test plan_sizing`

#[path = "support/graphs.rs"]
mod graphs;
#[allow(dead_code)] // support is shared by all tests; these use only some of it
mod support;

use fmerge::graph::Graph;
use graphs::{edge, front_and_mid, function, graph};
use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use support::*;

const MIB: u64 = 1 << 20;

/// A pod of `function` on a port of its own: at each scrape, `requests`
/// requests a second from `caller` since it started, `cores` cores of cpu
/// used as long, and `memory(k)` bytes resident at its k-th scrape. Its
/// metrics URL.
fn pod(
    function: &'static str,
    caller: &'static str,
    cores: f64,
    memory: fn(usize) -> u64,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let started = Instant::now();
    std::thread::spawn(move || {
        for (k, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut head = [0u8; 1024];
            let _ = stream.read(&mut head);
            let seconds = started.elapsed().as_secs_f64();
            let body = format!(
                "# TYPE http_requests counter\n\
                 http_requests_total{{function=\"{function}\",caller=\"{caller}\",code=\"200\"}} {}\n\
                 process_cpu_seconds_total {}\n\
                 process_resident_memory_bytes {}\n# EOF\n",
                (seconds * 100.0).floor(),
                cores * seconds,
                memory(k)
            );
            let _ = write!(
                stream,
                "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// `fmerge plan` of `graph` (written into `dir`), its traffic scraped from
/// `endpoints` over `window` seconds, by calls at 1 ms a hop; asserts that
/// it planned. Its stdout and its plan.json.
fn plan_from_scrapes(
    dir: &Path,
    graph: &Graph,
    endpoints: &[&str],
    window: &str,
) -> (String, serde_json::Value) {
    let path = dir.join("calls.json");
    std::fs::write(&path, serde_json::to_string(graph).unwrap()).unwrap();
    let out = dir.join("plan");
    let mut args = vec!["plan", "--graph", path.to_str().unwrap()];
    for endpoint in endpoints {
        args.extend(["--metrics", endpoint]);
    }
    args.extend(["--metrics-window", window, "--objective", "calls"]);
    args.extend(["--hop-ms", "1", "--out", out.to_str().unwrap()]);
    let Ran { ok, stdout, stderr } = fmerge_cli(dir, &args);
    assert!(ok, "fmerge {args:?} failed:\n{stderr}");
    let plan = std::fs::read_to_string(out.join("plan.json")).unwrap();
    (stdout, serde_json::from_str(&plan).unwrap())
}

#[test]
fn fmerge_scrapes_the_pods_itself_and_sizes_the_merged_pod_from_the_window() {
    // front: 0.25 core, 20Mi at every scrape. mid: 0.5 core, 10Mi but
    // 40Mi at the scrape 5 s into the window (neither end sees it).
    let front = pod("front", "external", 0.25, |_| 20 * MIB);
    let mid = pod("mid", "front", 0.5, |k| {
        if k == 1 { 40 * MIB } else { 10 * MIB }
    });
    let dir = tempfile::tempdir().unwrap();
    let (stdout, json) = plan_from_scrapes(dir.path(), &front_and_mid(), &[&front, &mid], "6");
    let pod = &json["cluster"]["pods"][0];
    assert_eq!(pod["caller"], "front", "{json:#}\n{stdout}");
    // Cpu: 0.75 core of work, with the 25% headroom, on fmerge's clock (the
    // stamps are the midpoints of its requests: a few ms either way).
    let cpu = &pod["requests"]["cpu"];
    assert_eq!(cpu["from"], "measured", "{pod:#}\n{stdout}");
    let cores = cpu["amount"].as_f64().unwrap();
    assert!((cores - 0.75 * 1.25).abs() < 0.05, "{pod:#}");
    // Memory: the part every process holds (front's 20Mi, the least) once,
    // and mid's peak of 40Mi beyond it, with the headroom: 50Mi. From the
    // window's ends alone it would be 25Mi.
    let memory = &pod["requests"]["memory"];
    assert_eq!(memory["from"], "measured", "{pod:#}");
    assert_eq!(
        memory["amount"].as_f64(),
        Some(50.0 * MIB as f64),
        "{pod:#}"
    );
    assert!(
        !stdout.contains("from one scrape"),
        "the window's memory is not one instant:\n{stdout}"
    );
}

#[test]
fn endpoints_are_checked_before_the_window_starts() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("calls.json");
    std::fs::write(&graph, serde_json::to_string(&front_and_mid()).unwrap()).unwrap();
    let g = graph.to_str().unwrap();
    let front = pod("front", "external", 0.25, |_| 20 * MIB);
    for (args, says) in [
        (
            vec!["--metrics", "https://pod:8081/metrics"],
            "only plain http:// is scraped",
        ),
        (
            vec!["--metrics", &front, "--metrics", "m.txt"],
            "--metrics was given both files and endpoints",
        ),
        (
            vec!["--metrics", &front, "--metrics-window", "0.5"],
            "the window must be a second or more",
        ),
        (
            vec!["--metrics", "m.txt", "--metrics-window", "30"],
            "--metrics-window 30 was given with --metrics files",
        ),
        (
            // A closed port: refused at the first scrape, not after the window.
            vec![
                "--metrics",
                "http://127.0.0.1:9/metrics",
                "--metrics-window",
                "600",
            ],
            "--metrics http://127.0.0.1:9/metrics: cannot connect",
        ),
    ] {
        let started = Instant::now();
        let mut all = vec!["plan", "--graph", g];
        all.extend(args);
        cli_refuses(dir.path(), &all, &[says, "\nfix: "]);
        assert!(started.elapsed().as_secs() < 60, "{all:?} waited");
    }
    // A graph file that is no graph, before any scrape.
    let started = Instant::now();
    let metrics = ["--metrics", &front, "--metrics-window", "600"];
    let mut all = vec!["plan", "--graph", "m.txt"];
    all.extend(metrics);
    std::fs::write(dir.path().join("m.txt"), "not a graph").unwrap();
    let Ran { ok, stderr, .. } = fmerge_cli(dir.path(), &all);
    assert!(!ok && stderr.contains("m.txt"), "{stderr}");
    assert!(started.elapsed().as_secs() < 60, "{all:?} waited");
}

#[test]
fn a_real_runtime_pods_usage_sizes_its_merged_pod() {
    let (port, metrics_port) = (free_port(), free_port());
    let media = Function::start(
        function_binary("media"),
        "media",
        port,
        [("metrics_port", metrics_port.to_string())],
    );
    // Requests one after another until the plan is made.
    let done = Arc::new(AtomicBool::new(false));
    let (url, stop) = (media.url(), done.clone());
    let load = std::thread::spawn(move || {
        let body = r#"{"media_ids": [1, 2], "media_types": ["png", "jpg"]}"#;
        while !stop.load(Ordering::Relaxed) {
            assert_eq!(post(&url, body).status, 200);
        }
    });
    // media calls x, which is not scraped; 2 cores and 0.5 of limit (one
    // client's requests one after another keep media under one core).
    let mut graph = graph(
        vec![function("media", "64Mi"), function("x", "64Mi")],
        vec![edge("media", "x")],
        1,
    );
    (graph.functions[0].cpu, graph.functions[1].cpu) = (Some(2.0), Some(0.5));
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{metrics_port}/metrics");
    let (stdout, json) = plan_from_scrapes(dir.path(), &graph, &[&endpoint], "2");
    done.store(true, Ordering::Relaxed);
    load.join().unwrap();
    let pod = &json["cluster"]["pods"][0];
    assert_eq!(pod["caller"], "media", "{json:#}");
    // media measured (its cpu over the window, its resident memory), x at
    // its own limits: more than x's alone.
    for (resource, x) in [("cpu", 0.5), ("memory", 64.0 * MIB as f64)] {
        let figure = &pod["requests"][resource];
        assert_eq!(figure["from"], "mixed", "{pod:#}\n{stdout}");
        assert!(figure["amount"].as_f64().unwrap() > x, "{pod:#}");
    }
    assert_says(
        &stdout,
        &["sized from the stack's figures (requests, else limits): x (not scraped)"],
    );
}
