; ModuleID = 'an_unoptimized_main.ll'
source_filename = "an_unoptimized_main.ll"

@vtable.1 = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] c"\00\00\00\00\00\00\00\00\08\00\00\00\00\00\00\00\08\00\00\00\00\00\00\00", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h55351d4187a5804bE", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h55351d4187a5804bE", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h55351d4187a5804bE" }>, align 8

; Function Attrs: nonlazybind uwtable
define hidden void @_ZN1r4main17ha576df8596d21376E(ptr sret([24 x i8]) align 8 %_0) unnamed_addr #0 {
start:
  store i64 1, ptr %_0, align 8
  ret void
}

; Function Attrs: nonlazybind uwtable
define hidden i64 @_ZN3std2rt10lang_start17hfcc276dbce6304d8E(ptr %main, i64 %argc, ptr %argv, i8 %sigpipe) unnamed_addr #0 {
start:
  %_7 = alloca [8 x i8], align 8
  store ptr %main, ptr %_7, align 8
  %_0 = call i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr align 1 %_7, ptr align 8 @vtable.1, i64 %argc, ptr %argv, i8 %sigpipe)
  ret i64 %_0
}

; Function Attrs: inlinehint nonlazybind uwtable
define internal i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h55351d4187a5804bE"(ptr align 8 %_1) unnamed_addr #1 {
start:
  %result = alloca [24 x i8], align 8
  %_4 = load ptr, ptr %_1, align 8
  call void %_4(ptr sret([24 x i8]) align 8 %result)
  %tag = load i64, ptr %result, align 8
  %code = trunc i64 %tag to i32
  ret i32 %code
}

; Function Attrs: nonlazybind uwtable
declare i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr align 1, ptr align 8, i64, ptr, i8) unnamed_addr #0

; Function Attrs: nonlazybind
define i32 @fmerge.main.r-callee(i32 %0, ptr %1) unnamed_addr #2 {
top:
  %2 = sext i32 %0 to i64
  %3 = call i64 @_ZN3std2rt10lang_start17hfcc276dbce6304d8E(ptr @_ZN1r4main17ha576df8596d21376E, i64 %2, ptr %1, i8 0)
  %4 = trunc i64 %3 to i32
  ret i32 %4
}

; Function Attrs: nonlazybind uwtable
define i32 @fmerge.run.r-callee() #0 {
start:
  %main = alloca ptr, align 8
  store ptr @_ZN1r4main17ha576df8596d21376E, ptr %main, align 8
  %code = call i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h55351d4187a5804bE"(ptr %main)
  ret i32 %code
}

attributes #0 = { nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #1 = { inlinehint nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #2 = { nonlazybind "probe-stack"="inline-asm" "target-cpu"="x86-64" }
