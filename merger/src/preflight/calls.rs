//! Whether the group's members can call its callees, read from their source
//! as `fmerge graph` reads it (no build): a listed callee that no member
//! calls is refused, and when the callee calls the caller instead, the
//! refusal prints the command with the two the right way round.
//!
//! A member's calls are the `invoke` sites [`rounds`] places in its crate
//! (with the macros of the user's crates it links expanded), and the sites
//! (`invoke` or `invoke_request`) with a literal name in those crates' own
//! functions. A site whose name is computed (neither a literal nor a
//! `const`), or an `invoke` imported under another name, could call
//! anything: then no callee is refused. A `$name` inside a `macro_rules!` is the macro's
//! argument, read where the macro is used.

use crate::graph::tokens::{Tree, collect_consts, crate_files, split_commas, test_only};
use crate::graph::{client_calls, function_of, rounds, users};
use anyhow::{Context as _, Result, bail};
use fmerge_cargo::resolve::Code;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// What one member's code can call.
#[derive(Debug, Default)]
pub struct Calls {
    /// The functions its call sites name.
    pub named: BTreeSet<String>,
    /// Some call site computes the name.
    pub computed: bool,
}

/// The calls of a function whose code is `code`.
pub fn read(code: &Code) -> Result<Calls> {
    let deps: Vec<PathBuf> = code
        .deps
        .iter()
        .filter(|p| users(&p.name))
        .map(|p| p.dir.clone())
        .collect();
    let mut calls = Calls::default();
    if code.form.shimmed() {
        return client_names(code, &mut calls).map(|()| calls);
    }
    for round in rounds::read(&code.own, &deps)
        .with_context(|| format!("cannot read the calls of {}", code.name))?
    {
        calls.named.extend(round.calls);
        calls.named.extend(round.looped);
    }
    for dir in std::iter::once(&code.own).chain(&deps) {
        for trees in crate_files(dir)? {
            let mut consts = HashMap::new();
            collect_consts(&trees, &mut consts);
            sites(&trees, &consts, false, &mut calls);
        }
    }
    Ok(calls)
}

/// A watchdog-process function calls others through its own HTTP client:
/// its calls are the names its code puts after `/function/` in a URL
/// (`fmerge graph`'s reading, [`client_calls`]).
fn client_names(code: &Code, calls: &mut Calls) -> Result<()> {
    let deps: Vec<PathBuf> = code.deps.iter().map(|p| p.dir.clone()).collect();
    for site in client_calls::read(&code.own, &deps)
        .with_context(|| format!("cannot read the calls of {}", code.name))?
    {
        match site.callee {
            Some(name) => {
                calls.named.insert(function_of(&name).to_string());
            }
            None => calls.computed = true,
        }
    }
    Ok(())
}

