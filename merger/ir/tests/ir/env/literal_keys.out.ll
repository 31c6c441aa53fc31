; ModuleID = 'literal_keys.ll'
source_filename = "literal_keys.ll"

@key = private unnamed_addr constant [9 x i8] c"REDIS_URL", align 1
@greeting = private unnamed_addr constant [8 x i8] c"GREETING", align 1
@fmerge.env.ep-env.REDIS_URL = private unnamed_addr constant [17 x i8] c"EP_ENV__REDIS_URL", align 1
@fmerge.env.ep-env.GREETING = private unnamed_addr constant [16 x i8] c"EP_ENV__GREETING", align 1

declare void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr, ptr, i64)

declare void @_RNvNtCsjrHSEGnQ3l9_3std3env7__var_os(ptr, ptr, i64)

define void @_ZN6ep_env6handle17h0123456789abcdefE(ptr %out, ptr %out2) {
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr %out, ptr @fmerge.env.ep-env.REDIS_URL, i64 17)
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env7__var_os(ptr %out2, ptr @fmerge.env.ep-env.GREETING, i64 16)
  ret void
}
