//! The call graph the `blocking` conclusion walks, gathered crate by crate.
//!
//! A crate pass cannot follow a call into another crate, and the reuse path
//! frees each crate's module once its passes ran, so this pass keeps, for
//! every crate some merged callee links, what each of its functions refers
//! to, by symbol: the functions it calls, and those whose address it takes,
//! directly or through a constant (a trait object's vtable, a task's), since
//! such a function may be called later on the same thread (a boxed future's
//! `poll`, a spawned task). A reference passed as an argument of a call
//! remembers that call, so that the walk can leave out what is handed to
//! another thread or run once (`std::sync::Once`'s `call`, say). Each
//! reference is read once from LLVM's use lists, so the work is the number
//! of references, not of instructions. For the callee's own crates it also
//! records the functions with a busy loop ([`spin`]).

pub mod spin;

use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::Result;
use inkwell::llvm_sys::core::*;
use inkwell::module::Module;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub use spin::Spin;

/// A function, by its index in [`CallGraph::names`].
pub type Id = u32;

/// How a function refers to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ref {
    /// It calls it.
    Call,
    /// It passes its address (or a constant holding it) to that function.
    Arg(Id),
    /// It takes its address otherwise (stores it, returns it).
    Taken,
}

/// One reference of a function: to function `to`, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference {
    pub to: Id,
    pub how: Ref,
}

/// What every function of the crates seen so far refers to, by symbol.
#[derive(Default)]
pub struct CallGraph {
    ids: Map<String, Id>,
    /// Each function's symbol.
    pub names: Vec<String>,
    /// Each function's references.
    pub refs: Vec<Vec<Reference>>,
    /// Some crate defines it (otherwise only its name says what it does).
    pub defined: Vec<bool>,
    /// The functions of a callee's own crates that hold a busy loop.
    pub spins: Map<Id, Spin>,
    /// Each merged function's own crate (its bin's).
    pub own_crate: HashMap<String, String>,
    /// The crates seen, in order.
    pub crates: Vec<GraphCrate>,
    /// Each function's first defining crate, by its index in `crates`.
    pub defined_in: Vec<Option<u32>>,
}

/// A crate whose functions are in the graph.
#[derive(Debug, Clone)]
pub struct GraphCrate {
    pub name: String,
    /// One of the user's own path crates.
    pub local: bool,
}

impl CallGraph {
    /// The id of `name`, made on first sight.
    pub fn id(&mut self, name: &str) -> Id {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as Id;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        self.refs.push(Vec::new());
        self.defined.push(false);
        self.defined_in.push(None);
        id
    }

    /// The id of `name`, if some crate mentions it.
    pub fn get(&self, name: &str) -> Option<Id> {
        self.ids.get(name).copied()
    }

    /// The crate that defines function `id`, if one does.
    pub fn crate_of(&self, id: Id) -> Option<&GraphCrate> {
        self.defined_in[id as usize].map(|c| &self.crates[c as usize])
    }
}

/// Adds the functions of a crate some callee links to `found.calls`; in a
/// merge of watchdog processes, of every crate, since whether a callee may
/// run in the caller's process depends on the caller's code too
/// (`in_process`).
pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    if !facts.process && !krate.owners.iter().any(|o| facts.callees.contains(o)) {
        return Ok(());
    }
    let graph = &mut found.calls;
    // A function's own crate: the one that defines its entry (its renamed
    // `main`, for a watchdog process).
    if let Some(function) = krate.function
        && match facts.process {
            true => module
                .get_function(&fmerge_contract::main_symbol(function))
                .is_some(),
            false => crate::passes::entry::find(module, function).is_ok(),
        }
    {
        graph
            .own_crate
            .insert(function.to_string(), krate.name.to_string());
    }
    let this = graph.crates.len() as u32;
    graph.crates.push(GraphCrate {
        name: krate.name.to_string(),
        local: krate.local,
    });
    // Each function of the module, by its value: named once.
    let mut ids: Map<ir::Value, Id> = Map::default();
    let functions: Vec<_> = module.get_functions().collect();
    for f in &functions {
        let value = inkwell::values::AsValueRef::as_value_ref(f);
        ids.insert(value, graph.id(&ir::name(value)));
    }
    // The functions each global's value reaches, through constants.
    let mut holders: Map<ir::Value, Vec<(ir::Value, Use)>> = Map::default();
    let own = krate.local && krate.callee_owner(facts).is_some();
    for f in &functions {
        let value = inkwell::values::AsValueRef::as_value_ref(f);
        let to = ids[&value];
        if graph.names[to as usize].starts_with("llvm.") {
            continue;
        }
        if f.count_basic_blocks() > 0 {
            graph.defined[to as usize] = true;
            graph.defined_in[to as usize].get_or_insert(this);
            if own && let Some(spin) = spin::find(value) {
                graph.spins.insert(to, spin);
            }
        }
        for (from, how) in referrers(value, &mut holders) {
            let from = ids[&from];
            let how = match how {
                Use::Call => Ref::Call,
                Use::Arg(callee) => Ref::Arg(ids[&callee]),
                Use::Taken => Ref::Taken,
            };
            let refs = &mut graph.refs[from as usize];
            let reference = Reference { to, how };
            if !refs.contains(&reference) {
                refs.push(reference);
            }
        }
    }
    Ok(())
}

