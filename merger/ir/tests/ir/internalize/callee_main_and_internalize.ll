; Two functions' bins: the callee's `main` becomes internal under another
; name; after linking, every mangled symbol is internalized and `main`,
; unmangled exports and the allocator shim's symbols stay.
; CALLER: caller-fn
; PASSES: exports, internalize
; UNIT: caller_fn caller-fn
define i32 @main(i32 %argc, ptr %argv) {
  %r = call i64 @_ZN9caller_fn6handle17h0123456789abcdefE()
  ret i32 0
}
define i64 @_ZN9caller_fn6handle17h0123456789abcdefE() {
  ret i64 1
}
declare i64 @__rustc___rust_alloc_error_handler_should_panic()
; UNIT: callee_fn callee-fn
define i32 @main(i32 %argc, ptr %argv) {
  ret i32 0
}
define i64 @sn_export() {
  ret i64 2
}
