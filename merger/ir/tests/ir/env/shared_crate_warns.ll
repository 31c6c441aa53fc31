; A crate that the caller links too is left alone, with a warning.
; CALLER: front
; CALLEES: ep-env
; CRATE: ep_env
; OWNERS: front, ep-env
; WARNING: crate ep_env reads the environment variable REDIS_URL in `ep_env::handle` and is linked by ep-env, front

@key = private unnamed_addr constant [9 x i8] c"REDIS_URL", align 1

declare void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr, ptr, i64)

define void @_ZN6ep_env6handle17h0123456789abcdefE(ptr %out) {
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr %out, ptr @key, i64 9)
  ret void
}
