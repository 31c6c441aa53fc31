; ModuleID = 'sleep_in_a_callee.ll'
source_filename = "sleep_in_a_callee.ll"

declare void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64, i32)

define void @"_ZN7bl_slow6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE"() {
  call void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64 1, i32 0)
  ret void
}
