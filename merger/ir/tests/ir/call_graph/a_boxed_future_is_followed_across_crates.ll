; PASSES: call_graph, blocking
; The graph spans crates and trait objects: the entry returns a boxed
; future whose poll (a vtable's entry) calls a library crate's function,
; which sleeps. Crates link by symbol, as the merge links them.
; CALLER: front
; CALLEES: svc
; BLOCKING: svc std::thread::functions::sleep
; WARNING: svc (crate svc) blocks its thread: svc's handler → `svc::handle::{{closure}}` → `lib::wait` → `std::thread::functions::sleep` (it waits)
; UNIT: svc svc
@vtable = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] zeroinitializer, ptr @"_ZN3svc6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E" }>
declare void @"_ZN3lib4wait17h0000000000000002E"()
define { ptr, ptr } @fmerge.entry.svc(ptr %input) {
  %r = insertvalue { ptr, ptr } poison, ptr @vtable, 1
  ret { ptr, ptr } %r
}
define void @"_ZN3svc6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E"() {
  call void @"_ZN3lib4wait17h0000000000000002E"()
  ret void
}
; UNIT: lib svc
declare void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64, i32)
define void @"_ZN3lib4wait17h0000000000000002E"() {
  call void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64 1, i32 0)
  ret void
}
