//! The check behind each crate's `tests/layers.rs`: the top-level modules of
//! a crate's `src/` in layers, each importing only from the layers below it
//! (or its own, without a cycle). A crate's test is its table, lowest layer
//! first, and [`layers_test!`](crate::layers_test), which checks its `src/`
//! with [`assert_layered`].
//!
//! An import is read as `shared/tools/modcycles.py` reads it: the first name
//! after each `crate::` (and in each `use crate::{a, b}` group), doc
//! comments included (a link upward is a dependency a reader follows); a
//! file's inline `#[cfg(test)] mod tests { ... }` does not count. Beyond
//! that script, a name `lib.rs` or `main.rs` re-exports (`pub use
//! m::Thing`) counts as its module, and so that `use super::x` cannot dodge
//! the check, code's `super::` paths where that is the crate root
//! (`super::x` in `src/m.rs`, `super::super::x` in `src/m/n.rs`) count
//! too; doc links by `super::` do not, as the script never read them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Panics, with every problem found and its fix, unless the modules of
/// `src` are in `layers` (lowest first) and each imports only from its own
/// layer or below, with no cycle.
pub fn assert_layered(src: &Path, layers: &[&[&str]]) {
    let found = problems(src, layers);
    assert!(
        found.is_empty(),
        "the modules of {} are not in layers:\n\n{}",
        src.display(),
        found.join("\n\n")
    );
}

/// The test of a crate's `tests/layers.rs`: its `src/` ([`assert_layered`])
/// in `$layers`, lowest first.
#[macro_export]
macro_rules! layers_test {
    ($layers:expr) => {
        #[test]
        fn modules_import_only_from_the_layers_below() {
            let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            $crate::layers::assert_layered(&src, $layers);
        }
    };
}

/// What [`assert_layered`] refuses, each as `error: ...` then `fix: ...`;
/// empty when the modules are in layers.
pub fn problems(src: &Path, layers: &[&[&str]]) -> Vec<String> {
    let modules = modules(src);
    let layer_of = |module: &str| layers.iter().position(|layer| layer.contains(&module));
    let mut found = Vec::new();

    let unplaced: Vec<&String> = modules.keys().filter(|m| layer_of(m).is_none()).collect();
    if !unplaced.is_empty() {
        found.push(format!(
            "error: modules of {} in no layer: {unplaced:?}\nfix: add each to LAYERS in tests/layers.rs, above what it imports",
            src.display()
        ));
    }
    let stale: Vec<&str> = layers
        .iter()
        .flat_map(|layer| layer.iter().copied())
        .filter(|m| !modules.contains_key(*m))
        .collect();
    if !stale.is_empty() {
        found.push(format!(
            "error: LAYERS names modules {} does not have: {stale:?}\nfix: remove them from LAYERS in tests/layers.rs",
            src.display()
        ));
    }

    let imports = imports(src, &modules);
    let mut upward = Vec::new();
    for (module, targets) in &imports {
        let Some(own) = layer_of(module) else {
            continue;
        };
        for (target, at) in targets {
            if layer_of(target).is_some_and(|layer| layer > own) {
                upward.push(format!("{module} -> {target} ({at})"));
            }
        }
    }
    if !upward.is_empty() {
        found.push(format!(
            "error: imports upward: {upward:?}\nfix: move what is imported down a layer, or pass it in from above"
        ));
    }

    if let Some(cycle) = cycle(&imports) {
        found.push(format!(
            "error: modules import each other in a cycle: {}\nfix: move what the lower one needs below both",
            cycle.join(" -> ")
        ));
    }
    found
}

/// Each top-level module of `src` and its files: `m.rs`, and every file
/// under `m/` (a module may have both). `lib.rs` and `main.rs`, the crate
/// roots, and `bin/` are no module.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in read_dir(src) {
        let name = entry.file_stem().unwrap().to_string_lossy().into_owned();
        if entry.is_dir() {
            if name == "bin" {
                continue;
            }
            let mut files = Vec::new();
            let mut dirs = vec![entry];
            while let Some(dir) = dirs.pop() {
                for p in read_dir(&dir) {
                    if p.is_dir() {
                        dirs.push(p);
                    } else if p.extension().is_some_and(|e| e == "rs") {
                        files.push(p);
                    }
                }
            }
            modules.entry(name).or_default().extend(files);
        } else if entry.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main" {
            modules.entry(name).or_default().push(entry);
        }
    }
    modules
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

/// How many `super::` reach the crate root from `file`: 1 in `src/m.rs`
/// and `src/m/mod.rs`, 2 in `src/m/n.rs`, and so on.
fn depth(src: &Path, file: &Path) -> usize {
    let inside = file.strip_prefix(src).expect("a file under src");
    let parts = inside.components().count();
    if file.file_stem().is_some_and(|s| s == "mod") {
        parts - 1
    } else {
        parts
    }
}