/// How an instruction uses a value, as [`Ref`] with LLVM's values.
#[derive(Clone, Copy)]
enum Use {
    Call,
    Arg(ir::Value),
    Taken,
}

/// The functions whose code refers to `value`, and how; through constants
/// and constant globals (a vtable), memoized in `holders`. A mutable
/// global's function pointers are not followed: they are state, called
/// through a load if at all (a `LazyLock`'s initialiser, called once).
fn referrers(
    value: ir::Value,
    holders: &mut Map<ir::Value, Vec<(ir::Value, Use)>>,
) -> Vec<(ir::Value, Use)> {
    let mut out = Vec::new();
    for user in users(value) {
        // SAFETY: `user` is a live user of a value of this module.
        unsafe {
            if !LLVMIsAFunction(user).is_null() {
                continue; // a function's personality: no call of it
            }
            if !LLVMIsAInstruction(user).is_null() {
                let from = LLVMGetBasicBlockParent(LLVMGetInstructionParent(user));
                let callee = ir::is_call(user).then(|| LLVMGetCalledValue(user));
                let how = match callee {
                    Some(c) if c == value => Use::Call,
                    Some(c) if !LLVMIsAFunction(c).is_null() => Use::Arg(c),
                    _ => Use::Taken,
                };
                out.push((from, how));
            } else if !LLVMIsAGlobalVariable(user).is_null() && LLVMIsGlobalConstant(user) == 0 {
                continue;
            } else if !LLVMIsAConstant(user).is_null() {
                // A global's initializer, or a constant on the way to one.
                if !holders.contains_key(&user) {
                    holders.insert(user, Vec::new()); // a cycle of globals ends here
                    let found = referrers(user, holders);
                    holders.insert(user, found);
                }
                out.extend(holders[&user].iter().copied());
            }
        }
    }
    out
}

/// The users of a value (a user of it in two operands twice: the graph
/// keeps each reference once).
fn users(value: ir::Value) -> Vec<ir::Value> {
    // SAFETY: walks the use list of a live value.
    unsafe {
        members(LLVMGetFirstUse(value), LLVMGetNextUse)
            .map(|u| LLVMGetUser(u))
            .collect()
    }
}

/// The members of one of LLVM's lists (a value's uses, a function's
/// blocks, a block's instructions) from `first`, each next one by `next`.
///
/// # Safety
/// `first` is null or a member of a list that stays alive and unchanged
/// while the walk lasts.
unsafe fn members<P>(
    first: *mut P,
    next: unsafe extern "C" fn(*mut P) -> *mut P,
) -> impl Iterator<Item = *mut P> {
    let live = |p: *mut P| (!p.is_null()).then_some(p);
    // SAFETY: the caller keeps the list alive; each `p` is a member of it.
    std::iter::successors(live(first), move |&p| live(unsafe { next(p) }))
}

/// A hash map with a multiplicative hash: std's SipHash resists crafted
/// keys, which symbols and LLVM's pointers are not, at several times the cost.
pub type Map<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// The hash of [`Map`] (rustc's FxHash).
#[derive(Default)]
pub struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}
