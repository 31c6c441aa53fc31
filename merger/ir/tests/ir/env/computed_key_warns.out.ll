; ModuleID = 'computed_key_warns.ll'
source_filename = "computed_key_warns.ll"

declare void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr, ptr, i64)

define void @_ZN6ep_env6lookup17h0123456789abcdefE(ptr %out, ptr %name, i64 %len) {
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr %out, ptr %name, i64 %len)
  ret void
}
