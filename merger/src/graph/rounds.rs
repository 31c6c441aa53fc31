//! The call structure of a function, read from its source: which `invoke`
//! calls it makes at once and which one after another, as *rounds* (a
//! round's calls overlap; a round starts when the one before has ended).
//!
//! The bitcode ([`fmerge_ir::calls`]) says which callees a function names
//! and how often; this scan only orders them. It reads the function's own
//! crate (`src/**/*.rs`) as token trees (`tokens.rs`), with the
//! `macro_rules!` of the user's other crates it links expanded in place (a
//! macro such as `sn_store::by_usernames!` expands in the caller's crate,
//! which is where the bitcode finds its calls), and walks each `fn` body in
//! source order:
//! - a site is `invoke(NAME, …)` (or `invoke_request`) with `NAME` a string literal, a `const`
//!   of the crate, or a macro argument bound to a literal;
//! - the branches of `join!`, `try_join!`, `select!` (macros) and of
//!   `join`, `try_join`, `join3`…, `join_all`, `try_join_all`, `select*`
//!   (functions) run at once: their k-th rounds share a round (exact when
//!   each branch is one round, an upper bound otherwise);
//! - the arms of `if`/`else` and `match` are alternatives: merged the same
//!   way (an upper bound of whichever runs);
//! - consecutive `spawn(…)`s run at once with each other; anything after
//!   them is taken as starting once they have ended (an upper bound: a task
//!   joined later may overlap more);
//! - a site in the body of `for`, `while` or `loop`, in a `while`
//!   condition, or in a closure given to a function other than a join
//!   (a stream's `then`, an iterator's `for_each`) is *looped*: on the
//!   critical path once per iteration;
//! - but the closure before a stream's `buffer_unordered`/`buffered`, or
//!   given to `for_each_concurrent`, runs at once over the items, and so
//!   do the tasks a loop whose body only spawns them starts;
//! - a call of another `fn` of the crate that makes calls brings its
//!   rounds in at that point;
//! - anything else is awaited where it stands: its own round, in source
//!   order (a future stored and joined later is over-counted, never under).
//!
//! A callee the bitcode names that the scan cannot place as often as the
//! bitcode counts it is left out of the rounds ([`reconcile`]): the planner
//! then takes each of its calls one after another, and says so.

mod macros;
mod parts;
use parts::looped;

use super::tokens::{Tree, arms, brace_after, crate_files, item_end, test_only};
use anyhow::Result;
use macros::{Rule, bind, transcribe};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Calls a function makes at once; the round after starts when they have
/// all ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Round {
    /// Callees, one entry per call site made once.
    pub calls: Vec<String>,
    /// Callees, one entry per call site in a loop: made once per iteration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looped: Vec<String>,
}

impl Round {
    fn sites(&self) -> impl Iterator<Item = &String> {
        self.calls.iter().chain(&self.looped)
    }
}

/// Macros that run their branches at once.
const JOIN_MACROS: &[&str] = &["join", "try_join", "select"];
/// Functions that run their arguments at once.
const JOIN_FNS: &[&str] = &[
    "join",
    "join3",
    "join4",
    "join5",
    "try_join",
    "try_join3",
    "try_join4",
    "try_join5",
    "join_all",
    "try_join_all",
    "select",
    "select_all",
    "select_ok",
    "try_select",
];
/// Stream adapters that run the futures of the closure before them (`.map(|x|
/// …).buffer_unordered(n)`) at once, up to `n`: taken as at once, the
/// bound that never claims more than the calls' longest.
const CONCURRENT_ADAPTERS: &[&str] = &[
    "buffer_unordered",
    "buffered",
    "try_buffer_unordered",
    "try_buffered",
];
/// Stream methods whose own closure runs at once over the items.
const CONCURRENT_METHODS: &[&str] = &["for_each_concurrent", "try_for_each_concurrent"];
/// Nested macro expansions followed at most.
const MAX_EXPANSIONS: usize = 32;

