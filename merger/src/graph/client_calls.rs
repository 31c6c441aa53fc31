//! Calls a watchdog-process function makes through its own HTTP client,
//! read from its source: the names that end up after `/function/` in a URL.
//!
//! Such a function has no `invoke` to look for: it builds
//! `<gateway>/function/<name>` itself and posts to it, directly
//! (`format!("{gateway}/function/audit-log")`) or through a helper of its
//! team's (`make_rpc(func_name: &str, …)` formatting `/function/{func_name}`).
//! A string with a literal name after `/function/` names that callee; a
//! placeholder there that is a parameter of the function it sits in makes
//! that function a helper, and each call of the helper names what it passes
//! at that place (a literal, or a `const`), followed through helpers that
//! pass their own parameter on; anything else (a name computed at run time)
//! is an unknown callee, never a guess. The helper's name and the way the
//! URL is written do not matter, only where the parameter goes.

use super::tokens::{Tree, collect_consts, crate_files, split_commas, test_only};
use anyhow::Result;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One call to another function through an HTTP client.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The callee's name, when the code gives it as a literal.
    pub callee: Option<String>,
    /// The Rust function the call sits in.
    pub within: String,
}

/// One `fn` item: its name, its parameters' names, its body.
struct Item<'a> {
    name: String,
    params: Vec<String>,
    body: &'a [Tree],
}

/// What a placeholder after `/function/` stands for.
enum Named {
    Literal(String),
    Param(usize),
    Unknown,
}

/// The calls made through an HTTP client by a function whose crate is in
/// `own` and whose path crates are in `deps` (each a package folder).
pub fn read(own: &Path, deps: &[PathBuf]) -> Result<Vec<Site>> {
    let mut files = Vec::new();
    for dir in std::iter::once(own).chain(deps.iter().map(PathBuf::as_path)) {
        files.extend(crate_files(dir)?);
    }
    Ok(scan(&files))
}

/// [`read`] on parsed files.
pub fn scan(files: &[Vec<Tree>]) -> Vec<Site> {
    let mut consts = HashMap::new();
    let mut items = Vec::new();
    for trees in files {
        collect_consts(trees, &mut consts);
        collect_items(trees, &mut items);
    }
    let mut sites = Vec::new();
    // Helpers: a function's name and the parameter that becomes the callee.
    let mut helpers: BTreeMap<String, usize> = BTreeMap::new();
    for item in &items {
        for named in placeholders(item.body, item, &consts) {
            match named {
                Named::Param(i) => {
                    helpers.insert(item.name.clone(), i);
                }
                Named::Literal(name) => sites.push(site(Some(name), item)),
                Named::Unknown => sites.push(site(None, item)),
            }
        }
    }
    // A helper that passes its own parameter to another helper is one too.
    let mut changed = true;
    while changed {
        changed = false;
        for item in &items {
            for arg in calls(item.body, &helpers) {
                if let Some(Named::Param(i)) = arg.map(|a| argument(a, item, &consts))
                    && !helpers.contains_key(&item.name)
                {
                    helpers.insert(item.name.clone(), i);
                    changed = true;
                }
            }
        }
    }
    for item in &items {
        for arg in calls(item.body, &helpers) {
            match arg.map(|a| argument(a, item, &consts)) {
                Some(Named::Literal(name)) => sites.push(site(Some(name), item)),
                Some(Named::Param(_)) => {} // a helper itself, counted at its calls
                Some(Named::Unknown) | None => sites.push(site(None, item)),
            }
        }
    }
    sites.sort();
    sites
}

fn site(callee: Option<String>, item: &Item) -> Site {
    Site {
        callee,
        within: item.name.clone(),
    }
}

/// What each `/function/` of the strings in `body` is followed by.
fn placeholders(body: &[Tree], item: &Item, consts: &HashMap<String, String>) -> Vec<Named> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        if let Some(skip) = test_only(body, i) {
            i += skip;
            continue;
        }
        match &body[i] {
            Tree::Str(text) => {
                let args = split_commas(&body[i + 1..]);
                for (at, _) in text.match_indices("/function/") {
                    out.push(after(text, at + "/function/".len(), &args, item, consts));
                }
            }
            Tree::Group(_, inner) => out.extend(placeholders(inner, item, consts)),
            _ => {}
        }
        i += 1;
    }
    out
}

/// What follows `/function/` at `at` in the format string `text`, whose
/// positional arguments are `args` (the first is empty: what precedes the
/// first comma is the string itself).
fn after(
    text: &str,
    at: usize,
    args: &[&[Tree]],
    item: &Item,
    consts: &HashMap<String, String>,
) -> Named {
    let rest = &text[at..];
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect()
    };
    let Some(inner) = rest.strip_prefix('{') else {
        let name = word(rest);
        return match name.is_empty() {
            true => Named::Unknown,
            false => Named::Literal(name),
        };
    };
    let inline = word(inner);
    if !inline.is_empty() && !inline.chars().all(|c| c.is_ascii_digit()) {
        return ident(&inline, item, consts);
    }
    // `{}`: the next positional argument after those the string used before.
    let before = text[..at].matches("{}").count();
    match args.get(before + 1) {
        Some(arg) => argument(arg, item, consts),
        None => Named::Unknown,
    }
}

