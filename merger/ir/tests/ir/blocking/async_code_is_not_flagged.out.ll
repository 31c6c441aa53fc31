; ModuleID = 'async_code_is_not_flagged.ll'
source_filename = "async_code_is_not_flagged.ll"

declare void @_ZN5tokio4time5sleep5sleep17h0000000000000002E(ptr, i64, i32)

define void @fmerge.entry.fine(ptr %out) {
  call void @_ZN4fine6handle17h0000000000000003E(ptr %out)
  ret void
}

define void @_ZN4fine6handle17h0000000000000003E(ptr %out) {
  call void @_ZN5tokio4time5sleep5sleep17h0000000000000002E(ptr %out, i64 1, i32 0)
  call void @_ZN4fine6helper17h0000000000000004E()
  ret void
}

define void @_ZN4fine6helper17h0000000000000004E() {
  ret void
}
