; The same uses, with a shorter new address: every length shrinks with it.
; REWRITE: store.int:6379=10.0.0.7:1
; OWNERS: callee-fn
; HITS: 1
; CALLEES: callee-fn

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit, i64 23)
  call void @open(ptr getelementptr inbounds (i8, ptr @lit, i64 8), i64 14)
  ret void
}