/// The rounds of the function whose crate is at `own` (its package
/// folder), with the macros of the user's crates at `deps`.
pub fn read(own: &Path, deps: &[PathBuf]) -> Result<Vec<Round>> {
    let own = crate_files(own)?;
    let mut deps_trees = Vec::new();
    for d in deps {
        deps_trees.extend(crate_files(d)?);
    }
    Ok(scan(&own, &deps_trees))
}

/// The rounds of a crate whose files are `own`, with the macros defined in
/// `deps` (and in `own`).
pub fn scan(own: &[Vec<Tree>], deps: &[Vec<Tree>]) -> Vec<Round> {
    let mut s = Scan::default();
    for file in own.iter().chain(deps) {
        macros::collect(file, &mut s.macros);
    }
    for file in own {
        s.items(file, 0);
    }
    let names: Vec<String> = s.fns.iter().map(|(n, _)| n.clone()).collect();
    let all: Vec<Vec<Round>> = names.iter().map(|n| s.rounds_of(n)).collect();
    // The roots: functions with calls that no other one brings in.
    let mut out = Vec::new();
    let mut done = HashSet::new();
    for (name, rounds) in names.iter().zip(all) {
        if !s.brought.contains(name) && done.insert(name) {
            out.extend(rounds);
        }
    }
    out
}

/// Keeps, of `rounds`, the sites of callees the bitcode counts (`sites`,
/// per callee) and that the scan placed at least as often; a callee placed
/// less often, or not at all, is left to be taken one call after another.
pub fn reconcile(rounds: Vec<Round>, sites: &BTreeMap<&str, usize>) -> Vec<Round> {
    let mut placed: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rounds {
        for c in r.sites() {
            *placed.entry(c).or_default() += 1;
        }
    }
    let keep = |c: &String| {
        sites
            .get(c.as_str())
            .is_some_and(|n| placed.get(c.as_str()).copied().unwrap_or(0) >= *n)
    };
    rounds
        .iter()
        .map(|r| Round {
            calls: r.calls.iter().filter(|c| keep(c)).cloned().collect(),
            looped: r.looped.iter().filter(|c| keep(c)).cloned().collect(),
        })
        .filter(|r| r.sites().next().is_some())
        .collect()
}

/// Rounds run at once (or as alternatives): the k-th rounds merged.
fn together(branches: Vec<Vec<Round>>) -> Vec<Round> {
    let mut out: Vec<Round> = Vec::new();
    for branch in branches {
        for (k, r) in branch.into_iter().enumerate() {
            if k == out.len() {
                out.push(Round::default());
            }
            out[k].calls.extend(r.calls);
            out[k].looped.extend(r.looped);
        }
    }
    out
}

#[derive(Default)]
struct Scan {
    macros: HashMap<String, Vec<Rule>>,
    consts: HashMap<String, String>,
    fns: Vec<(String, Vec<Tree>)>,
    memo: HashMap<String, Vec<Round>>,
    visiting: HashSet<String>,
    /// Functions whose rounds another one brings in.
    brought: HashSet<String>,
    /// How many join functions' arguments the scan is in.
    joining: usize,
    expansions: usize,
}

impl Scan {
    /// Items of the crate: `fn`s (in `mod`, `impl` and `trait` bodies too),
    /// string `const`s and `static`s, the expansions of known macros.
    fn items(&mut self, trees: &[Tree], depth: usize) {
        let mut i = 0;
        while i < trees.len() {
            let t = &trees[i];
            if let Some(skip) = test_only(trees, i) {
                i += skip;
            } else if t.is_ident("fn")
                && let Some(Tree::Ident(name)) = trees.get(i + 1)
            {
                let end = item_end(trees, i + 2);
                if let Some(body) = trees.get(end).and_then(|t| t.group('{')) {
                    self.fns.push((name.clone(), body.to_vec()));
                }
                i = end + 1;
            } else if (t.is_ident("const") || t.is_ident("static"))
                && let Some(Tree::Ident(name)) = trees.get(i + 1)
            {
                let end = item_end(trees, i + 2);
                if let [Tree::Punct('='), Tree::Str(value)] = &trees[end.saturating_sub(2)..end] {
                    self.consts.insert(name.clone(), value.clone());
                }
                i = end + 1;
            } else if let Some(expanded) = self.expand_at(trees, i, depth) {
                self.items(&expanded, depth + 1);
                i += 3;
            } else {
                if let Some(inner) = t.group('{') {
                    self.items(inner, depth);
                }
                i += 1;
            }
        }
    }

