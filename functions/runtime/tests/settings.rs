//! The server's settings as the process reads them (of-watchdog's names and
//! rules), and `docs/operating.md`'s settings table against the one in
//! `server_settings/table.rs`: the table's first rows are the settings'
//! rows, generated from it, and no other row names one of them.
//! `FMERGE_BLESS=1` writes the rows into the doc (read the diff).

use fmerge_runtime::{ServerSettings, SettingsRow as Row, parse_duration};
use std::path::PathBuf;
use std::time::Duration;

/// The header of the settings table in `docs/operating.md`.
const HEADER: &str = "| variable | default | meaning | past it |";

fn operating_md() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/operating.md")
}

/// A row as the doc writes it.
fn line(row: &Row) -> String {
    let past_it = if row.past_it.is_empty() {
        String::new()
    } else {
        format!("{} ", row.past_it)
    };
    format!(
        "| `{}` | {} | {} | {past_it}|",
        row.key, row.default, row.meaning
    )
}

/// The variable a doc row names (its first cell without backquotes).
fn key_of(row: &str) -> &str {
    row.trim_start_matches('|')
        .split('|')
        .next()
        .unwrap_or_default()
        .trim()
        .trim_matches('`')
}

#[test]
fn the_settings_rows_of_operating_md_are_the_settings_table() {
    let path = operating_md();
    let text = std::fs::read_to_string(&path).expect("docs/operating.md");
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| *l == HEADER)
        .expect("docs/operating.md has the settings table");
    let body = header + 2;
    let end = lines[body..]
        .iter()
        .position(|l| !l.starts_with('|'))
        .map_or(lines.len(), |n| body + n);
    let ours: Vec<String> = ServerSettings::ROWS.iter().map(line).collect();
    let others: Vec<&str> = lines[body..end]
        .iter()
        .copied()
        .filter(|l| !ServerSettings::ROWS.iter().any(|r| r.key == key_of(l)))
        .collect();
    if std::env::var_os("FMERGE_BLESS").is_some() {
        let mut out: Vec<String> = lines[..body].iter().map(|l| l.to_string()).collect();
        out.extend(ours.iter().cloned());
        out.extend(others.iter().map(|l| l.to_string()));
        out.extend(lines[end..].iter().map(|l| l.to_string()));
        std::fs::write(&path, out.join("\n") + "\n").expect("write docs/operating.md");
        return;
    }
    let theirs: Vec<&str> = lines[body..(body + ours.len()).min(end)].to_vec();
    for (want, got) in ours.iter().zip(&theirs) {
        assert_eq!(
            got, want,
            "docs/operating.md's settings table differs from server_settings/table.rs\n\
             fix: run FMERGE_BLESS=1 cargo test -p fmerge-runtime --test settings, and read the diff"
        );
    }
    assert_eq!(
        theirs.len(),
        ours.len(),
        "docs/operating.md's settings table lacks rows\nfix: run with FMERGE_BLESS=1"
    );
    assert_eq!(
        end - body,
        ours.len() + others.len(),
        "a setting has a second row in docs/operating.md\nfix: run with FMERGE_BLESS=1"
    );
    // The merged callees' section names each limit a callee keeps.
    for key in ServerSettings::LIMIT_KEYS {
        assert!(
            text.contains(&format!("`<CALLEE>__{key}`")),
            "docs/operating.md does not say a merged callee reads <CALLEE>__{key}"
        );
    }
}

#[test]
fn durations_parse_like_of_watchdog() {
    assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    assert!(parse_duration("10 seconds").is_err());
    assert!(parse_duration("-1s").is_err());
    assert!(parse_duration("s").is_err());
    assert!(parse_duration("5").is_ok());
}

