//! Small, safe views of LLVM values that inkwell does not offer: string
//! literals, the `(ptr, len)` pairs that Rust passes a `&str` as, and use lists.
//!
//! Crate-private: every `Value` here comes from a module that is alive for the
//! whole pass using it, which is what makes these calls sound.

use inkwell::llvm_sys::LLVMOpcode;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::module::Module;

mod detached;
mod linkage;

pub use detached::{Detached, detached};
pub use linkage::{
    bypass_aliases, delete_global, drop_initializer, make_declaration, promote_hidden,
};

pub type Value = LLVMValueRef;

/// The members of one of LLVM's lists (values, blocks, uses), from
/// `first`, each next one by `next`.
fn list<T>(first: *mut T, next: unsafe extern "C" fn(*mut T) -> *mut T) -> Vec<*mut T> {
    let mut out = Vec::new();
    let mut v = first;
    while !v.is_null() {
        out.push(v);
        // SAFETY: `v` is a live member of the list `first` starts.
        v = unsafe { next(v) };
    }
    out
}

/// The module's aliases, which inkwell does not list (LLVM's function
/// merging turns a function with another's body into an alias of it).
pub fn aliases<'ctx>(module: &Module<'ctx>) -> Vec<inkwell::values::GlobalValue<'ctx>> {
    // SAFETY: the module is alive; each alias it lists is a global value of it.
    let first = unsafe { LLVMGetFirstGlobalAlias(module.as_mut_ptr()) };
    list(first, LLVMGetNextGlobalAlias)
        .into_iter()
        .map(|a| unsafe { inkwell::values::GlobalValue::new(a) })
        .collect()
}

/// The name of a value (empty for unnamed ones).
pub fn name(v: Value) -> String {
    let mut len = 0;
    // SAFETY: v is a live value; LLVM returns a pointer into its name.
    unsafe {
        let ptr = LLVMGetValueName2(v, &mut len);
        if ptr.is_null() {
            return String::new();
        }
        String::from_utf8_lossy(std::slice::from_raw_parts(ptr as *const u8, len)).into_owned()
    }
}

/// The bytes of a global that holds a constant byte string (`[N x i8] c"…"`).
pub fn string_bytes(global: Value) -> Option<Vec<u8>> {
    unsafe {
        if LLVMIsAGlobalVariable(global).is_null() || LLVMIsGlobalConstant(global) == 0 {
            return None;
        }
        let init = LLVMGetInitializer(global);
        if init.is_null()
            || LLVMIsAConstantDataArray(init).is_null()
            || LLVMIsConstantString(init) == 0
        {
            return None;
        }
        const_bytes(init)
    }
}

/// Every global in the module, including those inkwell would type for us.
pub fn globals(module: &Module) -> Vec<Value> {
    list(
        unsafe { LLVMGetFirstGlobal(module.as_mut_ptr()) },
        LLVMGetNextGlobal,
    )
}

/// One place a value is used: operand `index` of `user`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UseSite {
    pub user: Value,
    pub index: u32,
}

/// Each place where `v` is used.
pub fn uses(v: Value) -> Vec<UseSite> {
    let mut out = Vec::new();
    unsafe {
        for u in list(LLVMGetFirstUse(v), LLVMGetNextUse) {
            let user = LLVMGetUser(u);
            for i in 0..LLVMGetNumOperands(user).max(0) as u32 {
                let site = UseSite { user, index: i };
                if LLVMGetOperand(user, i) == v && !out.contains(&site) {
                    out.push(site);
                }
            }
        }
    }
    out
}

/// A call or invoke instruction.
pub fn is_call(v: Value) -> bool {
    unsafe { !LLVMIsACallInst(v).is_null() || !LLVMIsAInvokeInst(v).is_null() }
}

/// The number of arguments of a call (operands past them are the callee and,
/// for `invoke`, its two destinations).
pub fn arg_count(call: Value) -> u32 {
    unsafe { LLVMGetNumArgOperands(call) }
}

pub fn operand(user: Value, i: u32) -> Value {
    unsafe { LLVMGetOperand(user, i) }
}

pub fn set_operand(user: Value, i: u32, v: Value) {
    unsafe { LLVMSetOperand(user, i, v) }
}

/// The value of a constant integer operand.
pub fn const_u64(v: Value) -> Option<u64> {
    unsafe { (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetZExtValue(v)) }
}

/// A constant pointer `offset` bytes into `base`.
pub struct ByteOffset {
    pub base: Value,
    pub offset: u64,
}

/// `getelementptr (i8, ptr @g, i64 k)` as `@g` and `k`.
pub fn byte_offset(v: Value) -> Option<ByteOffset> {
    unsafe {
        if LLVMIsAConstantExpr(v).is_null()
            || LLVMGetConstOpcode(v) != LLVMOpcode::LLVMGetElementPtr
        {
            return None;
        }
        if LLVMGetNumOperands(v) != 2 {
            return None;
        }
        let source = LLVMGetGEPSourceElementType(v);
        if LLVMGetTypeKind(source) != inkwell::llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
            || LLVMGetIntTypeWidth(source) != 8
        {
            return None;
        }
        Some(ByteOffset {
            base: LLVMGetOperand(v, 0),
            offset: const_u64(LLVMGetOperand(v, 1))?,
        })
    }
}

