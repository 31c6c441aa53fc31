//! The constructs of a body the scan reads part by part: an `invoke` site
//! (its payload, then the call), the branches of a join (at once), and the
//! branches of `if`/`else` (alternatives).

use super::{Round, Scan, together};
use crate::graph::tokens::{Tree, brace_after, split_commas};

impl Scan {
    /// `invoke(NAME, payload)`: the payload first, then the call.
    pub(super) fn site(&mut self, args: &[Tree], depth: usize) -> Vec<Round> {
        let parts = split_commas(args);
        let mut rounds = Vec::new();
        for p in parts.iter().skip(1) {
            rounds.extend(self.seq(p, depth));
        }
        let callee = match parts.first() {
            Some([Tree::Str(s)]) => Some(s),
            Some([Tree::Ident(c)]) => self.consts.get(c),
            _ => None,
        };
        // A name the scan cannot read: left to the bitcode's count (taken
        // one after another), not guessed.
        if let Some(callee) = callee {
            rounds.push(Round {
                calls: vec![crate::graph::function_of(callee).to_string()],
                looped: Vec::new(),
            });
        }
        rounds
    }

    pub(super) fn branches(&mut self, inner: &[Tree], depth: usize) -> Vec<Round> {
        let branches = split_commas(inner)
            .into_iter()
            .map(|b| self.seq(b, depth))
            .collect();
        together(branches)
    }

    /// `if C {A} else if D {B} else {E}`: the conditions in order, then the
    /// branches as alternatives.
    pub(super) fn alternatives(
        &mut self,
        trees: &[Tree],
        i: usize,
        depth: usize,
    ) -> (Vec<Round>, usize, bool) {
        let (mut conditions, mut branches) = (Vec::new(), Vec::new());
        let mut j = i;
        loop {
            let Some(b) = brace_after(trees, j + 1) else {
                return (conditions, j - i + 1, false);
            };
            conditions.extend(self.seq(&trees[j + 1..b], depth));
            branches.push(self.seq(trees[b].group('{').expect("a block"), depth));
            j = b + 1;
            if !trees.get(j).is_some_and(|t| t.is_ident("else")) {
                break;
            }
            match trees.get(j + 1) {
                Some(t) if t.is_ident("if") => j += 1,
                Some(Tree::Group('{', body)) => {
                    branches.push(self.seq(body, depth));
                    j += 2;
                    break;
                }
                _ => break,
            }
        }
        conditions.extend(together(branches));
        (conditions, j - i, false)
    }
}

/// `rounds` made once per iteration of a loop.
pub(super) fn looped(rounds: Vec<Round>) -> Vec<Round> {
    rounds
        .into_iter()
        .map(|mut r| {
            r.looped.append(&mut r.calls);
            r
        })
        .collect()
}
