; Optimized code copies the literal into a String's heap buffer with memcpy:
; its length also lives in the allocation and the String, out of sight.
; REWRITE: store.int:6379=127.0.0.12:6379
; OWNERS: callee-fn
; CALLEES: callee-fn
; ERROR: in function callee-fn (crate callee_crate)
; ERROR: copies it as raw bytes (`llvm.memcpy.p0.p0.i64`)
; ERROR: fix:

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define void @_ZN12callee_crate6handle17h0123456789abcdefE(ptr %buf) {
  call void @llvm.memcpy.p0.p0.i64(ptr %buf, ptr @lit, i64 23, i1 false)
  ret void
}
