; ModuleID = 'async_code_is_not_flagged.ll'
source_filename = "async_code_is_not_flagged.ll"

declare void @_ZN5tokio4time5sleep5sleep17h0123456789abcdefE(ptr, i64, i32)

define void @_ZN4fine6handle17h0123456789abcdefE(ptr %out) {
  call void @_ZN5tokio4time5sleep5sleep17h0123456789abcdefE(ptr %out, i64 1, i32 0)
  call void @_ZN4fine6helper17h0123456789abcdefE()
  ret void
}

define void @_ZN4fine6helper17h0123456789abcdefE() {
  ret void
}