/// Refuses a callee of `callees` that no member calls, unless some member
/// computes a callee's name or `allow` is set. `calls` are the members',
/// the caller first, in the order of `[caller, callees…]`.
pub fn check(caller: &str, callees: &[String], calls: &[Calls], allow: bool) -> Result<()> {
    if allow || calls.iter().any(|c| c.computed) {
        return Ok(());
    }
    let members: Vec<&str> = fmerge_cargo::resolve::members(caller, callees).collect();
    for (i, callee) in callees.iter().enumerate() {
        // A process-form function is called by its OpenFaaS name.
        let openfaas = fmerge_contract::function_name(callee);
        let called = members.iter().zip(calls).any(|(m, c)| {
            *m != callee && (c.named.contains(callee) || c.named.contains(&openfaas))
        });
        if called {
            continue;
        }
        if calls[i + 1].named.contains(caller) {
            bail!(
                "{caller} never calls {callee}, and {callee} calls {caller}: the caller comes first\n\
                 fix: {}",
                swapped(caller, callee, callees)
            );
        }
        bail!(
            "no member of the group calls {callee}: no call site in {} names it, and none computes a callee's name\n\
             fix: drop {callee}, or give --allow-uncalled to merge it all the same",
            members
                .iter()
                .filter(|m| **m != callee)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// The command as given with `caller` and `callee` swapped; from a group
/// file, the two names in the right order.
fn swapped(caller: &str, callee: &str, callees: &[String]) -> String {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let at = |name: &str| args.iter().position(|a| a == name);
    if let (Some(a), Some(b)) = (at(caller), at(callee)) {
        args.swap(a, b);
        let shown: Vec<String> = args.iter().map(|a| quoted(a)).collect();
        return format!("run `fmerge {}`", shown.join(" "));
    }
    let rest: Vec<&str> = callees
        .iter()
        .map(|c| if c == callee { caller } else { c.as_str() })
        .collect();
    format!(
        "make {callee} the caller: `caller = \"{callee}\"`, `callees = {rest:?}` (`fmerge build {callee} {}`)",
        rest.join(" ")
    )
}

/// `arg` as a shell reads it back.
fn quoted(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The `invoke(NAME, …)` and `invoke_request(NAME, …)` sites of `trees`: a literal (or `const`) outside a
/// macro definition is a name; a `$` argument of a macro is not read here;
/// anything else is computed.
fn sites(trees: &[Tree], consts: &HashMap<String, String>, in_macro: bool, calls: &mut Calls) {
    let mut i = 0;
    while i < trees.len() {
        if let Some(skip) = test_only(trees, i) {
            i += skip;
            continue;
        }
        let t = &trees[i];
        if t.is_ident("macro_rules")
            && let Some(Tree::Group(_, body)) = trees.get(i + 3)
        {
            sites(body, consts, true, calls);
            i += 4;
            continue;
        }
        let call = t.is_ident("invoke") || t.is_ident("invoke_request");
        // `use …::invoke as call`: its sites go by a name not read here.
        if call && trees.get(i + 1).is_some_and(|n| n.is_ident("as")) {
            calls.computed = true;
        }
        if call && let Some(args) = trees.get(i + 1).and_then(|n| n.group('(')) {
            match split_commas(args).first() {
                Some([Tree::Str(name)]) if !in_macro => {
                    calls.named.insert(function_of(name).to_string());
                }
                Some([Tree::Ident(c)]) if consts.contains_key(c) => {
                    if !in_macro {
                        calls.named.insert(function_of(&consts[c]).to_string());
                    }
                }
                Some([Tree::Str(_)]) => {}
                Some([Tree::Punct('$'), ..]) if in_macro => {}
                _ => calls.computed = true,
            }
        }
        if let Tree::Group(_, inner) = t {
            sites(inner, consts, in_macro, calls);
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tokens::parse;

    fn calls_of(text: &str) -> Calls {
        let trees = parse(text).unwrap();
        let mut consts = HashMap::new();
        collect_consts(&trees, &mut consts);
        let mut calls = Calls::default();
        sites(&trees, &consts, false, &mut calls);
        calls
    }

    #[test]
    fn literal_const_and_computed_names() {
        let c = calls_of(
            r#"const B: &str = "b.openfaas-fn";
            async fn h() { rt::invoke("a", x).await; invoke(B, y).await; }
            macro_rules! m { ($n:literal) => { invoke($n, z) }; }"#,
        );
        assert_eq!(c.named, BTreeSet::from(["a".into(), "b".into()]));
        assert!(!c.computed);
        let c = calls_of("async fn h(name: &str) { invoke(name, x).await; }");
        assert!(c.computed && c.named.is_empty());
        let c = calls_of(r#"async fn h() { rt::invoke_request("r", q).await; }"#);
        assert_eq!(c.named, BTreeSet::from(["r".into()]));
        assert!(calls_of("use fmerge_runtime::invoke as call;").computed);
        let c = calls_of(r#"#[cfg(test)] mod tests { fn t() { invoke(n, x); } }"#);
        assert!(!c.computed);
    }

    fn named(names: &[&str]) -> Calls {
        Calls {
            named: names.iter().map(|n| n.to_string()).collect(),
            computed: false,
        }
    }

    #[test]
    fn an_uncalled_callee_is_refused_unless_allowed_or_computed() {
        let callees = ["c".to_string()];
        let e = check("a", &callees, &[named(&["b"]), named(&[])], false).unwrap_err();
        assert!(
            e.to_string().contains("no member of the group calls c"),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("\nfix: drop c, or give --allow-uncalled"),
            "{e}"
        );
        check("a", &callees, &[named(&["b"]), named(&[])], true).unwrap();
        let mut computed = named(&[]);
        computed.computed = true;
        check("a", &callees, &[computed, named(&[])], false).unwrap();
        // A callee another callee calls is called.
        let callees = ["b".to_string(), "c".to_string()];
        check(
            "a",
            &callees,
            &[named(&["b"]), named(&["c"]), named(&[])],
            false,
        )
        .unwrap();
    }

    #[test]
    fn a_swapped_pair_names_the_caller() {
        let callees = ["a".to_string()];
        let e = check("b", &callees, &[named(&[]), named(&["b"])], false).unwrap_err();
        assert!(
            e.to_string().contains("b never calls a, and a calls b"),
            "{e}"
        );
        assert_eq!(quoted("it's"), r"'it'\''s'");
        assert_eq!(quoted("--out=/x/y"), "--out=/x/y");
    }
}
