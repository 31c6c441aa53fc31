; The caller's own crate blocks: that was so before the merge too.
; CALLER: front
; CALLEES: back
; CRATE: front
; FUNCTION: front
; OWNERS: front

declare void @_ZN3std6thread5sleep17h0123456789abcdefE(i64, i32)

define void @_ZN5front6handle17h0123456789abcdefE() {
  call void @_ZN3std6thread5sleep17h0123456789abcdefE(i64 1, i32 0)
  ret void
}
