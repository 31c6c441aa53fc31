; ModuleID = 'the_callers_code_is_not_flagged.ll'
source_filename = "the_callers_code_is_not_flagged.ll"

declare void @_ZN3std6thread5sleep17h0000000000000009E(i64, i32)

define void @fmerge.entry.front() {
  call void @_ZN3std6thread5sleep17h0000000000000009E(i64 1, i32 0)
  ret void
}
