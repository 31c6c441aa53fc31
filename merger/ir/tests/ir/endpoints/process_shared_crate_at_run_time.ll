; Watchdog-process members: a host in a crate the caller links too is
; rewritten at run time, in the callee's own process, and the literal stays.
; FORM: process
; REWRITE: callee-fn:store.int:6379=127.0.0.12:6379
; OWNERS: caller-fn, callee-fn
; CALLEES: callee-fn
; NOTE: --rewrite store.int:6379: `store.int:6379` is in crate
; NOTE: in callee-fn's own process the name resolves, or the file opens, as `127.0.0.12:6379`

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit, i64 23)
  ret void
}
