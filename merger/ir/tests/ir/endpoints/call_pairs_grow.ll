; A callee passes its address to calls as (ptr, len): whole (Client::open),
; and from a byte offset (the host:port part). The new address is longer.
; REWRITE: store.int:6379=127.0.0.12:6379
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
