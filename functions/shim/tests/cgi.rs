//! What a member sees of a call, checked against of-watchdog 0.11.6's
//! `getEnvironment` and config.go.

use std::ffi::OsString;
use std::time::Duration;

use fmerge_shim::cgi::{self, Call, GoDuration};
use fmerge_shim::member;

#[test]
fn headers_are_canonicalized_as_go_does() {
    assert_eq!(cgi::canonical_key("content-type"), "Content-Type");
    assert_eq!(cgi::canonical_key("X-CALL-ID"), "X-Call-Id");
    assert_eq!(cgi::canonical_key("x_forwarded"), "X_forwarded");
    assert_eq!(cgi::canonical_key("bad key"), "bad key");
}

#[test]
fn namespaced_prefix_upper_cases_and_replaces() {
    assert_eq!(
        cgi::namespaced_prefix("social-graph-get-followers"),
        "SOCIAL_GRAPH_GET_FOLLOWERS__"
    );
    assert_eq!(cgi::namespaced_prefix("a.b_c9"), "A_B_C9__");
}

#[test]
fn function_targets_split_into_name_path_and_query() {
    assert_eq!(
        cgi::function_target("/function/echo"),
        Some(("echo", "", None))
    );
    assert_eq!(
        cgi::function_target("/function/echo/a/b?x=1"),
        Some(("echo", "/a/b", Some("x=1")))
    );
    assert_eq!(
        cgi::function_target("/function/echo.openfaas-fn?"),
        Some(("echo.openfaas-fn", "", Some("")))
    );
    assert_eq!(
        cgi::function_target("http://gw:8080/function/echo/"),
        Some(("echo", "/", None))
    );
    assert_eq!(cgi::function_target("/system/functions"), None);
    assert_eq!(cgi::function_target("/function/"), None);
    assert_eq!(cgi::decode_path("/a%20b"), "/a b");
    assert_eq!(cgi::decode_path("/a%zz"), "/a%zz");
}

fn call() -> Call {
    Call {
        name: "social-graph-get-followers".into(),
        method: "POST".into(),
        path: "/".into(),
        query: Some("a=1".into()),
        headers: vec![
            ("Host".into(), "gw".into()),
            ("content-type".into(), "text/plain".into()),
            ("X-Call-Id".into(), "first".into()),
            ("x-call-id".into(), "second".into()),
            ("Transfer-Encoding".into(), "chunked".into()),
        ],
        body: Vec::new(),
        chunked: true,
    }
}

#[test]
fn cgi_variables_match_get_environment() {
    let vars = cgi::cgi_vars(&call());
    let want = [
        ("Http_Content_Type", "text/plain"),
        ("Http_X_Call_Id", "first"),
        ("Http_Method", "POST"),
        ("Http_Query", "a=1"),
        ("Http_Path", "/"),
        ("Http_Transfer_Encoding", "chunked"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(vars, want);
    let no_query = Call {
        query: None,
        chunked: false,
        headers: Vec::new(),
        ..call()
    };
    assert!(
        cgi::cgi_vars(&no_query)
            .iter()
            .all(|(k, _)| k != "Http_Query" && k != "Http_Transfer_Encoding")
    );
}

#[test]
fn member_env_drops_caller_cgi_and_maps_namespaced_settings() {
    let os = |k: &str, v: &str| (OsString::from(k), OsString::from(v));
    let base = vec![
        os("PATH", "/bin"),
        os("Http_Path", "/caller"),
        os("FMERGE_RUN_MEMBER", "x"),
        os("SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_ADDR", "r:6379"),
        os("REDIS_ADDR", "caller:6379"),
        os("CALLER_ONLY", "the caller's own"),
        os("HOSTNAME", "the pod's"),
    ];
    let env = cgi::member_env(base, &call(), &["CALLER_ONLY", "REDIS_ADDR"]);
    let get = |k: &str| {
        env.iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.to_str().unwrap().to_string())
    };
    assert_eq!(get("PATH").as_deref(), Some("/bin"));
    assert_eq!(get("REDIS_ADDR").as_deref(), Some("r:6379"));
    // What the caller's deployment sets is its own; the pod's stays.
    assert_eq!(get("CALLER_ONLY"), None);
    assert_eq!(get("HOSTNAME").as_deref(), Some("the pod's"));
    assert_eq!(get("Http_Path").as_deref(), Some("/"));
    // The caller's own marker never reaches a member's process.
    assert_eq!(get("FMERGE_RUN_MEMBER"), None);
    assert_eq!(env.iter().filter(|(k, _)| k == "Http_Path").count(), 1);
}

#[test]
fn durations_parse_as_of_watchdog_does() {
    let d = |s: &str| cgi::parse_watchdog_duration(s).map(GoDuration::timeout);
    assert_eq!(d("10"), Some(Some(Duration::from_secs(10))));
    assert_eq!(d("10s"), Some(Some(Duration::from_secs(10))));
    assert_eq!(d("500ms"), Some(Some(Duration::from_millis(500))));
    assert_eq!(d("2m"), Some(Some(Duration::from_secs(120))));
    assert_eq!(d("1h2m3.5s"), Some(Some(Duration::from_millis(3_723_500))));
    assert_eq!(d("1.5us"), Some(Some(Duration::from_nanos(1500))));
    assert_eq!(d("0"), Some(None));
    assert_eq!(d("-1s"), Some(None));
    for bad in ["", "-1", "10x", "s", "1.2.3s", ".s"] {
        assert_eq!(d(bad), None, "{bad}");
    }
}

#[test]
fn settings_default_as_of_watchdog() {
    let env = vec![(OsString::from("ECHO__exec_timeout"), OsString::from("2s"))];
    let s = member::settings("echo", &env);
    assert_eq!(s.content_type, "application/octet-stream");
    assert_eq!(s.timeout, Some(Duration::from_secs(2)));
    let s = member::settings("other", &env);
    assert_eq!(s.timeout, Some(member::DEFAULT_EXEC_TIMEOUT));
}
