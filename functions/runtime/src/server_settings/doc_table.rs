//! `docs/operating.md`'s settings table against the one in `table.rs`: the
//! table's first rows are the settings' rows, generated from it, and no
//! other row names one of them. `FMERGE_BLESS=1` writes the rows into the
//! doc (read the diff).

use super::macros::Row;
use super::table::{LIMIT_KEYS, ROWS};
use std::path::PathBuf;

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
    let ours: Vec<String> = ROWS.iter().map(line).collect();
    let others: Vec<&str> = lines[body..end]
        .iter()
        .copied()
        .filter(|l| !ROWS.iter().any(|r| r.key == key_of(l)))
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
             fix: run FMERGE_BLESS=1 cargo test -p fmerge-runtime --lib doc_table, and read the diff"
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
    for key in LIMIT_KEYS {
        assert!(
            text.contains(&format!("`<CALLEE>__{key}`")),
            "docs/operating.md does not say a merged callee reads <CALLEE>__{key}"
        );
    }
}
