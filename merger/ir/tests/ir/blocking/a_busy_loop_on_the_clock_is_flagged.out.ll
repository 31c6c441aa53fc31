; ModuleID = 'a_busy_loop_on_the_clock_is_flagged.ll'
source_filename = "a_busy_loop_on_the_clock_is_flagged.ll"

declare i64 @_ZN3std4time7Instant3now17h000000000000001dE()

define void @fmerge.entry.busy() {
  call void @_ZN4busy3sum17h000000000000001eE(i64 10)
  call void @"_ZN4busy6handle28_$u7b$$u7b$closure$u7d$$u7d$17h000000000000001fE"(i64 5)
  ret void
}

define void @_ZN4busy3sum17h000000000000001eE(i64 %n) {
entry:
  br label %loop

loop:                                             ; preds = %loop, %entry
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %out, label %loop

out:                                              ; preds = %loop
  ret void
}

define void @"_ZN4busy6handle28_$u7b$$u7b$closure$u7d$$u7d$17h000000000000001fE"(i64 %until) {
entry:
  br label %loop

loop:                                             ; preds = %loop, %entry
  %now = call i64 @_ZN3std4time7Instant3now17h000000000000001dE()
  %done = icmp uge i64 %now, %until
  br i1 %done, label %out, label %loop

out:                                              ; preds = %loop
  ret void
}
