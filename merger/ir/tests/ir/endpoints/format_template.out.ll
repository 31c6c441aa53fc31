; ModuleID = 'format_template.ll'
source_filename = "format_template.ll"

@tpl = private unnamed_addr constant [26 x i8] c"\17redis://store.int:6379/\C0\00", align 1
@tpl.rewritten = private unnamed_addr constant [27 x i8] c"\18redis://127.0.0.12:6379/\C0\00", align 1

declare { ptr, ptr } @_ZN4core3fmt9Arguments3new17h0839934bb93a9d94E(ptr, ptr)

define { ptr, ptr } @url(ptr %args) {
  %a = call { ptr, ptr } @_ZN4core3fmt9Arguments3new17h0839934bb93a9d94E(ptr @tpl.rewritten, ptr %args)
  ret { ptr, ptr } %a
}
