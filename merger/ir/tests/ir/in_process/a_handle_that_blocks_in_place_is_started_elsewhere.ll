; A handler library's `handle` that reaches tokio's `block_in_place` (price)
; would panic if polled on a caller's thread that is a current-thread
; runtime's (actix-web's worker), where its template's multi-threaded
; server ran it: its calls go to a thread of the shim's. One that only
; spawns (tax) may be started on the caller's thread.
; CALLER: wp-front
; CALLEES: price, tax
; FORM: process
; PASSES: exports, run_entry, statics, call_graph, in_process
; IN-PROCESS: price ok
; IN-PROCESS: tax ok
; HANDLE-ELSEWHERE: price tokio::task::blocking::block_in_place, which works only on a thread of the runtime
; UNIT: wp_front wp-front
@vt.front = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] zeroinitializer, ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E" }>

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
; UNIT: price price
@vt.p = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] zeroinitializer, ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E" }>

define internal i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E"(ptr %slot) {
  %f = load ptr, ptr %slot, align 8
  call void %f()
  ret i32 0
}

declare i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr, ptr, i64, ptr, i8)

define i32 @main(i32 %argc, ptr %argv) {
  %slot = alloca ptr, align 8
  store ptr @_ZN5price4main17h0000000000000009E, ptr %slot, align 8
  %r = call i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr %slot, ptr @vt.p, i64 0, ptr %argv, i8 0)
  %code = trunc i64 %r to i32
  ret i32 %code
}

define hidden void @_ZN5price4main17h0000000000000009E() {
  ret void
}

define i32 @fmerge.handle.price.now(ptr %method, i64 %method_len, ptr %target, i64 %target_len, ptr %headers, i64 %headers_len, ptr %body, i64 %body_len, ptr %ctx, ptr %done) {
  call void @_ZN5price6handle17h0000000000000011E()
  ret i32 1
}

define hidden void @_ZN5price6handle17h0000000000000011E() {
  call void @_ZN5tokio4task8blocking14block_in_place17h0000000000000012E()
  ret void
}

declare void @_ZN5tokio4task8blocking14block_in_place17h0000000000000012E()
; UNIT: tax tax
@vt.t = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] zeroinitializer, ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000005E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000005E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000005E" }>

define internal i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000005E"(ptr %slot) {
  %f = load ptr, ptr %slot, align 8
  call void %f()
  ret i32 0
}

declare i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr, ptr, i64, ptr, i8)

define i32 @main(i32 %argc, ptr %argv) {
  %slot = alloca ptr, align 8
  store ptr @_ZN3tax4main17h0000000000000009E, ptr %slot, align 8
  %r = call i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr %slot, ptr @vt.t, i64 0, ptr %argv, i8 0)
  %code = trunc i64 %r to i32
  ret i32 %code
}

define hidden void @_ZN3tax4main17h0000000000000009E() {
  ret void
}

define i32 @fmerge.handle.tax.now(ptr %method, i64 %method_len, ptr %target, i64 %target_len, ptr %headers, i64 %headers_len, ptr %body, i64 %body_len, ptr %ctx, ptr %done) {
  call void @_ZN3tax6handle17h0000000000000013E()
  ret i32 0
}

define hidden void @_ZN3tax6handle17h0000000000000013E() {
  call void @_ZN5tokio7runtime6handle6Handle5spawn17h0000000000000014E()
  ret void
}

declare void @_ZN5tokio7runtime6handle6Handle5spawn17h0000000000000014E()
