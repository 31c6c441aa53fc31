; `format!("redis://store.int:6379/{}", db)`: rustc 1.95's template, whose
; literal piece carries its length (0x17) in front of it.
; REWRITE: store.int:6379=127.0.0.12:6379
; OWNERS: callee-fn
; HITS: 1
; CALLEES: callee-fn

@tpl = private unnamed_addr constant [26 x i8] c"\17redis://store.int:6379/\C0\00", align 1

declare { ptr, ptr } @_ZN4core3fmt9Arguments3new17h0839934bb93a9d94E(ptr, ptr)

define { ptr, ptr } @url(ptr %args) {
  %a = call { ptr, ptr } @_ZN4core3fmt9Arguments3new17h0839934bb93a9d94E(ptr @tpl, ptr %args)
  ret { ptr, ptr } %a
}
