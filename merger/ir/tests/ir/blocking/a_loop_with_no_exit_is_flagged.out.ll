; ModuleID = 'a_loop_with_no_exit_is_flagged.ll'
source_filename = "a_loop_with_no_exit_is_flagged.ll"

define void @fmerge.entry.stuck() {
  call void @"_ZN5stuck6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000020E"(ptr null)
  ret void
}

define void @"_ZN5stuck6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000020E"(ptr %p) {
entry:
  br label %loop

loop:                                             ; preds = %loop, %entry
  store volatile i64 1, ptr %p, align 4
  br label %loop
}
