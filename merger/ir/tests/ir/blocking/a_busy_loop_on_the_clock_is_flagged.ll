; PASSES: call_graph, blocking
; The handler spins until a time passes, with no await; a loop over data
; in another function is not a busy loop.
; CALLER: front
; CALLEES: busy
; CRATE: busy
; FUNCTION: busy
; BLOCKING: busy busy::handle::{{closure}}
; WARNING: busy (crate busy) blocks its thread: busy's handler → `busy::handle::{{closure}}` (a busy loop that waits on the clock)

declare i64 @"_ZN3std4time7Instant3now17h000000000000001dE"()

define void @fmerge.entry.busy() {
  call void @"_ZN4busy3sum17h000000000000001eE"(i64 10)
  call void @"_ZN4busy6handle28_$u7b$$u7b$closure$u7d$$u7d$17h000000000000001fE"(i64 5)
  ret void
}

define void @"_ZN4busy3sum17h000000000000001eE"(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %out, label %loop
out:
  ret void
}

define void @"_ZN4busy6handle28_$u7b$$u7b$closure$u7d$$u7d$17h000000000000001fE"(i64 %until) {
entry:
  br label %loop
loop:
  %now = call i64 @"_ZN3std4time7Instant3now17h000000000000001dE"()
  %done = icmp uge i64 %now, %until
  br i1 %done, label %out, label %loop
out:
  ret void
}
