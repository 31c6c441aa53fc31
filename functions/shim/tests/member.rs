//! The real member runner, with a shell script standing in for the merged
//! binary: the process gets the body, the CGI variables and its namespaced
//! settings, and its end shapes the reply as of-watchdog's runners do. One
//! test, so that no other thread forks while the script is still open for
//! writing (that makes exec fail with ETXTBSY).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use fmerge_shim::Mode;
use fmerge_shim::cgi::Call;
use fmerge_shim::member::{self, Reply};

const SCRIPT: &str = "#!/bin/sh\nprintf '%s|%s|%s|' \"$Http_Path\" \"$Http_Method\" \"$GREETING\"\ntr a-z A-Z\n[ -n \"$SLEEP\" ] && exec sleep \"$SLEEP\"\nexit \"${CODE:-0}\"\n";

fn run(program: &std::path::Path, mode: Mode, settings: &[(&str, &str)]) -> Reply {
    let call = Call {
        name: "echo".into(),
        method: "POST".into(),
        path: "/p".into(),
        body: b"hello".to_vec(),
        ..Call::default()
    };
    let mut env: Vec<(OsString, OsString)> =
        vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())];
    env.extend(
        settings
            .iter()
            .map(|(k, v)| (OsString::from(format!("ECHO__{k}")), OsString::from(v))),
    );
    member::run_program(program, mode, &call, env)
}

fn header<'a>(r: &'a Reply, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn members_run_as_of_watchdog_runs_them() {
    let dir = std::env::temp_dir().join(format!("fmerge-shim-member-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("member.sh");
    std::fs::write(&program, SCRIPT).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();

    let r = run(
        &program,
        Mode::Streaming,
        &[("GREETING", "hi"), ("content_type", "text/plain")],
    );
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"/p|POST|hi|HELLO"[..])
    );
    assert_eq!(header(&r, "Content-Type"), Some("text/plain"));

    // Streaming: 200 even on failure, and what was written before the kill.
    let r = run(&program, Mode::Streaming, &[("CODE", "3")]);
    assert_eq!(
        (r.status, header(&r, "Content-Type")),
        (200, Some("application/octet-stream"))
    );
    let start = Instant::now();
    let r = run(
        &program,
        Mode::Streaming,
        &[("SLEEP", "20"), ("exec_timeout", "300ms")],
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "not killed at exec_timeout"
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"/p|POST||HELLO"[..]));

    // Serializing: 500 with Go's error text, and the duration header.
    let r = run(&program, Mode::Serializing, &[("CODE", "3")]);
    assert_eq!((r.status, r.body.as_slice()), (500, &b"exit status 3"[..]));
    assert!(header(&r, "X-Duration-Seconds").is_some_and(|d| d.parse::<f64>().is_ok()));
    let r = run(
        &program,
        Mode::Serializing,
        &[("SLEEP", "20"), ("exec_timeout", "1")],
    );
    assert_eq!((r.status, r.body.as_slice()), (500, &b"signal: killed"[..]));
    let r = run(&program, Mode::Serializing, &[]);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"/p|POST||HELLO"[..]));

    let r = run(&dir.join("missing"), Mode::Serializing, &[]);
    assert_eq!(r.status, 500);
    let _ = std::fs::remove_dir_all(&dir);
}
