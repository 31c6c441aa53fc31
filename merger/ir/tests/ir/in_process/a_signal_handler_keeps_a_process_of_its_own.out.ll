; ModuleID = 'wp_front'
source_filename = "wp_front"

@vt.front = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] zeroinitializer, ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E" }>
@vt.uf = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] zeroinitializer, ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E" }>

define internal i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E"(ptr %slot) {
  %f = load ptr, ptr %slot, align 8
  call void %f()
  ret i32 0
}

declare i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr, ptr, i64, ptr, i8)

define i32 @main(i32 %argc, ptr %argv) {
  %slot = alloca ptr, align 8
  store ptr @_ZN8wp_front4main17h0000000000000009E, ptr %slot, align 8
  %r = call i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr %slot, ptr @vt.front, i64 0, ptr %argv, i8 0)
  %code = trunc i64 %r to i32
  ret i32 %code
}

define hidden void @_ZN8wp_front4main17h0000000000000009E() {
  ret void
}

define i32 @fmerge.main.user-filter(i32 %argc, ptr %argv) {
  %slot = alloca ptr, align 8
  store ptr @_ZN10UserFilter4main17h0000000000000009E, ptr %slot, align 8
  %r = call i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr %slot, ptr @vt.uf, i64 0, ptr %argv, i8 0)
  %code = trunc i64 %r to i32
  ret i32 %code
}

define hidden void @_ZN10UserFilter4main17h0000000000000009E() {
  call void @_ZN20signal_hook_registry8register17h0000000000000009E(i32 15)
  ret void
}

define internal i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E"(ptr %slot) {
  %f = load ptr, ptr %slot, align 8
  call void %f()
  ret i32 0
}

define hidden void @_ZN20signal_hook_registry8register17h0000000000000009E(i32 %sig) {
  %r = call i32 @sigaction(i32 %sig, ptr null, ptr null)
  ret void
}

declare i32 @sigaction(i32, ptr, ptr)

define i32 @fmerge.run.user-filter() {
start:
  %main = alloca ptr, align 8
  store ptr @_ZN10UserFilter4main17h0000000000000009E, ptr %main, align 8
  %code = call i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E"(ptr %main)
  ret i32 %code
}
