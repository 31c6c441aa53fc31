; PASSES: call_graph, blocking
; A function of the callee's crate sleeps, but the handler never calls it
; (the old check, by names in the crate, flagged it).
; CALLER: front
; CALLEES: lazy
; CRATE: lazy
; FUNCTION: lazy

declare void @"_ZN3std6thread9functions5sleep17h000000000000000aE"(i64, i32)

define void @fmerge.entry.lazy() {
  ret void
}

define void @"_ZN4lazy6unused17h000000000000000bE"() {
  call void @"_ZN3std6thread9functions5sleep17h000000000000000aE"(i64 1, i32 0)
  ret void
}