/// Each module's imports of the others, with where the first of each is
/// (`file:line`, relative to `src`).
fn imports(
    src: &Path,
    modules: &BTreeMap<String, Vec<PathBuf>>,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let reexports = reexports(src);
    let mut imports = BTreeMap::new();
    for (module, files) in modules {
        let mut targets: BTreeMap<String, String> = BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            for (name, line) in crate_paths(&text, depth(src, file)) {
                let target = if modules.contains_key(&name) {
                    Some(name)
                } else {
                    reexports.get(&name).cloned()
                };
                if let Some(target) = target.filter(|t| t != module && modules.contains_key(t)) {
                    let at = format!("{}:{line}", file.strip_prefix(src).unwrap().display());
                    targets.entry(target).or_insert(at);
                }
            }
        }
        imports.insert(module.clone(), targets);
    }
    imports
}

/// The names after each `crate::` in `text` (and, in code, after `super::`
/// repeated `depth` times, the crate root from that file), each in a
/// `{...}` group too, with the line of its first; a file's inline
/// `#[cfg(test)] mod tests` left out.
fn crate_paths(text: &str, depth: usize) -> BTreeMap<String, usize> {
    let text = &text[..test_module(text).unwrap_or(text.len())];
    let root_super = "super::".repeat(depth);
    let mut found = BTreeMap::new();
    let mut add = |name: String, at: usize| {
        if !name.is_empty() && !["self", "super", "crate"].contains(&name.as_str()) {
            let line = text[..at].matches('\n').count() + 1;
            found.entry(name).or_insert(line);
        }
    };
    for prefix in ["crate::", root_super.as_str()] {
        if prefix.is_empty() {
            continue;
        }
        for (at, _) in text.match_indices(prefix) {
            let before = &text[..at];
            // `$crate::` in a macro is the crate's user, not an import;
            // `x_crate::` another path; one `super::` more is above the root.
            if before.ends_with(|c: char| c == '$' || c == '_' || c.is_ascii_alphanumeric())
                || before.ends_with("super::")
            {
                continue;
            }
            // `super::` is read in code only (see the module's doc).
            let line = &before[before.rfind('\n').map_or(0, |n| n + 1)..];
            if prefix != "crate::" && line.trim_start().starts_with("//") {
                continue;
            }
            let rest = &text[at + prefix.len()..];
            match rest.strip_prefix('{') {
                Some(group) => {
                    for item in group_items(group) {
                        add(ident(item.trim_start()), at);
                    }
                }
                None => add(ident(rest), at),
            }
        }
    }
    found
}

