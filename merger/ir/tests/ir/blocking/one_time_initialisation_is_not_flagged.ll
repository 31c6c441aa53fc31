; PASSES: call_graph, blocking
; The handler reads a file and sleeps only in the initialisation of a
; OnceLock (inlined: the closure's vtable passed to std's Once::call) and of
; a LazyLock (its force, not inlined; its initialiser kept in the mutable
; static, which the handler reads): not on the request path.
; CALLER: front
; CALLEES: once
; CRATE: once
; FUNCTION: once

declare void @"_ZN3std3sys4sync4once5futex4Once4call17h000000000000000cE"(ptr, i1, ptr, ptr)
declare void @"_ZN3std2fs4read5inner17h000000000000000dE"(ptr, ptr, i64)
declare void @"_ZN3std6thread9functions5sleep17h000000000000000eE"(i64, i32)

@init_vtable = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] zeroinitializer, ptr @"_ZN4once6handle28_$u7b$$u7b$closure$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$17h000000000000000fE" }>

@"_ZN4once8HOSTNAME17h0000000000000002E" = internal global { ptr } { ptr @"_ZN4once8HOSTNAME28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E" }

define void @"_ZN4once8HOSTNAME28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E"() {
  call void @"_ZN3std6thread9functions5sleep17h000000000000000eE"(i64 1, i32 0)
  ret void
}

define void @fmerge.entry.once() {
  %f = load ptr, ptr @"_ZN4once8HOSTNAME17h0000000000000002E"
  call void @"_ZN4once6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000010E"()
  ret void
}

define void @"_ZN4once6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000010E"() {
  call void @"_ZN3std3sys4sync4once5futex4Once4call17h000000000000000cE"(ptr null, i1 true, ptr null, ptr @init_vtable)
  call void @"_ZN3std4sync9lazy_lock21LazyLock$LT$T$C$F$GT$5force17h0000000000000011E"()
  ret void
}

define void @"_ZN4once6handle28_$u7b$$u7b$closure$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$17h000000000000000fE"() {
  call void @"_ZN3std2fs4read5inner17h000000000000000dE"(ptr null, ptr null, i64 0)
  ret void
}

define void @"_ZN3std4sync9lazy_lock21LazyLock$LT$T$C$F$GT$5force17h0000000000000011E"() {
  call void @"_ZN3std6thread9functions5sleep17h000000000000000eE"(i64 1, i32 0)
  ret void
}
