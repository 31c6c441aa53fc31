//! A callee's name passed through a helper of the crate's: a function that
//! hands its own `&str` parameter to `invoke`, or an `async fn` whose poll
//! function reads it from the state the `async fn` filled from its
//! parameters. Each call of the helper that passes a literal there is a
//! site of that callee; anything else stays unknown, never a guess.

use super::Site;
use crate::ir::{self, Value};
use inkwell::llvm_sys::LLVMTypeKind;
use inkwell::llvm_sys::core::{
    LLVMCountParams, LLVMGetBasicBlockParent, LLVMGetCalledValue, LLVMGetGEPSourceElementType,
    LLVMGetInstructionParent, LLVMGetIntTypeWidth, LLVMGetNumOperands, LLVMGetParam,
    LLVMGetTypeKind, LLVMIsAGetElementPtrInst, LLVMIsALoadInst, LLVMIsAStoreInst,
};
use inkwell::module::Module;
use inkwell::values::AsValueRef;

/// How many helpers deep a name passed as a parameter is followed.
const HELPERS: usize = 4;

/// The module's defined functions by their demangled path: where an
/// `async fn`'s poll function finds the `async fn` that fills its state.
pub(super) struct Functions(Vec<(String, Value)>);

impl Functions {
    pub(super) fn of(module: &Module<'_>) -> Functions {
        Functions(
            module
                .get_functions()
                .filter(|f| f.count_basic_blocks() > 0)
                .map(|f| {
                    let name = f.get_name().to_string_lossy();
                    (ir::demangle(&name), f.as_value_ref())
                })
                .collect(),
        )
    }
}

/// The sites a call passing a `&str` at argument `i` (its pointer, then
/// its length) stands for: one naming the literal it passes; or, when the
/// two are the parameters of a helper (directly, or through an `async
/// fn`'s state), one per call of that helper, named by what each passes
/// there. Unknown otherwise, or when the helper is used other than by
/// direct calls.
pub(super) fn names_at(functions: &Functions, call: Value, i: u32, depth: usize) -> Vec<Site> {
    let within = ir::demangle(&ir::enclosing_function(call));
    if let Some(callee) = ir::str_arg(call, i) {
        return vec![Site {
            callee: Some(callee),
            within,
        }];
    }
    if depth < HELPERS && i + 1 < ir::arg_count(call) {
        let (ptr, len) = (ir::operand(call, i), ir::operand(call, i + 1));
        // SAFETY: `call` is a live call instruction: its block's parent is
        // the function it sits in.
        let f = unsafe { LLVMGetBasicBlockParent(LLVMGetInstructionParent(call)) };
        let helper = match param_pair(f, ptr, len) {
            Some(q) => Some((f, q)),
            None => async_param(functions, f, ptr, len),
        };
        if let Some((helper, q)) = helper
            && let Some(calls) = direct_calls(helper)
        {
            return calls
                .into_iter()
                .flat_map(|c| names_at(functions, c, q, depth + 1))
                .collect();
        }
    }
    vec![Site {
        callee: None,
        within,
    }]
}

/// The index of `f`'s parameter `ptr` when `len` is the next one.
fn param_pair(f: Value, ptr: Value, len: Value) -> Option<u32> {
    // SAFETY: `f` is a live function; its parameters are read by index.
    unsafe {
        let count = LLVMCountParams(f);
        (0..count.saturating_sub(1))
            .find(|&q| LLVMGetParam(f, q) == ptr && LLVMGetParam(f, q + 1) == len)
    }
}

/// A name an `async fn`'s poll function `f` loads from its state (two
/// loads, 8 bytes apart, from one parameter): the `async fn` (`f`'s path
/// without `::{{closure}}`) that stores two of its own parameters at those
/// offsets of the state it returns, and the first one's index.
fn async_param(functions: &Functions, f: Value, ptr: Value, len: Value) -> Option<(Value, u32)> {
    // SAFETY: `ptr` and `len` are live values; a load's operand 0 is its
    // address.
    let (ptr, len) = unsafe {
        if LLVMIsALoadInst(ptr).is_null() || LLVMIsALoadInst(len).is_null() {
            return None;
        }
        (ir::operand(ptr, 0), ir::operand(len, 0))
    };
    let (state, at) = field(f, ptr)?;
    if field(f, len)? != (state, at + 8) {
        return None;
    }
    let path = ir::demangle(&ir::name(f));
    let outer = path.strip_suffix("::{{closure}}")?;
    let mut found = functions
        .0
        .iter()
        .filter(|(p, _)| p == outer)
        .filter_map(|&(_, c)| {
            let stored = stores(c);
            // SAFETY: `c` is a live function; its parameters are read by index.
            let is_param =
                |v: Value| unsafe { (0..LLVMCountParams(c)).any(|q| LLVMGetParam(c, q) == v) };
            let at_param = |off: u64| {
                stored
                    .iter()
                    .find(|&&(_, o, v)| o == off && is_param(v))
                    .map(|&(p, _, v)| (p, v))
            };
            let ((p1, v1), (p2, v2)) = (at_param(at)?, at_param(at + 8)?);
            if p1 != p2 {
                return None;
            }
            param_pair(c, v1, v2).map(|q| (c, q))
        });
    let one = found.next()?;
    // Several instances of a generic `async fn` are told apart by nothing
    // here: unknown rather than a guess.
    found.next().is_none().then_some(one)
}

/// `ptr` as one of `f`'s parameters plus a constant byte offset: the
/// parameter itself, or an `i8` `getelementptr` of it.
fn field(f: Value, ptr: Value) -> Option<(u32, u64)> {
    // SAFETY: `ptr` is a live value; a two-operand GEP's operands are its
    // base and its one index.
    let (base, offset) = unsafe {
        if !LLVMIsAGetElementPtrInst(ptr).is_null() && LLVMGetNumOperands(ptr) == 2 {
            let source = LLVMGetGEPSourceElementType(ptr);
            if LLVMGetTypeKind(source) != LLVMTypeKind::LLVMIntegerTypeKind
                || LLVMGetIntTypeWidth(source) != 8
            {
                return None;
            }
            (ir::operand(ptr, 0), ir::const_u64(ir::operand(ptr, 1))?)
        } else {
            (ptr, 0)
        }
    };
    // SAFETY: `f` is a live function; its parameters are read by index.
    let q = unsafe { (0..LLVMCountParams(f)).find(|&q| LLVMGetParam(f, q) == base)? };
    Some((q, offset))
}

/// The stores of `f` into its parameters' memory: (parameter, offset, value).
fn stores(f: Value) -> Vec<(u32, u64, Value)> {
    let mut out = Vec::new();
    for inst in ir::instructions(f) {
        // SAFETY: `inst` is an instruction of the live function `f`; a
        // store's operands are its value and its address.
        let is_store = unsafe { !LLVMIsAStoreInst(inst).is_null() };
        if is_store && let Some((p, off)) = field(f, ir::operand(inst, 1)) {
            out.push((p, off, ir::operand(inst, 0)));
        }
    }
    out
}

/// Every call of `helper`, when it is used only by direct calls.
fn direct_calls(helper: Value) -> Option<Vec<Value>> {
    let uses = ir::uses(helper);
    let direct = |&ir::UseSite { user, index }: &ir::UseSite| {
        // SAFETY: `user` is a live value of the module.
        ir::is_call(user)
            && unsafe { LLVMGetCalledValue(user) } == helper
            && index == ir::operand_count(user) - 1
    };
    (!uses.is_empty() && uses.iter().all(direct))
        .then(|| uses.into_iter().map(|u| u.user).collect())
}
