//! Small, safe views of LLVM values that inkwell does not offer: string
//! literals, the `(ptr, len)` pairs that Rust passes a `&str` as, and use lists.
//!
//! Crate-private: every `Value` here comes from a module that is alive for the
//! whole pass using it, which is what makes these calls sound.

use inkwell::llvm_sys::LLVMOpcode;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::module::Module;

pub type Value = LLVMValueRef;

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
    let mut out = Vec::new();
    unsafe {
        let mut g = LLVMGetFirstGlobal(module.as_mut_ptr());
        while !g.is_null() {
            out.push(g);
            g = LLVMGetNextGlobal(g);
        }
    }
    out
}

/// Each `(user, operand index)` where `v` is used.
pub fn uses(v: Value) -> Vec<(Value, u32)> {
    let mut out = Vec::new();
    unsafe {
        let mut u = LLVMGetFirstUse(v);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            for i in 0..LLVMGetNumOperands(user).max(0) as u32 {
                if LLVMGetOperand(user, i) == v && !out.contains(&(user, i)) {
                    out.push((user, i));
                }
            }
            u = LLVMGetNextUse(u);
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

/// `getelementptr (i8, ptr @g, i64 k)` as `(@g, k)`.
pub fn byte_offset(v: Value) -> Option<(Value, u64)> {
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
        Some((LLVMGetOperand(v, 0), const_u64(LLVMGetOperand(v, 1))?))
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
        for (user, _) in uses(v) {
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

/// `agg` with operand `i` replaced by `v`, as a new constant struct of the same type.
pub fn with_struct_fields(agg: Value, fields: &[(u32, Value)]) -> Value {
    unsafe {
        let n = LLVMGetNumOperands(agg) as u32;
        let mut ops: Vec<Value> = (0..n).map(|k| LLVMGetOperand(agg, k)).collect();
        for &(i, v) in fields {
            ops[i as usize] = v;
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
    let (global, offset) = byte_offset(ptr).unwrap_or((ptr, 0));
    let bytes = string_bytes(global)?;
    let slice = bytes.get(offset as usize..offset as usize + len)?;
    Some(String::from_utf8_lossy(slice).into_owned())
}

/// A symbol as a person reads it, without the hash.
pub fn demangle(symbol: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(symbol))
}

/// Every function and global variable of the module, defined or declared.
pub fn global_values(module: &Module) -> Vec<Value> {
    let mut out = globals(module);
    unsafe {
        let mut f = LLVMGetFirstFunction(module.as_mut_ptr());
        while !f.is_null() {
            out.push(f);
            f = LLVMGetNextFunction(f);
        }
    }
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

/// The number of instructions in a function's body.
pub fn instruction_count(f: Value) -> usize {
    let mut n = 0;
    unsafe {
        let mut bb = LLVMGetFirstBasicBlock(f);
        while !bb.is_null() {
            let mut i = LLVMGetFirstInstruction(bb);
            while !i.is_null() {
                n += 1;
                i = LLVMGetNextInstruction(i);
            }
            bb = LLVMGetNextBasicBlock(bb);
        }
    }
    n
}

/// Makes a local symbol (internal or private) visible to the other
/// partitions' objects, but not outside the binary: external and hidden.
/// An unnamed one gets `name`.
pub fn promote_hidden(v: Value, name: &str) {
    use inkwell::llvm_sys::{LLVMLinkage, LLVMVisibility};
    unsafe {
        let linkage = LLVMGetLinkage(v);
        if matches!(
            linkage,
            LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
        ) {
            if LLVMGetValueName2(v, &mut 0).is_null() || self::name(v).is_empty() {
                LLVMSetValueName2(v, name.as_ptr() as *const _, name.len());
            }
            LLVMSetLinkage(v, LLVMLinkage::LLVMExternalLinkage);
            LLVMSetVisibility(v, LLVMVisibility::LLVMHiddenVisibility);
        }
    }
}

/// Turns a defined function into a declaration of itself: its body, its
/// personality, its metadata and its comdat go; calls to it stay.
pub fn make_declaration(f: Value) {
    unsafe {
        // Uses of its own instructions go first, so the blocks can be deleted
        // in any order.
        let mut bb = LLVMGetFirstBasicBlock(f);
        while !bb.is_null() {
            let mut i = LLVMGetFirstInstruction(bb);
            while !i.is_null() {
                let ty = LLVMTypeOf(i);
                if LLVMGetTypeKind(ty) != inkwell::llvm_sys::LLVMTypeKind::LLVMVoidTypeKind {
                    LLVMReplaceAllUsesWith(i, LLVMGetPoison(ty));
                }
                i = LLVMGetNextInstruction(i);
            }
            bb = LLVMGetNextBasicBlock(bb);
        }
        while !LLVMGetFirstBasicBlock(f).is_null() {
            LLVMDeleteBasicBlock(LLVMGetFirstBasicBlock(f));
        }
        if LLVMHasPersonalityFn(f) != 0 {
            LLVMSetPersonalityFn(f, std::ptr::null_mut());
        }
        LLVMGlobalClearMetadata(f);
        drop_comdat(f);
        LLVMSetLinkage(f, inkwell::llvm_sys::LLVMLinkage::LLVMExternalLinkage);
    }
}

/// Turns a defined global variable into a declaration of itself.
pub fn drop_initializer(g: Value) {
    unsafe {
        LLVMSetInitializer(g, std::ptr::null_mut());
        LLVMGlobalClearMetadata(g);
        drop_comdat(g);
        LLVMSetLinkage(g, inkwell::llvm_sys::LLVMLinkage::LLVMExternalLinkage);
    }
}

fn drop_comdat(v: Value) {
    unsafe {
        if !inkwell::llvm_sys::comdat::LLVMGetComdat(v).is_null() {
            inkwell::llvm_sys::comdat::LLVMSetComdat(v, std::ptr::null_mut());
        }
    }
}

/// Deletes a global variable (`llvm.used` in all partitions but one).
pub fn delete_global(g: Value) {
    unsafe { LLVMDeleteGlobal(g) }
}

/// Points every use of each alias at what it aliases (when that is a
/// function or a global variable), so that unused aliases can be removed.
pub fn bypass_aliases(module: &Module) {
    unsafe {
        let mut a = LLVMGetFirstGlobalAlias(module.as_mut_ptr());
        while !a.is_null() {
            let target = LLVMAliasGetAliasee(a);
            if !LLVMIsAFunction(target).is_null() || !LLVMIsAGlobalVariable(target).is_null() {
                LLVMReplaceAllUsesWith(a, target);
                // A Rust-mangled alias is never called by name from outside.
                let n = name(a);
                if n.starts_with("_ZN") || n.starts_with("_R") {
                    LLVMSetLinkage(a, inkwell::llvm_sys::LLVMLinkage::LLVMInternalLinkage);
                }
            }
            a = LLVMGetNextGlobalAlias(a);
        }
    }
}

/// A module and the context that owns it, handed from the thread that made
/// them to one that compiles them (inkwell's `Module` borrows its context,
/// so the pair cannot move as inkwell types).
pub struct Detached {
    ctx: inkwell::context::Context,
    module: LLVMModuleRef,
}

// SAFETY: an LLVM context and its modules may move between threads as long
// as one thread at a time uses them; `detached` keeps the only handle to the
// module, and `Detached` hands it back to exactly one user.
unsafe impl Send for Detached {}

/// Makes a module in a new context of its own, with `make`, detached.
pub fn detached<E>(
    make: impl FnOnce(&inkwell::context::Context) -> Result<Module<'_>, E>,
) -> Result<Detached, E> {
    let ctx = inkwell::context::Context::create();
    let module = make(&ctx)?;
    let raw = module.as_mut_ptr();
    // The module is owned by `ctx` from here on, until `with` takes it back.
    std::mem::forget(module);
    Ok(Detached { ctx, module: raw })
}

impl Detached {
    /// Runs `f` on the module, which stays.
    pub fn borrow<T>(&self, f: impl FnOnce(&Module<'_>) -> T) -> T {
        // SAFETY: as in `with`; the `Module` made here is forgotten, not
        // dropped, so the module stays owned by `self`.
        let module = unsafe { Module::new(self.module) };
        let out = f(&module);
        std::mem::forget(module);
        out
    }

    /// Runs `f` on the module, then frees the module and its context.
    pub fn with<T>(self, f: impl FnOnce(&Module<'_>) -> T) -> T {
        // SAFETY: `self.module` is the module `detached` made, alive and owned by
        // `self.ctx`; the `Module` made here drops it before the context.
        let module = unsafe { Module::new(self.module) };
        let out = f(&module);
        drop(module);
        drop(self.ctx);
        out
    }
}