    /// The expansion of a known macro invoked at `trees[i]` (`name!(…)`).
    fn expand_at(&mut self, trees: &[Tree], i: usize, depth: usize) -> Option<Vec<Tree>> {
        let (Tree::Ident(name), Some(bang), Some(Tree::Group(_, input))) =
            (&trees[i], trees.get(i + 1), trees.get(i + 2))
        else {
            return None;
        };
        if !bang.is_punct('!') || depth > MAX_EXPANSIONS || self.expansions > 10 * MAX_EXPANSIONS {
            return None;
        }
        let rules = self.macros.get(name)?;
        let (binds, body) = rules
            .iter()
            .find_map(|r| Some((bind(&r.matcher, input)?, &r.transcriber)))?;
        self.expansions += 1;
        Some(transcribe(body, &binds))
    }

    /// The rounds of the crate's `fn name` (of all of that name, in order).
    fn rounds_of(&mut self, name: &str) -> Vec<Round> {
        if let Some(known) = self.memo.get(name) {
            return known.clone();
        }
        if !self.visiting.insert(name.to_string()) {
            return Vec::new(); // recursion: its calls are counted once
        }
        let bodies: Vec<Vec<Tree>> = self
            .fns
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .collect();
        let mut out = Vec::new();
        for body in bodies {
            out.extend(self.seq(&body, 0));
        }
        self.visiting.remove(name);
        self.memo.insert(name.to_string(), out.clone());
        out
    }

    /// The rounds of code run in order.
    fn seq(&mut self, trees: &[Tree], depth: usize) -> Vec<Round> {
        self.seq_spawning(trees, depth).0
    }

    /// [`seq`](Self::seq), and whether every construct of it that makes
    /// calls is a `spawn` (a loop of such runs its iterations at once).
    fn seq_spawning(&mut self, trees: &[Tree], depth: usize) -> (Vec<Round>, bool) {
        let mut out: Vec<Round> = Vec::new();
        // Where the run of `spawn`s going on began in `out`.
        let mut spawned: Option<usize> = None;
        let mut only_spawns = true;
        let mut i = 0;
        while i < trees.len() {
            let (rounds, used, spawn) = self.step(trees, i, depth);
            if !rounds.is_empty() {
                only_spawns &= spawn;
                match (spawn, spawned) {
                    (true, Some(start)) => {
                        let before = out.split_off(start);
                        out.extend(together(vec![before, rounds]));
                    }
                    (true, None) => {
                        spawned = Some(out.len());
                        out.extend(rounds);
                    }
                    (false, _) => {
                        spawned = None;
                        out.extend(rounds);
                    }
                }
            }
            i += used;
        }
        (out, only_spawns)
    }

