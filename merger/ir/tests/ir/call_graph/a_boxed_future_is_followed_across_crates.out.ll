; ModuleID = 'svc'
source_filename = "svc"

@vtable = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] zeroinitializer, ptr @"_ZN3svc6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E" }>

define { ptr, ptr } @fmerge.entry.svc(ptr %input) {
  %r = insertvalue { ptr, ptr } poison, ptr @vtable, 1
  ret { ptr, ptr } %r
}

define void @"_ZN3svc6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E"() {
  call void @_ZN3lib4wait17h0000000000000002E()
  ret void
}

define void @_ZN3lib4wait17h0000000000000002E() {
  call void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64 1, i32 0)
  ret void
}

declare void @_RNvNtNtCsjrHSEGnQ3l9_3std6thread9functions5sleep(i64, i32)
