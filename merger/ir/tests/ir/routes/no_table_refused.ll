; Functions built with a runtime that has no dispatch table.
; CALLEES: callee-fn
; ERROR: no `fmerge.routes` table
; ERROR: fix: update the functions' fmerge-runtime dependency
define ptr @"fmerge.entry.callee-fn"(ptr %body) {
  ret ptr null
}