/// Where a file's inline `#[cfg(test)] mod tests {` starts, if it has one.
fn test_module(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find("#[cfg(test)]") {
        let at = from + found;
        let rest = text[at + "#[cfg(test)]".len()..].trim_start();
        if let Some(rest) = rest.strip_prefix("mod tests")
            && rest.trim_start().starts_with('{')
        {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The top-level items of a `{...}` group (`group` starts after its `{`):
/// `a::{b, c}, d` is `a::{b, c}` and `d`.
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The names the crate roots (`lib.rs`, `main.rs`) re-export, and the
/// module each comes from.
fn reexports(src: &Path) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for root in ["lib.rs", "main.rs"] {
        let Ok(text) = std::fs::read_to_string(src.join(root)) else {
            continue;
        };
        for statement in text.split(';') {
            // The statement without the comments and attributes before it.
            let code: String = statement
                .lines()
                .filter(|l| !l.trim_start().starts_with("//") && !l.trim_start().starts_with("#["))
                .collect::<Vec<_>>()
                .join("\n");
            let code = code.trim();
            let Some(rest) = code
                .strip_prefix("pub use ")
                .or_else(|| code.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            let rest = rest
                .trim_start_matches("crate::")
                .trim_start_matches("self::");
            let Some((module, items)) = rest.split_once("::") else {
                continue;
            };
            let items = match items.strip_prefix('{') {
                Some(group) => group_items(group),
                None => vec![items],
            };
            for item in items {
                let item = item.trim();
                let name = match item.split_once(" as ") {
                    Some((_, alias)) => alias,
                    None => item.rsplit("::").next().unwrap_or(item),
                };
                let name = ident(name.trim());
                if !name.is_empty() {
                    names.insert(name, module.trim().to_string());
                }
            }
        }
    }
    names
}

/// A path of imports from a module back to itself, if any.
fn cycle(imports: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
    // Depth-first search for a path back to where it started.
    fn path_back(
        imports: &BTreeMap<String, BTreeMap<String, String>>,
        start: &str,
        at: &str,
        seen: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> bool {
        for next in imports.get(at).into_iter().flat_map(|t| t.keys()) {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if path_back(imports, start, next, seen, path) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    imports.keys().find_map(|module| {
        let mut path = vec![module.clone()];
        path_back(imports, module, module, &mut BTreeSet::new(), &mut path).then_some(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: BTreeMap<String, usize>) -> Vec<String> {
        found.into_keys().collect()
    }

    #[test]
    fn the_reader_sees_paths_groups_and_the_roots_super() {
        let text = "use crate::connections::Conn;\nuse crate::{Bytes, call::{A, B}, Error};\nlet x = $crate::serve;\nlet y = my_crate::x;\nuse super::deep;\nuse super::super::up;\n/// [`a`](super::doc_link), [`b`](super::super::doc_link)\n#[cfg(test)]\nmod tests { use crate::serve; }";
        assert_eq!(
            names(crate_paths(text, 1)),
            ["Bytes", "Error", "call", "connections", "deep"]
        );
        // In `src/m/n.rs`, one `super::` is `m`; two are the crate root.
        assert_eq!(
            names(crate_paths(text, 2)),
            ["Bytes", "Error", "call", "connections", "up"]
        );
        assert_eq!(crate_paths(text, 1)["call"], 2);
        // `mod tests;` (tests in their own file) hides nothing after it.
        let text = "#[cfg(test)]\nmod tests;\nuse crate::after;";
        assert_eq!(names(crate_paths(text, 1)), ["after"]);
    }

    /// A crate in a temp dir: `files` (path under `src/`, text).
    fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join("src").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    const LIB: &str = "//! A crate.\n\nmod free;\nmod low;\nmod mid;\nmod top;\n\n/// Its thing.\npub use top::{Thing, other::Other as Renamed};\npub use free::Free;\n";
    const LAYERS: &[&[&str]] = &[&["low"], &["mid"], &["top", "free"]];

    fn layered() -> Vec<(&'static str, &'static str)> {
        vec![
            ("lib.rs", LIB),
            ("low.rs", "//! Below everything.\npub struct Low;\n"),
            (
                "free.rs",
                "//! On top, importing nothing.\npub struct Free;\n",
            ),
            ("mid.rs", "use crate::low::Low;\nmod inner;\n"),
            ("mid/inner.rs", "use super::super::low;\n"),
            (
                "top/mod.rs",
                "use crate::{low, mid::{self}};\npub struct Thing;\n",
            ),
            (
                "top/other.rs",
                "pub struct Other;\n#[cfg(test)]\nmod tests {\n    use crate::Thing;\n}\n",
            ),
        ]
    }

    #[test]
    fn modules_in_layers_pass() {
        let dir = crate_of(&layered());
        let src = dir.path().join("src");
        assert_eq!(problems(&src, LAYERS), Vec::<String>::new());
        assert_layered(&src, LAYERS);
        let r = reexports(&src);
        assert_eq!(r.get("Thing").map(String::as_str), Some("top"));
        assert_eq!(r.get("Renamed").map(String::as_str), Some("top"));
    }

    /// `layered()` with each file of `changed` holding its text instead,
    /// or added.
    fn planted(changed: &[(&'static str, &'static str)]) -> tempfile::TempDir {
        let mut files = layered();
        files.retain(|(path, _)| changed.iter().all(|(file, _)| file != path));
        files.extend(changed);
        crate_of(&files)
    }

    #[test]
    fn an_upward_import_fails_also_through_a_reexport_or_super() {
        for (file, text) in [
            ("low.rs", "use crate::free::Free;\n"),
            (
                "low.rs",
                "/// Made into [`crate::Free`].\npub struct Low;\n",
            ),
            ("low.rs", "pub fn f() -> super::Free { todo!() }\n"),
            ("mid/inner.rs", "use crate::{low, free};\n"),
        ] {
            let dir = planted(&[(file, text)]);
            let found = problems(&dir.path().join("src"), LAYERS);
            assert_eq!(found.len(), 1, "{file}: {text:?}: {found:?}");
            assert!(found[0].starts_with("error: imports upward"), "{found:?}");
            assert!(
                found[0].contains(&format!("-> free ({file}:1)")),
                "{found:?}"
            );
        }
        // An import back down from where it came is a cycle as well.
        let dir = planted(&[("low.rs", "use crate::top::Thing;\n")]);
        let found = problems(&dir.path().join("src"), LAYERS);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("low -> top (low.rs:1)"), "{found:?}");
        assert!(
            found[1].contains("in a cycle: low -> top -> low"),
            "{found:?}"
        );
    }

    #[test]
    fn a_cycle_in_one_layer_fails() {
        let dir = planted(&[
            ("side.rs", "use crate::mid;\n"),
            ("mid.rs", "use crate::side;\nmod inner;\n"),
        ]);
        let layers: &[&[&str]] = &[&["low"], &["mid", "side"], &["top", "free"]];
        let found = problems(&dir.path().join("src"), layers);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("error: modules import each other in a cycle: mid -> side -> mid"),
            "{found:?}"
        );
    }

    #[test]
    fn a_module_in_no_layer_and_a_layer_of_no_module_fail() {
        let dir = planted(&[("new.rs", "")]);
        let layers: &[&[&str]] = &[&["low", "gone"], &["mid"], &["top", "free"]];
        let found = problems(&dir.path().join("src"), layers);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("in no layer: [\"new\"]"), "{found:?}");
        assert!(found[1].contains("does not have: [\"gone\"]"), "{found:?}");
    }

    #[test]
    #[should_panic(expected = "error: imports upward")]
    fn assert_layered_panics_on_a_problem() {
        let dir = planted(&[("low.rs", "use crate::free;\n")]);
        assert_layered(&dir.path().join("src"), LAYERS);
    }
}
