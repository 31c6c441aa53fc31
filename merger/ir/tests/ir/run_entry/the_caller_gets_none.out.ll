; ModuleID = 'wp_front'
source_filename = "wp_front"

@vtable.0 = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] zeroinitializer, ptr @closure, ptr @closure, ptr @closure }>

define hidden void @_ZN8wp_front4main17h0000000000000001E() {
  ret void
}

define internal i32 @closure(ptr %_1) {
  %f = load ptr, ptr %_1, align 8
  call void %f()
  ret i32 0
}

declare i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr, ptr, i64, ptr, i8)

define i32 @main(i32 %0, ptr %1) {
  %slot = alloca ptr, align 8
  store ptr @_ZN8wp_front4main17h0000000000000001E, ptr %slot, align 8
  %r = call i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr %slot, ptr @vtable.0, i64 0, ptr %1, i8 0)
  %t = trunc i64 %r to i32
  ret i32 %t
}

define i32 @fmerge.main.wp-back(i32 %argc, ptr %argv) {
  ret i32 1
}
