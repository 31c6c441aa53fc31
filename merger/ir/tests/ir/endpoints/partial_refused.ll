; The code uses only the host part of the address; FROM covers host:port.
; REWRITE: store.int:6379=127.0.0.12:6379
; OWNERS: callee-fn
; CALLEES: callee-fn
; ERROR: uses only part of `store.int:6379`
; ERROR: choose a FROM that covers the whole host:port

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @open(ptr, i64)

define void @host() {
  call void @open(ptr getelementptr inbounds (i8, ptr @lit, i64 8), i64 9)
  ret void
}
