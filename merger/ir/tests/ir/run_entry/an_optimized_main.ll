; An optimized binary's `main` (rustc -O, trimmed from a real one):
; `lang_start` is inlined, so `main` stores the user's `main` in a slot and
; hands it to `lang_start_internal` with the vtable whose last method is
; `lang_start::{{closure}}`. The entry calls that closure with such a slot.
; CALLER: caller-fn
; FUNCTION: m-callee
; FORM: process
; PASSES: exports, run_entry, internalize
@vtable.0 = private unnamed_addr constant <{ [24 x i8], ptr, ptr, ptr }> <{ [24 x i8] c"\00\00\00\00\00\00\00\00\08\00\00\00\00\00\00\00\08\00\00\00\00\00\00\00", ptr @"_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h586cf6476555c1edE", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h168e94e611939a97E", ptr @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h168e94e611939a97E" }>, align 8

define hidden void @_ZN1m4main17h4009bc0cd8b193aaE() unnamed_addr #0 {
start:
  ret void
}

define internal noundef i32 @"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h168e94e611939a97E"(ptr noalias noundef readonly align 8 captures(none) dereferenceable(8) %_1) unnamed_addr #1 {
start:
  %_4 = load ptr, ptr %_1, align 8
  tail call void %_4()
  ret i32 0
}

define internal noundef i32 @"_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h586cf6476555c1edE"(ptr noundef readonly captures(none) %_1) unnamed_addr #1 {
start:
  %0 = load ptr, ptr %_1, align 8
  tail call void %0()
  ret i32 0
}

declare noundef i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr noundef nonnull align 1, ptr noalias noundef readonly align 8 captures(address, read_provenance) dereferenceable(48), i64 noundef, ptr noundef, i8 noundef) unnamed_addr #0

define noundef i32 @main(i32 %0, ptr %1) unnamed_addr #2 {
top:
  %_7.i = alloca [8 x i8], align 8
  %2 = sext i32 %0 to i64
  store ptr @_ZN1m4main17h4009bc0cd8b193aaE, ptr %_7.i, align 8
  %_0.i = call noundef i64 @_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal(ptr noundef nonnull align 1 %_7.i, ptr noalias noundef readonly align 8 captures(address, read_provenance) dereferenceable(48) @vtable.0, i64 noundef %2, ptr noundef %1, i8 noundef 0)
  %3 = trunc i64 %_0.i to i32
  ret i32 %3
}

attributes #0 = { nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #1 = { inlinehint nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #2 = { nonlazybind "probe-stack"="inline-asm" "target-cpu"="x86-64" }
