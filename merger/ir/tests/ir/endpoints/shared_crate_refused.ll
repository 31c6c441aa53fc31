; The literal is in a crate that the caller links too.
; REWRITE: store.int:6379=127.0.0.12:6379
; OWNERS: caller-fn, callee-fn
; CALLEES: callee-fn
; ERROR: which caller-fn link too

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit, i64 23)
  ret void
}