/// What an argument expression names: a literal, a `const`, a parameter of
/// `item`, or something computed.
fn argument(arg: &[Tree], item: &Item, consts: &HashMap<String, String>) -> Named {
    let arg: Vec<&Tree> = arg
        .iter()
        .filter(|t| !t.is_punct('&') && !t.is_punct('*'))
        .collect();
    match arg[..] {
        [Tree::Str(s)] => Named::Literal(s.clone()),
        [
            Tree::Str(s),
            Tree::Punct('.'),
            Tree::Ident(_),
            Tree::Group('(', a),
        ] if a.is_empty() => Named::Literal(s.clone()),
        [Tree::Ident(name)] => ident(name, item, consts),
        // `name.to_string()`, `name.as_str()`, `name.into()`: still the name.
        [
            Tree::Ident(name),
            Tree::Punct('.'),
            Tree::Ident(_),
            Tree::Group('(', a),
        ] if a.is_empty() => ident(name, item, consts),
        _ => Named::Unknown,
    }
}

fn ident(name: &str, item: &Item, consts: &HashMap<String, String>) -> Named {
    if let Some(i) = item.params.iter().position(|p| p == name) {
        return Named::Param(i);
    }
    match consts.get(name) {
        Some(value) => Named::Literal(value.clone()),
        None => Named::Unknown,
    }
}

/// The calls in `body` of a helper, each with the argument at the helper's
/// place (`None` when the call has too few).
fn calls<'a>(body: &'a [Tree], helpers: &BTreeMap<String, usize>) -> Vec<Option<&'a [Tree]>> {
    let mut out = Vec::new();
    for (i, t) in body.iter().enumerate() {
        if let Tree::Ident(name) = t
            && let Some(&at) = helpers.get(name)
            && let Some(Tree::Group('(', args)) = body.get(i + 1)
            && !(i > 0 && body[i - 1].is_ident("fn"))
        {
            out.push(split_commas(args).get(at).copied());
        }
        if let Tree::Group(_, inner) = t {
            out.extend(calls(inner, helpers));
        }
    }
    out
}

/// Every `fn NAME(params) … { body }` of `trees`, nested ones included.
fn collect_items<'a>(trees: &'a [Tree], out: &mut Vec<Item<'a>>) {
    let mut i = 0;
    while i < trees.len() {
        if let Some(skip) = test_only(trees, i) {
            i += skip;
            continue;
        }
        if trees[i].is_ident("fn")
            && let Some(Tree::Ident(name)) = trees.get(i + 1)
            && let Some(params_at) = trees[i + 2..].iter().position(|t| t.group('(').is_some())
            && let Some(body_at) = trees[i + 2..].iter().position(|t| t.group('{').is_some())
            && params_at < body_at
        {
            let params = trees[i + 2 + params_at].group('(').unwrap_or_default();
            let body = trees[i + 2 + body_at].group('{').unwrap_or_default();
            out.push(Item {
                name: name.clone(),
                params: split_commas(params)
                    .iter()
                    .map(|p| {
                        let p: Vec<&Tree> = p.iter().filter(|t| !t.is_ident("mut")).collect();
                        match p.first() {
                            Some(Tree::Ident(n)) if p.get(1).is_some_and(|t| t.is_punct(':')) => {
                                n.clone()
                            }
                            _ => String::new(), // `self`, a pattern: a place all the same
                        }
                    })
                    .collect(),
                body,
            });
            collect_items(body, out);
            i += 2 + body_at + 1;
            continue;
        }
        if let Tree::Group(_, inner) = &trees[i] {
            collect_items(inner, out);
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tokens::parse;

    fn sites(files: &[&str]) -> Vec<(Option<String>, String)> {
        let parsed: Vec<Vec<Tree>> = files.iter().map(|f| parse(f).unwrap()).collect();
        scan(&parsed)
            .into_iter()
            .map(|s| (s.callee, s.within))
            .collect()
    }

    fn named(callee: &str, within: &str) -> (Option<String>, String) {
        (Some(callee.to_string()), within.to_string())
    }

    #[test]
    fn a_helper_is_found_by_where_its_parameter_goes() {
        let helper = r#"
            const GATEWAY: &str = "http://gateway.openfaas:8080";
            pub fn make_rpc(func_name: &str, input: String) -> String {
                let url = format!("{GATEWAY}/function/{func_name}");
                post(&url, input)
            }"#;
        let other = r#"
            pub fn call_function(name: &str, body: &str) -> String {
                let gw = std::env::var("GATEWAY_URL").unwrap();
                client().post(format!("{}/function/{}", gw, name)).body(body.to_string()).send()
            }"#;
        let main = r#"
            const FOLLOWERS: &str = "social-graph-get-followers";
            fn main() {
                let a = make_rpc(FOLLOWERS, input.clone());
                let b = FaasCall::call_function("user-filter", &a);
                let c = make_rpc(&computed, b);
            }"#;
        assert_eq!(
            sites(&[helper, other, main]),
            [
                (None, "main".to_string()),
                named("social-graph-get-followers", "main"),
                named("user-filter", "main"),
            ]
        );
    }

    #[test]
    fn a_literal_name_in_a_url_is_a_call() {
        let main = r#"
            fn audit(ids: &[i64]) -> i64 {
                let gateway = std::env::var("OPENFAAS_URL").unwrap();
                ureq::post(format!("{gateway}/function/audit-log")).send(body)
            }
            fn other(x: &str) { let _ = format!("{}/function/{}", host(), lookup(x)); }"#;
        assert_eq!(
            sites(&[main]),
            [(None, "other".to_string()), named("audit-log", "audit")]
        );
    }

    #[test]
    fn a_helper_passing_its_parameter_on_is_a_helper() {
        let main = r#"
            fn rpc(name: &str) -> String { post(&format!("http://gw:8080/function/{name}")) }
            fn rpc_twice(target: String) { rpc(&target); rpc(target.as_str()); }
            fn main() { rpc_twice("unique-id".to_string()); }
            #[cfg(test)]
            mod tests { fn t() { rpc("not-in-the-build"); } }"#;
        assert_eq!(sites(&[main]), [named("unique-id", "main")]);
    }
}
