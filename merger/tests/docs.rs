//! The docs a newcomer reads first hold their promises: the README opens
//! with the two commands, stays a ten-minute read, and every relative link
//! in it and in docs/ reaches a file of the repository.

use std::path::{Path, PathBuf};

/// The README's length, in lines, that a team reads in ten minutes.
const README_MAX_LINES: usize = 200;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("merger/ is in the repository")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn readme_is_a_ten_minute_read() {
    let text = read(&repo().join("README.md"));
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move reference material to docs/"
    );
}

#[test]
fn readme_opens_with_the_main_job_and_the_tests() {
    let text = read(&repo().join("README.md"));
    let block: Vec<&str> = text
        .split("```")
        .nth(1)
        .expect("README.md has a code block")
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(
        block.len(),
        2,
        "the first code block is the two commands: {block:?}"
    );
    assert!(
        block[0].starts_with("cargo run --release -p fmerge -- build "),
        "{}",
        block[0]
    );
    assert!(block[1].starts_with("ci/test"), "{}", block[1]);
}

/// `[text](target)` links of a Markdown text: the relative ones, without anchors.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or_default();
        let external = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !external && !target.contains(' ') {
            links.push(target.to_string());
        }
        rest = &rest[end..];
    }
    links
}

#[test]
fn every_relative_link_in_the_readme_and_docs_reaches_a_file() {
    let root = repo();
    let mut pages = vec![root.join("README.md"), root.join("functions/README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let base = page.parent().expect("a page is in a folder");
        for link in relative_links(&read(page)) {
            if !base.join(&link).exists() {
                broken.push(format!("{}: {link}", page.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}
