; PASSES: call_graph, blocking
; The handler never leaves a loop (and never awaits in it).
; CALLER: front
; CALLEES: stuck
; CRATE: stuck
; FUNCTION: stuck
; BLOCKING: stuck stuck::handle::{{closure}}
; WARNING: stuck (crate stuck) blocks its thread: stuck's handler → `stuck::handle::{{closure}}` (a loop with no exit)

define void @fmerge.entry.stuck() {
  call void @"_ZN5stuck6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000020E"(ptr null)
  ret void
}

define void @"_ZN5stuck6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000020E"(ptr %p) {
entry:
  br label %loop
loop:
  store volatile i64 1, ptr %p
  br label %loop
}