#[test]
fn defaults_and_errors_name_the_variable() {
    let none = ServerSettings::from_lookup(|_| None).unwrap();
    assert_eq!(none.port, 8080);
    assert_eq!(none.healthcheck_interval, Duration::from_secs(30));
    assert_eq!(none.metrics_port, 8081);
    assert_eq!(none.listen_address.to_string(), "0.0.0.0");
    let one = |k: &'static str, v: &'static str| {
        ServerSettings::from_lookup(move |key| (key == k).then(|| v.to_string()))
    };
    assert_eq!(
        one("write_timeout", "5s").unwrap().healthcheck_interval,
        Duration::from_secs(5)
    );
    let e = one("read_timeout", "ten").unwrap_err();
    assert!(e.starts_with("read_timeout=\"ten\""), "{e}");
    let e = one("max_inflight", "-3").unwrap_err();
    assert!(e.contains("max_inflight"), "{e}");
    let e = one("listen_address", "localhost").unwrap_err();
    assert!(e.contains("listen_address"), "{e}");
    assert!(one("write_timeout", "0").is_err());
    assert_eq!(none.call_log, 0);
    assert_eq!(one("FMERGE_CALL_LOG", "500").unwrap().call_log, 500);
    let e = one("FMERGE_CALL_LOG", "10000000").unwrap_err();
    assert!(e.starts_with("FMERGE_CALL_LOG=10000000"), "{e}");
    let both = ServerSettings::from_lookup(|key| match key {
        "FMERGE_CALL_LOG" => Some("10".into()),
        "metrics_port" => Some("0".into()),
        _ => None,
    });
    assert!(both.unwrap_err().contains("metrics_port=0"));
    // The process's other settings, by the same rule.
    for (key, value) in [
        ("FMERGE_INVOKE_TIMEOUT_SECS", "ten"),
        ("FMERGE_INVOKE_MAX_REPLY_BYTES", "8M"),
        ("FMERGE_ISOLATE_THREADS", "0"),
    ] {
        let e = one(key, value).unwrap_err();
        assert!(
            e.starts_with(&format!("{key}=")) && e.contains("\nfix: "),
            "{e}"
        );
    }
    assert_eq!(none.invoke_timeout, Duration::from_secs(30));
    // Read through the table too, the key never in the start log.
    let key = one(
        fmerge_runtime::__contract::CALLER_KEY_VAR,
        "a-key-of-enough-bytes",
    )
    .unwrap();
    assert_eq!(
        key.caller_key.as_ref().map(|secret| secret.0.as_slice()),
        Some(&b"a-key-of-enough-bytes"[..])
    );
    assert!(!key.listed().contains("a-key"), "{}", key.listed());
    assert_eq!(
        one("FMERGE_ISOLATE", " a, none ,b").unwrap().isolate,
        Some(vec!["a".to_string(), "b".to_string()])
    );
    assert_eq!(one("FMERGE_ISOLATE", "none").unwrap().isolate, Some(vec![]));
    assert_eq!(none.isolate, None);
    assert_eq!(
        one("OPENFAAS_NAMESPACE", " fn-2 ")
            .unwrap()
            .namespace
            .as_deref(),
        Some("fn-2")
    );
}

#[test]
fn of_watchdog_settings_that_are_not_implemented_stop_the_start() {
    let one = |k: &'static str, v: &'static str| {
        ServerSettings::from_lookup(move |key| (key == k).then(|| v.to_string()))
    };
    for (key, value) in [
        ("jwt_auth", "true"),
        ("jwt_auth", "1"),
        ("jwt_auth_local", "true"),
        ("mode", "streaming"),
        ("ready_path", "/ready"),
    ] {
        let e = one(key, value).unwrap_err();
        assert!(e.starts_with(&format!("{key}=")), "{e}");
    }
    for (key, value) in [
        ("jwt_auth", "false"),
        ("mode", "http"),
        ("fprocess", "./handler"),
        ("upstream_url", "http://127.0.0.1:3000"),
        ("static_path", "/home/app/public"),
    ] {
        assert!(one(key, value).is_ok(), "{key}={value}");
    }
}
