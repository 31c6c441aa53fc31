//! Busy loops: a loop in a function's own code that holds its thread while
//! it waits, found from the function's control flow.
//!
//! A loop is a cycle of basic blocks (a strongly connected component of the
//! control-flow graph). A loop is counted as busy when it waits for
//! something outside it, as a busy wait does, with no suspension point in
//! it: it never exits (no edge leaves it, so no `.await` returns from it)
//! and does something (a store, a call; an empty one is a path the
//! optimizer proved is never taken), or it reads the clock and calls
//! nothing but pure helpers (it runs until a time passes; an `.await` in a
//! loop is a call of a `poll`, so such a loop is not counted). A loop that
//! computes over data ends when its data does, and is not counted; nor is
//! one that polls through an opaque call of its own, nor one that spins on
//! `std::hint::spin_loop` alone: lock-free code inlined from libraries
//! retries so, a bounded number of times.

use super::members;
use crate::ir;
use inkwell::llvm_sys::core::*;
use std::collections::HashMap;

/// What a busy loop waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spin {
    /// No edge leaves it.
    Forever,
    /// It reads the clock on each turn.
    Clock,
}

impl Spin {
    /// For the warning.
    pub fn describe(self) -> &'static str {
        match self {
            Spin::Forever => "a loop with no exit",
            Spin::Clock => "a busy loop that waits on the clock",
        }
    }
}

/// The busy loop of function `f`, if it has one.
pub fn find(f: ir::Value) -> Option<Spin> {
    let blocks = blocks(f);
    if blocks.len() < 2 && !blocks.iter().any(|&b| successors(b).contains(&b)) {
        return None;
    }
    let index: HashMap<ir::Value, usize> =
        blocks.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let succ: Vec<Vec<usize>> = blocks
        .iter()
        .map(|&b| successors(b).iter().map(|s| index[s]).collect())
        .collect();
    let component = components(&succ);
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, &c) in component.iter().enumerate() {
        if members.len() <= c {
            members.resize(c + 1, Vec::new());
        }
        members[c].push(i);
    }
    let mut best = None;
    for (c, members) in members.iter().enumerate() {
        let looped = members.len() > 1 || succ[members[0]].contains(&members[0]);
        if !looped {
            continue;
        }
        let exits = members
            .iter()
            .any(|&i| succ[i].iter().any(|&s| component[s] != c));
        let spin = match exits {
            false => members
                .iter()
                .any(|&i| acts(blocks[i]))
                .then_some(Spin::Forever),
            true => {
                let members: Vec<ir::Value> = members.iter().map(|&i| blocks[i]).collect();
                on_clock(&members).then_some(Spin::Clock)
            }
        };
        best = best.or(spin);
    }
    best
}

/// Whether a block does anything but branch: an empty loop with no exit is
/// what the optimizer leaves on a path the code never takes (a hash probe
/// of a table that is never empty, inlined from a library).
fn acts(block: ir::Value) -> bool {
    // SAFETY: reads the instructions of a live block.
    unsafe {
        instructions(block).any(|i| {
            !LLVMIsAStoreInst(i).is_null()
                || ir::is_call(i)
                || !LLVMIsAAtomicRMWInst(i).is_null()
                || !LLVMIsAAtomicCmpXchgInst(i).is_null()
        })
    }
}

/// The instructions of `block`.
///
/// # Safety
/// `block` is a live block, unchanged while the walk lasts.
unsafe fn instructions(block: ir::Value) -> impl Iterator<Item = ir::Value> {
    // SAFETY: the caller's.
    unsafe {
        members(
            LLVMGetFirstInstruction(LLVMValueAsBasicBlock(block)),
            LLVMGetNextInstruction,
        )
    }
}

/// What a loop's calls say: it reads the clock, and calls nothing else
/// but pure helpers (`core`'s, the clock's, LLVM's intrinsics). A loop
/// that calls anything more may suspend in it (an `.await` whose future is
/// ready at once turns back into the loop) or wait in the callee, which the
/// walk judges on its own.
fn on_clock(blocks: &[ir::Value]) -> bool {
    // SAFETY: walks the instructions of live blocks.
    let called: Vec<Option<String>> = unsafe {
        blocks
            .iter()
            .flat_map(|&block| instructions(block))
            .filter(|&i| ir::is_call(i))
            .map(ir::callee_name)
            .collect()
    };
    // Most loops read no clock: known before demangling anything.
    let clocked = |n: &str| {
        ["now", "elapsed", "clock_gettime"]
            .iter()
            .any(|c| n.contains(c))
    };
    if !called.iter().flatten().any(|n| clocked(n)) {
        return false;
    }
    let mut clock = false;
    for name in called {
        let Some(name) = name else {
            return false; // through a pointer: anything
        };
        let path = crate::passes::blocking::names::inherent(&ir::demangle(&name));
        if name == "clock_gettime" || CLOCK.iter().any(|c| path.ends_with(c)) {
            clock = true;
        } else if !(name.starts_with("llvm.") || pure(&path)) {
            return false;
        }
    }
    clock
}

/// Reading the clock.
const CLOCK: &[&str] = &[
    "Instant::now",
    "SystemTime::now",
    "Timespec::now",
    "Instant::elapsed",
];

/// A helper that neither waits nor suspends: `core`'s (but a future's
/// `poll`) and the time arithmetic of std.
fn pure(path: &str) -> bool {
    let path = path.trim_start_matches(['<', '&']);
    (path.starts_with("core::") && !path.contains("poll")) || path.starts_with("std::time::")
}

fn blocks(f: ir::Value) -> Vec<ir::Value> {
    // SAFETY: walks the blocks of a live function.
    unsafe {
        members(LLVMGetFirstBasicBlock(f), LLVMGetNextBasicBlock)
            .map(|b| LLVMBasicBlockAsValue(b))
            .collect()
    }
}

fn successors(block: ir::Value) -> Vec<ir::Value> {
    // SAFETY: a live block's terminator and its successors.
    unsafe {
        let term = LLVMGetBasicBlockTerminator(LLVMValueAsBasicBlock(block));
        if term.is_null() {
            return Vec::new();
        }
        (0..LLVMGetNumSuccessors(term))
            .map(|i| LLVMBasicBlockAsValue(LLVMGetSuccessor(term, i)))
            .collect()
    }
}

/// The strongly connected component of each node (Tarjan's, without
/// recursion: a state machine's `poll` has thousands of blocks).
fn components(succ: &[Vec<usize>]) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let n = succ.len();
    let (mut index, mut low, mut comp) = (vec![NONE; n], vec![0; n], vec![NONE; n]);
    let (mut on_stack, mut stack, mut next, mut count) = (vec![false; n], Vec::new(), 0, 0);
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == NONE {
                (index[v], low[v]) = (next, next);
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = succ[v].get(*child) {
                *child += 1;
                if index[w] == NONE {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = count;
                    if w == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    comp
}
