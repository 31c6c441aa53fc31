; ModuleID = 'code_the_handler_never_reaches_is_not_flagged.ll'
source_filename = "code_the_handler_never_reaches_is_not_flagged.ll"

declare void @_ZN3std6thread9functions5sleep17h000000000000000aE(i64, i32)

define void @fmerge.entry.lazy() {
  ret void
}

define void @_ZN4lazy6unused17h000000000000000bE() {
  call void @_ZN3std6thread9functions5sleep17h000000000000000aE(i64 1, i32 0)
  ret void
}
