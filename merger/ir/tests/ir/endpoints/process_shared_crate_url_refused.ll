; Watchdog-process members: what the shim cannot apply at run time (a URL,
; neither a host name nor a file path) in a crate the caller links too is
; refused, as for any merge.
; FORM: process
; REWRITE: callee-fn:redis://store.int=redis://other.int
; OWNERS: caller-fn, callee-fn
; CALLEES: callee-fn
; ERROR: which caller-fn link too

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit, i64 23)
  ret void
}
