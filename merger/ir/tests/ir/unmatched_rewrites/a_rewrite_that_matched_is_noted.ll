; A rewrite that changed a literal gives a note saying how many.
; PASSES: endpoints, unmatched_rewrites
; REWRITE: store.int:6379=127.0.0.12:6379
; OWNERS: callee-fn
; CALLEES: callee-fn
; HITS: 1
; NOTE: rewrote `store.int:6379` → `127.0.0.12:6379` in 1 literal(s)
@url = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @_ZN6client4open17h0123456789abcdefE(ptr, i64)

define void @_ZN12callee_crate7connect17h0123456789abcdefE() {
  call void @_ZN6client4open17h0123456789abcdefE(ptr @url, i64 23)
  ret void
}
