; ModuleID = 'sleep_in_a_callee.ll'
source_filename = "sleep_in_a_callee.ll"

@vtable = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] zeroinitializer, ptr @"_ZN7bl_slow6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E" }>

declare void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64, i32)

define { ptr, ptr } @fmerge.entry.bl-slow(ptr %input) {
  %r = insertvalue { ptr, ptr } poison, ptr @vtable, 1
  ret { ptr, ptr } %r
}

define void @"_ZN7bl_slow6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E"() {
  call void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64 1, i32 0)
  ret void
}
