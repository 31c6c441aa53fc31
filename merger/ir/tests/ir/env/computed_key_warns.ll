; A name computed at run time cannot be namespaced: a warning says so.
; CALLER: front
; CALLEES: ep-env
; CRATE: ep_env
; OWNERS: ep-env
; WARNING: ep-env (crate ep_env) reads an environment variable whose name is computed at run time in `ep_env::lookup`

declare void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr, ptr, i64)

define void @_ZN6ep_env6lookup17h0123456789abcdefE(ptr %out, ptr %name, i64 %len) {
  call void @_RNvNtCsjrHSEGnQ3l9_3std3env4__var(ptr %out, ptr %name, i64 %len)
  ret void
}