/// The name of the function a call calls directly.
pub fn callee_name(call: Value) -> Option<String> {
    unsafe {
        let f = LLVMGetCalledValue(call);
        (!f.is_null() && !LLVMIsAFunction(f).is_null()).then(|| name(f))
    }
}

/// How many operands a user (instruction or constant) has.
pub fn operand_count(user: Value) -> u32 {
    unsafe { LLVMGetNumOperands(user).max(0) as u32 }
}

/// A constant integer of `like`'s type.
pub fn const_int_like(like: Value, n: u64) -> Value {
    unsafe { LLVMConstInt(LLVMTypeOf(like), n, 0) }
}

pub fn is_instruction(v: Value) -> bool {
    unsafe { !LLVMIsAInstruction(v).is_null() }
}

/// The global variable whose initializer holds the constant `c`, following
/// constant users upwards.
pub fn holding_global(c: Value) -> Option<Value> {
    let mut todo = vec![c];
    let mut seen = 0;
    while let Some(v) = todo.pop() {
        seen += 1;
        if seen > 64 {
            return None;
        }
        for UseSite { user, .. } in uses(v) {
            unsafe {
                if !LLVMIsAGlobalVariable(user).is_null() {
                    return Some(user);
                }
                if !LLVMIsAConstant(user).is_null() {
                    todo.push(user);
                }
            }
        }
    }
    None
}

/// The function an instruction sits in.
pub fn enclosing_function(inst: Value) -> String {
    unsafe {
        if LLVMIsAInstruction(inst).is_null() {
            return "(a constant)".into();
        }
        name(LLVMGetBasicBlockParent(LLVMGetInstructionParent(inst)))
    }
}

/// An LLVM intrinsic (`llvm.memcpy…`): its pointer arguments are raw memory,
/// never a `&str`, whatever constant follows them.
pub fn calls_intrinsic(call: Value) -> bool {
    callee_name(call).is_some_and(|n| n.starts_with("llvm."))
}

/// A constant struct (`<{ ptr, [16 x i8] }>` is how rustc writes a static
/// holding a `&str`).
pub fn is_const_struct(v: Value) -> bool {
    unsafe { !LLVMIsAConstantStruct(v).is_null() }
}

/// The bytes of a constant `[N x i8]` (a zero initializer reads as zeros).
pub fn const_bytes(v: Value) -> Option<Vec<u8>> {
    unsafe {
        let ty = LLVMTypeOf(v);
        if LLVMGetTypeKind(ty) != inkwell::llvm_sys::LLVMTypeKind::LLVMArrayTypeKind {
            return None;
        }
        let elem = LLVMGetElementType(ty);
        if LLVMGetTypeKind(elem) != inkwell::llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
            || LLVMGetIntTypeWidth(elem) != 8
        {
            return None;
        }
        if !LLVMIsAConstantAggregateZero(v).is_null() {
            return Some(vec![0; LLVMGetArrayLength2(ty) as usize]);
        }
        if LLVMIsAConstantDataArray(v).is_null() {
            return None;
        }
        let mut len = 0;
        let ptr = LLVMGetAsString(v, &mut len);
        Some(std::slice::from_raw_parts(ptr as *const u8, len).to_vec())
    }
}

/// A constant `[N x i8]` holding `bytes`, in `like`'s context.
pub fn const_byte_array(like: Value, bytes: &[u8]) -> Value {
    unsafe {
        LLVMConstStringInContext2(
            LLVMGetTypeContext(LLVMTypeOf(like)),
            bytes.as_ptr() as *const _,
            bytes.len(),
            1,
        )
    }
}

/// Field `index` of a constant struct, given `value`.
pub struct FieldValue {
    pub index: u32,
    pub value: Value,
}

/// `agg` with each of `fields` in place of the operand it names, as a new
/// constant struct of the same type.
pub fn with_struct_fields(agg: Value, fields: &[FieldValue]) -> Value {
    unsafe {
        let n = LLVMGetNumOperands(agg) as u32;
        let mut ops: Vec<Value> = (0..n).map(|k| LLVMGetOperand(agg, k)).collect();
        for field in fields {
            ops[field.index as usize] = field.value;
        }
        LLVMConstNamedStruct(LLVMTypeOf(agg), ops.as_mut_ptr(), n)
    }
}

/// Replaces every use of the constant `old` with `new`; LLVM rebuilds the
/// constants and initializers that held it.
pub fn replace_all_uses(old: Value, new: Value) {
    unsafe { LLVMReplaceAllUsesWith(old, new) }
}

