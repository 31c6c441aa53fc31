; A callee's async handler calls std::thread::sleep, as rustc 1.95 leaves it
; after inlining (std::thread::functions::sleep, v0-mangled): it runs isolated.
; CALLER: bl-front
; CALLEES: bl-slow
; CRATE: bl_slow
; FUNCTION: bl-slow
; BLOCKING: bl-slow std::thread::functions::sleep
; WARNING: bl-slow (crate bl_slow) calls `std::thread::functions::sleep` (first in `bl_slow::handle::{{closure}}`)
; WARNING: runs on threads of its own
; WARNING: tokio::task::spawn_blocking

declare void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64, i32)

define void @"_ZN7bl_slow6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE"() {
  call void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64 1, i32 0)
  ret void
}
