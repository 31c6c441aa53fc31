; PASSES: call_graph, blocking
; The callee's own code reads a descriptor with libc: it waits.
; CALLER: front
; CALLEES: raw
; CRATE: raw
; FUNCTION: raw
; BLOCKING: raw read
; WARNING: raw (crate raw) blocks its thread: raw's handler → `raw::handle` → `read` (it waits on a descriptor or a file)

declare i64 @read(i32, ptr, i64)

define void @fmerge.entry.raw() {
  call void @"_ZN3raw6handle17h000000000000001cE"()
  ret void
}

define void @"_ZN3raw6handle17h000000000000001cE"() {
  %r = call i64 @read(i32 0, ptr null, i64 16)
  ret void
}