/// `ptr` advanced by `offset` bytes, as a constant (`ptr` itself at 0).
pub fn const_byte_gep(ptr: Value, offset: u64) -> Value {
    if offset == 0 {
        return ptr;
    }
    unsafe {
        let ctx = LLVMGetTypeContext(LLVMTypeOf(ptr));
        let mut index = [LLVMConstInt(LLVMInt64TypeInContext(ctx), offset, 0)];
        LLVMConstInBoundsGEP2(LLVMInt8TypeInContext(ctx), ptr, index.as_mut_ptr(), 1)
    }
}

/// A private constant global holding `bytes`, beside `like` (a string literal).
pub fn add_private_string(module: &Module, name: &str, bytes: &[u8]) -> Value {
    let ctx = module.get_context();
    let value = ctx.const_string(bytes, false);
    let global = module.add_global(value.get_type(), None, name);
    global.set_initializer(&value);
    global.set_constant(true);
    global.set_linkage(inkwell::module::Linkage::Private);
    global.set_unnamed_addr(true);
    global.set_alignment(1);
    inkwell::values::AsValueRef::as_value_ref(&global.as_pointer_value())
}

/// A `&str` passed as the argument pair `(i, i + 1)` of a call, when both are
/// constants: a string global (or a byte offset into one) and its length.
pub fn str_arg(call: Value, i: u32) -> Option<String> {
    if i + 1 >= arg_count(call) {
        return None;
    }
    let (ptr, len) = (operand(call, i), const_u64(operand(call, i + 1))? as usize);
    let at = byte_offset(ptr).unwrap_or(ByteOffset {
        base: ptr,
        offset: 0,
    });
    let bytes = string_bytes(at.base)?;
    let slice = bytes.get(at.offset as usize..at.offset as usize + len)?;
    Some(String::from_utf8_lossy(slice).into_owned())
}

/// A symbol as a person reads it, without the hash.
pub fn demangle(symbol: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(symbol))
}

/// Every function and global variable of the module, defined or declared.
pub fn global_values(module: &Module) -> Vec<Value> {
    let mut out = globals(module);
    out.extend(list(
        unsafe { LLVMGetFirstFunction(module.as_mut_ptr()) },
        LLVMGetNextFunction,
    ));
    out
}

pub fn is_function(v: Value) -> bool {
    unsafe { !LLVMIsAFunction(v).is_null() }
}

pub fn is_declaration(v: Value) -> bool {
    unsafe { LLVMIsDeclaration(v) != 0 }
}

/// A module with aliases or ifuncs, which the split does not handle.
pub fn has_aliases_or_ifuncs(module: &Module) -> bool {
    unsafe {
        !LLVMGetFirstGlobalAlias(module.as_mut_ptr()).is_null()
            || !LLVMGetFirstGlobalIFunc(module.as_mut_ptr()).is_null()
    }
}

/// The instructions of a function's body, block by block, in order.
pub fn instructions(f: Value) -> Vec<Value> {
    // SAFETY: walks the blocks and instructions of a live function.
    unsafe {
        list(LLVMGetFirstBasicBlock(f), LLVMGetNextBasicBlock)
            .into_iter()
            .flat_map(|bb| list(LLVMGetFirstInstruction(bb), LLVMGetNextInstruction))
            .collect()
    }
}

/// The number of instructions in a function's body.
pub fn instruction_count(f: Value) -> usize {
    instructions(f).len()
}

/// The function a call or invoke calls directly, if it calls one.
pub fn called_function(call: Value) -> Option<Value> {
    unsafe {
        let f = LLVMGetCalledValue(call);
        (!f.is_null() && !LLVMIsAFunction(f).is_null()).then_some(f)
    }
}

/// The calls and invokes of a function's body, in order.
pub fn calls_in(f: Value) -> Vec<Value> {
    instructions(f)
        .into_iter()
        .filter(|&i| is_call(i))
        .collect()
}

/// The function a `store` instruction writes into `slot` (rustc's
/// `lang_start` keeps the user's `main` in such a slot).
pub fn function_stored_in(slot: Value) -> Option<Value> {
    uses(slot)
        .into_iter()
        .find_map(|UseSite { user, index }| unsafe {
            let value = LLVMGetOperand(user, 0);
            (!LLVMIsAStoreInst(user).is_null() && index == 1 && is_function(value)).then_some(value)
        })
}

/// The last field of a constant global's struct initializer, when it is a
/// function (a vtable's last method).
pub fn last_method(global: Value) -> Option<Value> {
    unsafe {
        if LLVMIsAGlobalVariable(global).is_null() || LLVMIsGlobalConstant(global) == 0 {
            return None;
        }
        let init = LLVMGetInitializer(global);
        if init.is_null() || !is_const_struct(init) {
            return None;
        }
        let last = LLVMGetOperand(init, operand_count(init).checked_sub(1)?);
        is_function(last).then_some(last)
    }
}
