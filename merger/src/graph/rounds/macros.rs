//! `macro_rules!` as far as the scan needs them: a rule's matcher bound to
//! an invocation's tokens, and its transcriber with them in place (no
//! repetitions, no hygiene: enough to read a call site's literal name).

use crate::graph::tokens::Tree;
use std::collections::HashMap;

/// One `macro_rules!` arm.
#[derive(Debug, Clone)]
pub struct Rule {
    pub matcher: Vec<Tree>,
    pub transcriber: Vec<Tree>,
}

/// Every `macro_rules!` in `trees` (the first of a name wins).
pub fn collect(trees: &[Tree], macros: &mut HashMap<String, Vec<Rule>>) {
    for (i, t) in trees.iter().enumerate() {
        if t.is_ident("macro_rules")
            && trees.get(i + 1).is_some_and(|t| t.is_punct('!'))
            && let (Some(Tree::Ident(name)), Some(Tree::Group(_, body))) =
                (trees.get(i + 2), trees.get(i + 3))
        {
            let mut rules = Vec::new();
            let mut k = 0;
            while let (Some(Tree::Group(_, m)), Some(Tree::Group(_, t))) =
                (body.get(k), body.get(k + 3))
            {
                rules.push(Rule {
                    matcher: m.clone(),
                    transcriber: t.clone(),
                });
                k += 4;
                if body.get(k).is_some_and(|t| t.is_punct(';')) {
                    k += 1;
                }
            }
            macros.entry(name.clone()).or_insert(rules);
        } else if let Tree::Group(_, inner) = t {
            collect(inner, macros);
        }
    }
}

/// Binds a macro rule's matcher to `input`: `$name:frag` takes one tree
/// (`literal`, `ident`, `tt`, `lifetime`) or the trees up to the matcher's
/// next token; matching stops, successfully, at a repetition `$(…)`.
pub fn bind(matcher: &[Tree], input: &[Tree]) -> Option<HashMap<String, Vec<Tree>>> {
    let mut binds = HashMap::new();
    let mut j = 0;
    let mut k = 0;
    while k < matcher.len() {
        match (&matcher[k], matcher.get(k + 1)) {
            (Tree::Punct('$'), Some(Tree::Group('(', _))) => return Some(binds),
            (Tree::Punct('$'), Some(Tree::Ident(name))) => {
                let frag = match matcher.get(k + 3) {
                    Some(Tree::Ident(f)) if matcher[k + 2].is_punct(':') => f.as_str(),
                    _ => return None,
                };
                let end = if ["literal", "ident", "tt", "lifetime"].contains(&frag) {
                    (j < input.len()).then_some(j + 1)?
                } else {
                    match matcher.get(k + 4) {
                        Some(stop) => (j..input.len()).find(|&x| input[x] == *stop)?,
                        None => input.len(),
                    }
                };
                binds.insert(name.clone(), input[j..end].to_vec());
                j = end;
                k += 4;
            }
            (Tree::Group(o, m), _) => {
                let inner = input.get(j)?.group(*o)?;
                binds.extend(bind(m, inner)?);
                j += 1;
                k += 1;
            }
            (token, _) => {
                if input.get(j)? != token {
                    return None;
                }
                j += 1;
                k += 1;
            }
        }
    }
    (j == input.len()).then_some(binds)
}

/// A transcriber with its bound `$name`s replaced.
pub fn transcribe(body: &[Tree], binds: &HashMap<String, Vec<Tree>>) -> Vec<Tree> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < body.len() {
        match (&body[k], body.get(k + 1)) {
            (Tree::Punct('$'), Some(Tree::Ident(name))) if binds.contains_key(name) => {
                out.extend(binds[name].iter().cloned());
                k += 2;
            }
            (Tree::Group(o, inner), _) => {
                out.push(Tree::Group(*o, transcribe(inner, binds)));
                k += 1;
            }
            (t, _) => {
                out.push(t.clone());
                k += 1;
            }
        }
    }
    out
}
