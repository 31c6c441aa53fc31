//! The runtime's modules in layers: each imports only from the layers
//! below it (or its own, without a cycle). Read from the `crate::` paths of
//! `src/` (names re-exported by `lib.rs` resolved to their module), as
//! `shared/tools/modcycles.py` reads them, so that a new import upward or
//! around fails here before it knots the crate again.
//!
//! Run: `cargo test --release -p fmerge-runtime --test layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // What everything reads: errors, settings, names, the connection layer.
    &[
        "error",
        "json",
        "server_settings",
        "function_config",
        "hooks",
        "process_metrics",
        "front",
    ],
    &["metrics"],
    &["call_log", "record"],
    // The running call: its context and signatures.
    &["call"],
    &["limits", "handler"],
    &["callees", "isolation"],
    &["dispatch"],
    &["invoke"],
    &["body"],
    &["request", "metrics_port"],
    &["serve"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Each module's files: `x.rs`, or every file under `x/`.
fn modules() -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut files = Vec::new();
            let mut dirs = vec![path];
            while let Some(dir) = dirs.pop() {
                for e in std::fs::read_dir(dir).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        dirs.push(p);
                    } else if p.extension().is_some_and(|e| e == "rs") {
                        files.push(p);
                    }
                }
            }
            modules.insert(name, files);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" {
            modules.insert(name, vec![path]);
        }
    }
    modules
}

/// The identifiers after each `crate::` in `text`, and in each
/// `use crate::{...}` group; a file's `#[cfg(test)] mod tests` left out.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        // `$crate::` in a macro is the crate's user, not an import.
        if text[..at].ends_with('$') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// The names `lib.rs` re-exports, and the module each comes from.
fn reexports() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap_or(item).trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    names
}

/// Each module's imports of the others.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let reexports = reexports();
    modules
        .iter()
        .map(|(module, files)| {
            let mut targets = BTreeSet::new();
            for file in files {
                let text = std::fs::read_to_string(file).unwrap();
                for name in crate_paths(&text) {
                    let target = if modules.contains_key(&name) {
                        Some(name)
                    } else {
                        reexports.get(&name).cloned()
                    };
                    if let Some(target) = target.filter(|t| t != module && modules.contains_key(t))
                    {
                        targets.insert(target);
                    }
                }
            }
            (module.clone(), targets)
        })
        .collect()
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

#[test]
fn every_module_is_placed_in_a_layer() {
    let unplaced: Vec<String> = modules()
        .into_keys()
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "error: modules of functions/runtime/src in no layer: {unplaced:?}\nfix: add each to LAYERS in tests/layers.rs, above what it imports"
    );
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let mut upward = Vec::new();
    for (module, targets) in imports() {
        let Some(own) = layer_of(&module) else {
            continue;
        };
        for target in targets {
            if layer_of(&target).is_some_and(|layer| layer > own) {
                upward.push(format!("{module} -> {target}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "error: imports upward: {upward:?}\nfix: move what is imported down a layer, or pass it in from above"
    );
}

#[test]
fn no_modules_import_each_other_in_a_cycle() {
    let imports = imports();
    // Depth-first search for a path back to where it started.
    fn path_back(
        imports: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        seen: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> bool {
        for next in imports.get(at).into_iter().flatten() {
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
    for module in imports.keys() {
        let mut path = vec![module.clone()];
        if path_back(&imports, module, module, &mut BTreeSet::new(), &mut path) {
            panic!(
                "error: modules import each other in a cycle: {}\nfix: move what the lower one needs below both",
                path.join(" -> ")
            );
        }
    }
}

#[test]
fn the_reader_sees_imports_in_paths_groups_and_reexports() {
    let paths = crate_paths(
        "use crate::front::Conn;\nuse crate::{Bytes, call, Error};\nlet x = $crate::serve;\n#[cfg(test)]\nmod tests { use crate::serve; }",
    );
    let want: BTreeSet<String> = ["front", "Bytes", "call", "Error"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(paths, want);
    assert_eq!(reexports().get("Error").map(String::as_str), Some("error"));
    assert_eq!(reexports().get("serve").map(String::as_str), Some("serve"));
}
