; std::fs::read::<P> is instantiated in the callee's crate and calls std's
; inner function; what is reported is the callee's own call.
; CALLER: front
; CALLEES: reader
; CRATE: reader
; FUNCTION: reader
; BLOCKING: reader std::fs::read
; WARNING: reader (crate reader) calls `std::fs::read` (first in `reader::load`)

declare void @_ZN3std2fs4read5inner17h0123456789abcdefE(ptr, ptr, i64)

define void @_ZN3std2fs4read17h1111111111111111E(ptr %out) {
  call void @_ZN3std2fs4read5inner17h0123456789abcdefE(ptr %out, ptr null, i64 0)
  ret void
}

define void @_ZN6reader4load17h0123456789abcdefE(ptr %out) {
  call void @_ZN3std2fs4read17h1111111111111111E(ptr %out)
  ret void
}
