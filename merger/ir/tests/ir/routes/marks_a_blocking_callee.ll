; Of two callees, the one whose handler calls std::thread::sleep is marked to
; run on threads of its own (the route's last field), the other is not.
; CALLER: front
; CALLEES: quick, slow
; PASSES: call_graph, blocking, routes
; BLOCKING: slow std::thread::sleep
; WARNING: slow (crate slow) blocks its thread: slow's handler → `slow::handle` → `std::thread::sleep` (it waits)
; UNIT: front front
@fmerge.routes = global { ptr, i64 } zeroinitializer, align 8
define ptr @lookup() {
  ret ptr @fmerge.routes
}
; UNIT: quick quick
define ptr @"fmerge.entry.quick"(ptr %body) {
  ret ptr null
}
; UNIT: slow slow
declare void @_ZN3std6thread5sleep17h0123456789abcdefE(i64, i32)
define ptr @"fmerge.entry.slow"(ptr %body) {
  call void @_ZN4slow6handle17h0123456789abcdefE()
  ret ptr null
}
define void @_ZN4slow6handle17h0123456789abcdefE() {
  call void @_ZN3std6thread5sleep17h0123456789abcdefE(i64 1, i32 0)
  ret void
}
