; ModuleID = 'std_generic_code_names_its_caller.ll'
source_filename = "std_generic_code_names_its_caller.ll"

declare void @_ZN3std2fs4read5inner17h0123456789abcdefE(ptr, ptr, i64)

define void @_ZN3std2fs4read17h1111111111111111E(ptr %out) {
  call void @_ZN3std2fs4read5inner17h0123456789abcdefE(ptr %out, ptr null, i64 0)
  ret void
}

define void @_ZN6reader4load17h0123456789abcdefE(ptr %out) {
  call void @_ZN3std2fs4read17h1111111111111111E(ptr %out)
  ret void
}
