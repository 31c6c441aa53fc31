; A callee whose `main` reaches std's code alone (here std's generic code
; that aborts, which is std's own) and reads a line of stdin under its lock
; runs in the caller's process.
; CALLER: wp-front
; CALLEES: user-filter
; FORM: process
; PASSES: exports, run_entry, statics, call_graph, in_process
; IN-PROCESS: user-filter ok
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
; UNIT: UserFilter user-filter
@vt.uf = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] zeroinitializer, ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E" }>

define internal i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000002E"(ptr %slot) {
  %f = load ptr, ptr %slot, align 8
  call void %f()
  ret i32 0
}

declare i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr, ptr, i64, ptr, i8)

define i32 @main(i32 %argc, ptr %argv) {
  %slot = alloca ptr, align 8
  store ptr @_ZN10UserFilter4main17h0000000000000009E, ptr %slot, align 8
  %r = call i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr %slot, ptr @vt.uf, i64 0, ptr %argv, i8 0)
  %code = trunc i64 %r to i32
  ret i32 %code
}

define hidden void @_ZN10UserFilter4main17h0000000000000009E() {
  call void @"_ZN4core3ptr62drop_in_place$LT$std..thread..lifecycle..Packet$LT$i32$GT$$GT$17hea5a8b3f8c8a8909E"()
  %line = call ptr @_ZN7FaasRpc19get_arg_from_caller17h0000000000000009E()
  ret void
}

define internal void @"_ZN4core3ptr62drop_in_place$LT$std..thread..lifecycle..Packet$LT$i32$GT$$GT$17hea5a8b3f8c8a8909E"() {
  call void @_RNvNtCsjrHSEGnQ3l9_3std7process5abort()
  ret void
}

declare void @_RNvNtCsjrHSEGnQ3l9_3std7process5abort()

define hidden ptr @_ZN7FaasRpc19get_arg_from_caller17h0000000000000009E() {
  %in = call ptr @_RNvNtNtCsjrHSEGnQ3l9_3std2io5stdio5stdin()
  %lock = call ptr @_RNvMs1_NtNtCsjrHSEGnQ3l9_3std2io5stdioNtB5_5Stdin4lock(ptr %in)
  %buf = call ptr @_RNvCsfLfy6EI15iL_7___rustc12___rust_alloc(i64 8, i64 1)
  %n = call i64 @_RNvXs8_NtNtCsjrHSEGnQ3l9_3std2io5stdioNtB5_9StdinLockNtB7_7BufRead9read_line(ptr %lock, ptr %buf)
  call void @llvm.memset.p0.i64(ptr %buf, i8 0, i64 8, i1 false)
  ret ptr %buf
}

declare ptr @_RNvNtNtCsjrHSEGnQ3l9_3std2io5stdio5stdin()
declare ptr @_RNvMs1_NtNtCsjrHSEGnQ3l9_3std2io5stdioNtB5_5Stdin4lock(ptr)
declare ptr @_RNvCsfLfy6EI15iL_7___rustc12___rust_alloc(i64, i64)
declare i64 @_RNvXs8_NtNtCsjrHSEGnQ3l9_3std2io5stdioNtB5_9StdinLockNtB7_7BufRead9read_line(ptr, ptr)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
