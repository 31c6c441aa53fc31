; A rewrite scoped to another callee leaves this crate alone.
; REWRITE: other-fn:store.int:6379=127.0.0.12:6379
; OWNERS: callee-fn
; CALLEES: callee-fn, other-fn
; HITS: 0

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit, i64 23)
  ret void
}
