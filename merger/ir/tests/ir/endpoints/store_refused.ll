; The pointer stored to memory, with no length beside it that fmerge sees.
; REWRITE: store.int:6379=127.0.0.12:6379
; OWNERS: callee-fn
; CALLEES: callee-fn
; ERROR: in function callee-fn (crate callee_crate)
; ERROR: `callee_crate::keep`
; ERROR: not a pointer-and-length pair

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

define void @_ZN12callee_crate4keep17h0123456789abcdefE(ptr %slot) {
  store ptr @lit, ptr %slot
  ret void
}