    /// The construct at `trees[i]`: its rounds, how many trees it spans,
    /// whether it is a `spawn`.
    fn step(&mut self, trees: &[Tree], i: usize, depth: usize) -> (Vec<Round>, usize, bool) {
        let t = &trees[i];
        let next = trees.get(i + 1);
        if let Some(skip) = test_only(trees, i) {
            return (Vec::new(), skip, false);
        }
        if t.is_ident("fn") || t.is_ident("macro_rules") {
            return (Vec::new(), item_end(trees, i + 1) - i + 1, false); // not run here
        }
        if t.is_ident("for") || t.is_ident("while") || t.is_ident("loop") {
            let Some(b) = brace_after(trees, i + 1) else {
                return (Vec::new(), 1, false);
            };
            // A `while` condition runs before each iteration; a `for`'s
            // iterator once.
            let mut rounds = self.seq(&trees[i + 1..b], depth);
            if t.is_ident("while") {
                rounds = looped(rounds);
            }
            // A body that only spawns tasks starts them all at once, as
            // consecutive spawns do; what follows waits for them.
            let (body, spawns) = self.seq_spawning(trees[b].group('{').expect("a block"), depth);
            let spawns = spawns && !body.is_empty() && rounds.is_empty();
            rounds.extend(if spawns { body } else { looped(body) });
            return (rounds, b - i + 1, spawns);
        }
        if t.is_ident("if") {
            return self.alternatives(trees, i, depth);
        }
        if t.is_ident("match")
            && let Some(b) = brace_after(trees, i + 1)
        {
            let mut rounds = self.seq(&trees[i + 1..b], depth);
            let arms = arms(trees[b].group('{').expect("a block"))
                .into_iter()
                .map(|arm| self.seq(arm, depth))
                .collect();
            rounds.extend(together(arms));
            return (rounds, b - i + 1, false);
        }
        if let Tree::Ident(name) = t
            && next.is_some_and(|n| n.is_punct('!'))
            && let Some(Tree::Group(_, inner)) = trees.get(i + 2)
        {
            if JOIN_MACROS.contains(&name.as_str()) {
                return (self.branches(inner, depth), 3, false);
            }
            if let Some(expanded) = self.expand_at(trees, i, depth) {
                return (self.seq(&expanded, depth + 1), 3, false);
            }
            return (self.seq(inner, depth), 3, false);
        }
        if let Tree::Ident(name) = t
            && let Some(args) = next.and_then(|n| n.group('('))
        {
            let mut inner_spawn = false;
            let rounds = if name == "invoke" || name == "invoke_request" {
                self.site(args, depth)
            } else if JOIN_FNS.contains(&name.as_str()) {
                self.joining += 1;
                let rounds = self.branches(args, depth);
                self.joining -= 1;
                rounds
            } else if args.iter().any(|a| a.is_punct('|'))
                && self.joining == 0
                && (CONCURRENT_METHODS.contains(&name.as_str()) || buffered(trees, i + 2))
            {
                // The closure's futures run at once over the items.
                self.joining += 1;
                let rounds = self.seq(args, depth);
                self.joining -= 1;
                rounds
            } else if args.iter().any(|a| a.is_punct('|')) && self.joining == 0 {
                // A closure given to a method (a stream's `then`, an
                // iterator's `for_each`) may run once per item, one after
                // another; given to a join function, at once.
                looped(self.seq(args, depth))
            } else if self.fns.iter().any(|(n, _)| n == name) {
                let mut r = self.seq(args, depth);
                let called = self.rounds_of(name);
                if !called.is_empty() {
                    self.brought.insert(name.clone());
                }
                r.extend(called);
                r
            } else {
                // A spawn handed on (`tasks.push(spawn(…))`) is a spawn.
                let (rounds, spawns) = self.seq_spawning(args, depth);
                inner_spawn = spawns && !rounds.is_empty();
                rounds
            };
            return (rounds, 2, name == "spawn" || inner_spawn);
        }
        if let Tree::Group(_, inner) = t {
            return (self.seq(inner, depth), 1, false);
        }
        (Vec::new(), 1, false)
    }
}

/// Whether the method chain from `trees[from]` on (`.name(…)` after
/// `.name(…)`) goes through a [`CONCURRENT_ADAPTERS`] one.
fn buffered(trees: &[Tree], from: usize) -> bool {
    let mut i = from;
    while trees.get(i).is_some_and(|t| t.is_punct('.')) {
        let Some(Tree::Ident(name)) = trees.get(i + 1) else {
            return false;
        };
        if CONCURRENT_ADAPTERS.contains(&name.as_str()) {
            return true;
        }
        // A method's turbofish or its arguments, then the next `.`.
        i += 2;
        while trees
            .get(i)
            .is_some_and(|t| !t.is_punct('.') && !t.is_punct(';'))
        {
            if trees[i].group('(').is_some() {
                i += 1;
                break;
            }
            i += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests;
