; A callee that never declared its handler with `function!`.
; CALLEES: other-fn
; ERROR: other-fn depends on fmerge-runtime but exports no `fmerge.entry.other-fn`
; ERROR: fmerge_runtime::function!(handler)
@fmerge.routes = global { ptr, i64 } zeroinitializer, align 8
