; ModuleID = 'shared_crate_warns.ll'
source_filename = "shared_crate_warns.ll"

@key = private unnamed_addr constant [9 x i8] c"REDIS_URL", align 1

declare void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr, ptr, i64)

define void @_ZN6ep_env6handle17h0123456789abcdefE(ptr %out) {
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr %out, ptr @key, i64 9)
  ret void
}
