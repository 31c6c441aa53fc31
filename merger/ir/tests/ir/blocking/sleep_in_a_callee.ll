; PASSES: call_graph, blocking
; A callee's async handler calls std::thread::sleep, as rustc 1.95 leaves it
; after inlining (std::thread::functions::sleep, v0-mangled): found from its
; entry, through the handler's future, and it runs isolated.
; CALLER: bl-front
; CALLEES: bl-slow
; CRATE: bl_slow
; FUNCTION: bl-slow
; BLOCKING: bl-slow std::thread::functions::sleep
; WARNING: bl-slow (crate bl_slow) blocks its thread: bl-slow's handler → `bl_slow::handle::{{closure}}` → `std::thread::functions::sleep` (it waits)
; WARNING: runs on threads of its own
; WARNING: tokio::task::spawn_blocking

declare void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64, i32)

@vtable = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] zeroinitializer, ptr @"_ZN7bl_slow6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E" }>

define { ptr, ptr } @fmerge.entry.bl-slow(ptr %input) {
  %r = insertvalue { ptr, ptr } poison, ptr @vtable, 1
  ret { ptr, ptr } %r
}

define void @"_ZN7bl_slow6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E"() {
  call void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64 1, i32 0)
  ret void
}
