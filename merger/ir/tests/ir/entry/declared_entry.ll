; A function's bin that declares its handler with `function!`.
; FUNCTION: callee-fn
define void @fmerge.entry.callee-fn(ptr %req) {
  ret void
}
