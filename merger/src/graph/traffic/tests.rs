//! The scrape reader's tests: edges, outside and unnamed callers, pods
//! and two scrapes, hop costs and serving times.

use super::*;

/// A scrape kept in `tests/fixtures/traffic/`: its path and its text.
fn scrape(name: &str) -> (String, String) {
    let path = format!(
        "{}/tests/fixtures/traffic/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

#[test]
fn scrape_counts_edges_and_outside_requests() {
    let text = "# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\n\
        http_requests_total{function=\"b\",caller=\"a\"} 30\n\
        http_requests_total{function=\"a\",caller=\"\"} 10\n\
        http_requests_total{function=\"b\",caller=\"a\"} 2\n\
        other_metric 5\n";
    let t = parse_prometheus(text, "m").unwrap();
    assert_eq!(t.calls[&CallPair::new("a", "b")], 32.0);
    assert_eq!(t.external["a"], 10.0);
}

/// The runtime's own exposition (prometheus-client's, with its histogram,
/// gauge and `# EOF`): its `external` caller is a request from outside.
#[test]
fn a_real_runtime_scrape_is_read() {
    let (path, text) = scrape("runtime-scrape.txt");
    let t = parse_prometheus(&text, &path).unwrap();
    assert_eq!(t.calls[&CallPair::new("compose-post", "unique-id")], 1.0);
    assert_eq!(t.calls.len(), 1);
    assert_eq!(t.external["unique-id"], 1.0);
}

/// of-watchdog 0.11.6's own exposition (in `http` mode, three requests):
/// its counter names no function and no caller, and its process figures
/// are the watchdog's, so it is refused saying whose it is.
#[test]
fn an_of_watchdog_scrape_is_refused_as_the_watchdogs() {
    let (path, text) = scrape("of-watchdog-scrape.txt");
    let e = parse_prometheus(&text, &path).unwrap_err().to_string();
    assert!(
        e.contains(r#"labelled {code="200",method="get"}, as of-watchdog counts its requests"#)
            && e.contains("\nfix: leave the pods of-watchdog serves out of --metrics"),
        "{e}"
    );
}

#[test]
fn malformed_lines_and_values_are_errors_naming_the_line() {
    let e = parse_prometheus(
        "http_requests_total{function=\"a\"} 1\nthis is { not\n",
        "m",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("line 2") && e.contains("this is { not"), "{e}");
    let e = parse_prometheus("http_requests_total{function=\"a\"} -3\n", "m")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1") && e.contains("-3"), "{e}");
    let e = parse_prometheus("up 1\n", "m").unwrap_err().to_string();
    assert!(e.contains("no http_requests_total samples"), "{e}");
    let e = parse_prometheus("http_requests_total{caller=\"a\"} 1\n", "m")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no `function` label"), "{e}");
}

#[test]
fn pods_add_up_and_two_scrapes_give_the_requests_between_them() {
    // Two pods of b (the same series twice), then, later, pod 1 went on
    // and pod 2 restarted (its counter went down).
    let before = "http_requests_total{function=\"b\",caller=\"a\"} 30\n\
        http_requests_total{function=\"b\",caller=\"a\"} 20\n\
        http_requests_total{function=\"a\",caller=\"\"} 7\n";
    let after = "http_requests_total{function=\"b\",caller=\"a\"} 45\n\
        http_requests_total{function=\"b\",caller=\"a\"} 4\n\
        http_requests_total{function=\"a\",caller=\"\"} 10\n\
        http_requests_total{function=\"c\",caller=\"a\"} 2\n";
    assert_eq!(
        parse_prometheus(before, "m").unwrap().calls[&CallPair::new("a", "b")],
        50.0
    );
    let dir = tempfile::tempdir().unwrap();
    let (b, a) = (dir.path().join("before"), dir.path().join("after"));
    std::fs::write(&b, before).unwrap();
    std::fs::write(&a, after).unwrap();
    let t = prometheus(&[b.clone(), a.clone()]).unwrap();
    // 15 more on pod 1, 4 since pod 2's restart.
    assert_eq!(t.calls[&CallPair::new("a", "b")], 19.0);
    assert_eq!(
        t.calls[&CallPair::new("a", "c")],
        2.0,
        "a new series counts whole"
    );
    assert_eq!(t.external["a"], 3.0);
    assert!(t.source.contains("minus"), "{}", t.source);
    let e = prometheus(&[b.clone(), a.clone(), b])
        .unwrap_err()
        .to_string();
    assert!(e.contains("one scrape") && e.contains("or two"), "{e}");
}

#[test]
fn hop_costs_are_the_gateway_calls_sum_over_count() {
    let text = "# TYPE fmerge_invoke_duration_seconds histogram\n\
        fmerge_invoke_duration_seconds_sum{caller=\"a\",callee=\"b\",transport=\"gateway\"} 0.3\n\
        fmerge_invoke_duration_seconds_count{caller=\"a\",callee=\"b\",transport=\"gateway\"} 100\n\
        fmerge_invoke_duration_seconds_bucket{caller=\"a\",callee=\"b\",transport=\"gateway\",le=\"+Inf\"} 100\n\
        fmerge_invoke_duration_seconds_sum{caller=\"a\",callee=\"c\",transport=\"in-process\"} 0.01\n\
        fmerge_invoke_duration_seconds_count{caller=\"a\",callee=\"c\",transport=\"in-process\"} 100\n\
        http_requests_total{function=\"b\",caller=\"a\"} 100\n";
    let t = parse_prometheus(text, "m").unwrap();
    assert_eq!(
        t.hops[&CallPair::new("a", "b")],
        Timed {
            seconds: 0.3,
            count: 100.0
        }
    );
    assert_eq!(t.hops.len(), 1, "in-process calls are no hop: {:?}", t.hops);
}

#[test]
fn the_callees_serving_time_is_read_per_caller() {
    let (path, text) = scrape("runtime-scrape.txt");
    let t = parse_prometheus(&text, &path).unwrap();
    let served = t.served[&CallPair::new("compose-post", "unique-id")];
    assert!(
        (served.seconds - 3.299856518).abs() < 1e-9 && served.count == 1.0,
        "{served:?}"
    );
    assert_eq!(t.served.len(), 2, "{:?}", t.served);
}

#[test]
fn unnamed_callers_are_inside_and_unproven_ones_outside() {
    let t = parse_prometheus(
        "http_requests_total{function=\"b\",caller=\"other\"} 5\n\
         http_requests_total{function=\"b\",caller=\"unverified\"} 2\n\
         http_requests_total{function=\"b\",caller=\"external\"} 1\n\
         http_requests_total{function=\"b\"} 1\n",
        "m",
    )
    .unwrap();
    assert_eq!(t.unnamed["b"], 5.0);
    assert_eq!(t.external["b"], 4.0);
    assert!(t.calls.is_empty());
    assert_eq!(t.covered, Some(BTreeSet::from(["b".to_string()])));
}
