; PASSES: call_graph, blocking
; std::fs::read::<P> is instantiated in the callee's crate and calls std's
; inner function: the chain goes from the handler through it.
; CALLER: front
; CALLEES: reader
; CRATE: reader
; FUNCTION: reader
; BLOCKING: reader std::fs::read::inner
; WARNING: reader (crate reader) blocks its thread: reader's handler → `reader::handle` → `reader::load` → `std::fs::read` → `std::fs::read::inner` (it waits on a descriptor or a file)

declare void @"_ZN3std2fs4read5inner17h0000000000000005E"(ptr, ptr, i64)

define void @fmerge.entry.reader(ptr %out) {
  call void @"_ZN6reader6handle17h0000000000000006E"(ptr %out)
  ret void
}

define void @"_ZN6reader6handle17h0000000000000006E"(ptr %out) {
  call void @"_ZN6reader4load17h0000000000000007E"(ptr %out)
  ret void
}

define void @"_ZN3std2fs4read17h0000000000000008E"(ptr %out) {
  call void @"_ZN3std2fs4read5inner17h0000000000000005E"(ptr %out, ptr null, i64 0)
  ret void
}

define void @"_ZN6reader4load17h0000000000000007E"(ptr %out) {
  call void @"_ZN3std2fs4read17h0000000000000008E"(ptr %out)
  ret void
}
