; A function's bin with a hand-written main: no entry to call in-process.
; FUNCTION: callee-fn
; ERROR: callee-fn depends on fmerge-runtime but exports no `fmerge.entry.callee-fn`
; ERROR: fmerge_runtime::function!(handler)
define i32 @main(i32 %argc, ptr %argv) {
  ret i32 0
}
