; std::env::var("REDIS_URL") (as std::env::_var after inlining) and
; var_os("GREETING") in a callee's crate read the callee's namespaced names.
; CALLER: front
; CALLEES: ep-env
; CRATE: ep_env
; OWNERS: ep-env
; ISOLATED: ep-env REDIS_URL
; ISOLATED: ep-env GREETING

@key = private unnamed_addr constant [9 x i8] c"REDIS_URL", align 1
@greeting = private unnamed_addr constant [8 x i8] c"GREETING", align 1

declare void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr, ptr, i64)
declare void @_RNvNtCsjrHSEGnQ3l9_3std3env7__var_os(ptr, ptr, i64)

define void @_ZN6ep_env6handle17h0123456789abcdefE(ptr %out, ptr %out2) {
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr %out, ptr @key, i64 9)
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env7__var_os(ptr %out2, ptr @greeting, i64 8)
  ret void
}
