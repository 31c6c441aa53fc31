; ModuleID = 'a_loop_that_awaits_is_not_busy.ll'
source_filename = "a_loop_that_awaits_is_not_busy.ll"

declare i64 @_ZN3std4time7Instant3now17h0000000000000001E()

declare i1 @"_ZN40_$LT$tokio..time..interval..Interval$GT$9poll_tick17h0000000000000002E"(ptr)

define void @fmerge.entry.tick() {
  call void @"_ZN4tick6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000003E"(i64 5)
  ret void
}

define void @"_ZN4tick6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000003E"(i64 %until) {
entry:
  br label %loop

loop:                                             ; preds = %check, %entry
  %ready = call i1 @"_ZN40_$LT$tokio..time..interval..Interval$GT$9poll_tick17h0000000000000002E"(ptr null)
  br i1 %ready, label %check, label %pending

check:                                            ; preds = %loop
  %now = call i64 @_ZN3std4time7Instant3now17h0000000000000001E()
  %done = icmp uge i64 %now, %until
  br i1 %done, label %out, label %loop

pending:                                          ; preds = %loop
  ret void

out:                                              ; preds = %check
  ret void
}
