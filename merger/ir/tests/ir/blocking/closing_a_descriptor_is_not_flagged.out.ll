; ModuleID = 'closing_a_descriptor_is_not_flagged.ll'
source_filename = "closing_a_descriptor_is_not_flagged.ll"

declare void @_ZN3std3sys2fs4unix23debug_assert_fd_is_open17h0000000000000017E(i32)

declare i32 @close(i32)

declare void @"_ZN69_$LT$std..os..fd..owned..OwnedFd$u20$as$u20$core..ops..drop..Drop$GT$4drop17h0000000000000018E"(ptr)

define void @fmerge.entry.fd() {
  call void @"_ZN4core3ptr34drop_in_place$LT$std..fs..File$GT$17h0000000000000019E"(ptr null)
  call void @"_ZN69_$LT$std..os..fd..owned..OwnedFd$u20$as$u20$core..ops..drop..Drop$GT$4drop17h0000000000000018E"(ptr null)
  ret void
}

define void @"_ZN4core3ptr34drop_in_place$LT$std..fs..File$GT$17h0000000000000019E"(ptr %f) {
  call void @_ZN3std3sys2fs4unix23debug_assert_fd_is_open17h0000000000000017E(i32 3)
  %r = call i32 @close(i32 3)
  ret void
}
