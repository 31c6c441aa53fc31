; PASSES: call_graph, blocking
; The caller's own crate blocks: that was so before the merge too.
; CALLER: front
; CALLEES: back
; CRATE: front
; FUNCTION: front
; OWNERS: front

declare void @"_ZN3std6thread5sleep17h0000000000000009E"(i64, i32)

define void @fmerge.entry.front() {
  call void @"_ZN3std6thread5sleep17h0000000000000009E"(i64 1, i32 0)
  ret void
}
