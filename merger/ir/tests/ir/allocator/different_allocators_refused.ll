; One function sets `std::alloc::System`, the other a counting allocator of
; its own: one of them would allocate with the other's, so the merge stops
; naming both.
; CALLER: front-fn
; CALLEES: back-fn
; ERROR: the merged functions set different #[global_allocator]s: front-fn (crate front_fn) and back-fn (crate counted_fn)
; ERROR: fix: set the same allocator in both
; UNIT: front_fn front-fn
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@_ZN8front_fn9ALLOCATOR17h68a98035c7c30e46E = internal constant <{}> zeroinitializer, align 1

; __rustc::__rust_alloc
; Function Attrs: nofree nounwind nonlazybind allockind("alloc,uninitialized,aligned") allocsize(0) uwtable
define noalias noundef ptr @_RNvCsfLfy6EI15iL_7___rustc12___rust_alloc(i64 noundef %size, i64 allocalign noundef range(i64 1, -9223372036854775807) %align) unnamed_addr #0 personality ptr @rust_eh_personality {
start:
  %out.i = alloca [8 x i8], align 8
  %_3.i = icmp ult i64 %align, 17
  %_6.i = icmp ule i64 %align, %size
  %or.cond.i = and i1 %_3.i, %_6.i
  br i1 %or.cond.i, label %bb2.i, label %bb4.i

bb4.i:                                            ; preds = %start
  call void @llvm.lifetime.start.p0(ptr nonnull %out.i)
  store ptr null, ptr %out.i, align 8
  %_0.sroa.0.0.i.i = tail call noundef range(i64 8, -9223372036854775807) i64 @llvm.umax.i64(i64 range(i64 1, -9223372036854775807) %align, i64 8)
  %ret.i = call noundef i32 @posix_memalign(ptr noundef nonnull %out.i, i64 noundef %_0.sroa.0.0.i.i, i64 noundef %size) #14
  %0 = icmp eq i32 %ret.i, 0
  %_19.i = load ptr, ptr %out.i, align 8
  %_0.sroa.0.0.i = select i1 %0, ptr %_19.i, ptr null
  call void @llvm.lifetime.end.p0(ptr nonnull %out.i)
  br label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit

bb2.i:                                            ; preds = %start
  %_10.i = tail call noundef ptr @malloc(i64 noundef %size) #14
  br label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit

_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit: ; preds = %bb4.i, %bb2.i
  %_0.sroa.0.1.i = phi ptr [ %_10.i, %bb2.i ], [ %_0.sroa.0.0.i, %bb4.i ]
  ret ptr %_0.sroa.0.1.i
}

; __rustc::__rust_dealloc
; Function Attrs: mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable
define void @_RNvCsfLfy6EI15iL_7___rustc14___rust_dealloc(ptr allocptr noundef captures(none) %ptr, i64 noundef %size, i64 noundef range(i64 1, -9223372036854775807) %align) unnamed_addr #1 {
start:
  tail call void @free(ptr noundef %ptr) #14
  ret void
}

; __rustc::__rust_realloc
; Function Attrs: nonlazybind allockind("realloc,aligned") allocsize(3) uwtable
define noalias noundef ptr @_RNvCsfLfy6EI15iL_7___rustc14___rust_realloc(ptr allocptr noundef %ptr, i64 noundef %size, i64 allocalign noundef range(i64 1, -9223372036854775807) %align, i64 noundef %new_size) unnamed_addr #2 {
start:
  %_6 = icmp ult i64 %align, 17
  %_8 = icmp ule i64 %align, %new_size
  %or.cond = and i1 %_6, %_8
  br i1 %or.cond, label %bb2, label %bb4

bb4:                                              ; preds = %start
; call std::sys::alloc::realloc_fallback
  %0 = tail call noundef ptr @_RNvNtNtCsjrHSEGnQ3l9_3std3sys5alloc16realloc_fallback(ptr noalias noundef nonnull readonly align 1 captures(address, read_provenance) @_ZN8front_fn9ALLOCATOR17h68a98035c7c30e46E, ptr noundef %ptr, i64 noundef %align, i64 noundef %size, i64 noundef %new_size)
  br label %bb5

bb2:                                              ; preds = %start
  %_9 = tail call noundef ptr @realloc(ptr noundef %ptr, i64 noundef %new_size) #14
  br label %bb5

bb5:                                              ; preds = %bb2, %bb4
  %_0.sroa.0.0 = phi ptr [ %_9, %bb2 ], [ %0, %bb4 ]
  ret ptr %_0.sroa.0.0
}

; __rustc::__rust_alloc_zeroed
; Function Attrs: nofree nounwind nonlazybind allockind("alloc,zeroed,aligned") allocsize(0) uwtable
define noalias noundef ptr @_RNvCsfLfy6EI15iL_7___rustc19___rust_alloc_zeroed(i64 noundef %size, i64 allocalign noundef range(i64 1, -9223372036854775807) %align) unnamed_addr #3 personality ptr @rust_eh_personality {
start:
  %out.i.i = alloca [8 x i8], align 8
  %_3.i = icmp ult i64 %align, 17
  %_6.i = icmp ule i64 %align, %size
  %or.cond.i = and i1 %_3.i, %_6.i
  br i1 %or.cond.i, label %bb2.i, label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit.i

_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit.i: ; preds = %start
  call void @llvm.lifetime.start.p0(ptr nonnull %out.i.i)
  store ptr null, ptr %out.i.i, align 8
  %_0.sroa.0.0.i.i.i = tail call noundef range(i64 8, -9223372036854775807) i64 @llvm.umax.i64(i64 range(i64 1, -9223372036854775807) %align, i64 8)
  %ret.i.i = call noundef i32 @posix_memalign(ptr noundef nonnull %out.i.i, i64 noundef %_0.sroa.0.0.i.i.i, i64 noundef %size) #14
  %0 = icmp ne i32 %ret.i.i, 0
  %_19.i.i = load ptr, ptr %out.i.i, align 8
  call void @llvm.lifetime.end.p0(ptr nonnull %out.i.i)
  %1 = icmp eq ptr %_19.i.i, null
  %2 = select i1 %0, i1 true, i1 %1
  br i1 %2, label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc12alloc_zeroed.exit, label %bb13.i

bb2.i:                                            ; preds = %start
  %_10.i = tail call noundef ptr @calloc(i64 noundef %size, i64 noundef 1) #14
  br label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc12alloc_zeroed.exit

bb13.i:                                           ; preds = %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit.i
  call void @llvm.memset.p0.i64(ptr nonnull align 1 %_19.i.i, i8 0, i64 %size, i1 false)
  br label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc12alloc_zeroed.exit

_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc12alloc_zeroed.exit: ; preds = %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit.i, %bb2.i, %bb13.i
  %ptr.sroa.0.0.i = phi ptr [ %_10.i, %bb2.i ], [ null, %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit.i ], [ %_19.i.i, %bb13.i ]
  ret ptr %ptr.sroa.0.0.i
}

; Function Attrs: mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable
declare void @free(ptr allocptr noundef captures(none)) unnamed_addr #4

; std::sys::alloc::realloc_fallback
; Function Attrs: nonlazybind uwtable
declare noundef ptr @_RNvNtNtCsjrHSEGnQ3l9_3std3sys5alloc16realloc_fallback(ptr noalias noundef nonnull readonly align 1 captures(address, read_provenance), ptr noundef, i64 noundef range(i64 1, -9223372036854775807), i64 noundef, i64 noundef) unnamed_addr #5

; Function Attrs: mustprogress nounwind nonlazybind willreturn allockind("realloc") allocsize(1) memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable
declare noalias noundef ptr @realloc(ptr allocptr noundef captures(none), i64 noundef) unnamed_addr #6

; Function Attrs: mustprogress nocallback nofree nounwind willreturn memory(argmem: write)
declare void @llvm.memset.p0.i64(ptr writeonly captures(none), i8, i64, i1 immarg) #7

; Function Attrs: mustprogress nofree nounwind nonlazybind willreturn allockind("alloc,zeroed") allocsize(0,1) memory(inaccessiblemem: readwrite) uwtable
declare noalias noundef ptr @calloc(i64 noundef, i64 noundef) unnamed_addr #8

; Function Attrs: mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(ptr captures(none)) #9

; Function Attrs: nofree nounwind nonlazybind uwtable
declare noundef i32 @posix_memalign(ptr noundef, i64 noundef, i64 noundef) unnamed_addr #10

; Function Attrs: mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(ptr captures(none)) #9

; Function Attrs: mustprogress nofree nounwind nonlazybind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite) uwtable
declare noalias noundef ptr @malloc(i64 noundef) unnamed_addr #11

; Function Attrs: nounwind nonlazybind uwtable
declare noundef range(i32 0, 10) i32 @rust_eh_personality(i32 noundef, i32 noundef, i64 noundef, ptr noundef, ptr noundef) unnamed_addr #12

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.umax.i64(i64, i64) #13

attributes #0 = { nofree nounwind nonlazybind allockind("alloc,uninitialized,aligned") allocsize(0) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #1 = { mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #2 = { nonlazybind allockind("realloc,aligned") allocsize(3) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #3 = { nofree nounwind nonlazybind allockind("alloc,zeroed,aligned") allocsize(0) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #4 = { mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable "alloc-family"="malloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #5 = { nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #6 = { mustprogress nounwind nonlazybind willreturn allockind("realloc") allocsize(1) memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable "alloc-family"="malloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #7 = { mustprogress nocallback nofree nounwind willreturn memory(argmem: write) }
attributes #8 = { mustprogress nofree nounwind nonlazybind willreturn allockind("alloc,zeroed") allocsize(0,1) memory(inaccessiblemem: readwrite) uwtable "alloc-family"="malloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #9 = { mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #10 = { nofree nounwind nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #11 = { mustprogress nofree nounwind nonlazybind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite) uwtable "alloc-family"="malloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #12 = { nounwind nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #13 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
attributes #14 = { nounwind }

!llvm.module.flags = !{!0, !1}
!llvm.ident = !{!2}

!0 = !{i32 8, !"PIC Level", i32 2}
!1 = !{i32 2, !"RtLibUseGOT", i32 1}
!2 = !{!"rustc version 1.95.0 (59807616e 2026-04-14)"}
; UNIT: counted_fn back-fn
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@_ZN10counted_fn11ALLOCATIONS17hf56f05b8b4da156dE = global [8 x i8] zeroinitializer, align 8

; __rustc::__rust_alloc
; Function Attrs: nofree nounwind nonlazybind allockind("alloc,uninitialized,aligned") allocsize(0) uwtable
define noalias noundef ptr @_RNvCsfLfy6EI15iL_7___rustc12___rust_alloc(i64 noundef %size, i64 allocalign noundef range(i64 1, -9223372036854775807) %align) unnamed_addr #0 personality ptr @rust_eh_personality {
start:
  %out.i.i = alloca [8 x i8], align 8
  %0 = atomicrmw add ptr @_ZN10counted_fn11ALLOCATIONS17hf56f05b8b4da156dE, i64 1 monotonic, align 8
  %_3.i.i = icmp ult i64 %align, 17
  %_6.i.i = icmp ule i64 %align, %size
  %or.cond.i.i = and i1 %_3.i.i, %_6.i.i
  br i1 %or.cond.i.i, label %bb2.i.i, label %bb4.i.i

bb4.i.i:                                          ; preds = %start
  call void @llvm.lifetime.start.p0(ptr nonnull %out.i.i)
  store ptr null, ptr %out.i.i, align 8
  %_0.sroa.0.0.i.i.i = tail call noundef range(i64 8, -9223372036854775807) i64 @llvm.umax.i64(i64 range(i64 1, -9223372036854775807) %align, i64 8)
  %ret.i.i = call noundef i32 @posix_memalign(ptr noundef nonnull %out.i.i, i64 noundef %_0.sroa.0.0.i.i.i, i64 noundef %size) #13
  %1 = icmp eq i32 %ret.i.i, 0
  %_19.i.i = load ptr, ptr %out.i.i, align 8
  %_0.sroa.0.0.i.i = select i1 %1, ptr %_19.i.i, ptr null
  call void @llvm.lifetime.end.p0(ptr nonnull %out.i.i)
  br label %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit"

bb2.i.i:                                          ; preds = %start
  %_10.i.i = tail call noundef ptr @malloc(i64 noundef %size) #13
  br label %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit"

"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit": ; preds = %bb4.i.i, %bb2.i.i
  %_0.sroa.0.1.i.i = phi ptr [ %_10.i.i, %bb2.i.i ], [ %_0.sroa.0.0.i.i, %bb4.i.i ]
  ret ptr %_0.sroa.0.1.i.i
}

; __rustc::__rust_dealloc
; Function Attrs: mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable
define void @_RNvCsfLfy6EI15iL_7___rustc14___rust_dealloc(ptr allocptr noundef captures(none) %ptr, i64 noundef %size, i64 noundef range(i64 1, -9223372036854775807) %align) unnamed_addr #1 {
start:
  tail call void @free(ptr noundef %ptr) #13
  ret void
}

; __rustc::__rust_realloc
; Function Attrs: nounwind nonlazybind allockind("realloc,aligned") allocsize(3) uwtable
define noalias noundef ptr @_RNvCsfLfy6EI15iL_7___rustc14___rust_realloc(ptr allocptr noundef captures(none) %ptr, i64 noundef %size, i64 allocalign noundef range(i64 1, -9223372036854775807) %align, i64 noundef %new_size) unnamed_addr #2 personality ptr @rust_eh_personality {
start:
  %out.i.i.i = alloca [8 x i8], align 8
  %0 = atomicrmw add ptr @_ZN10counted_fn11ALLOCATIONS17hf56f05b8b4da156dE, i64 1 monotonic, align 8
  %_3.i.i.i = icmp ult i64 %align, 17
  %_6.i.i.i = icmp ule i64 %align, %new_size
  %or.cond.i.i.i = and i1 %_3.i.i.i, %_6.i.i.i
  br i1 %or.cond.i.i.i, label %bb2.i.i.i, label %bb4.i.i.i

bb4.i.i.i:                                        ; preds = %start
  call void @llvm.lifetime.start.p0(ptr nonnull %out.i.i.i)
  store ptr null, ptr %out.i.i.i, align 8
  %_0.sroa.0.0.i.i.i.i = tail call noundef range(i64 8, -9223372036854775807) i64 @llvm.umax.i64(i64 range(i64 1, -9223372036854775807) %align, i64 8)
  %ret.i.i.i = call noundef i32 @posix_memalign(ptr noundef nonnull %out.i.i.i, i64 noundef %_0.sroa.0.0.i.i.i.i, i64 noundef %new_size) #13
  %1 = icmp eq i32 %ret.i.i.i, 0
  %_19.i.i.i = load ptr, ptr %out.i.i.i, align 8
  call void @llvm.lifetime.end.p0(ptr nonnull %out.i.i.i)
  br i1 %1, label %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit.i", label %_ZN4core5alloc6global11GlobalAlloc7realloc17h9213c1ae67fff40fE.exit

bb2.i.i.i:                                        ; preds = %start
  %_10.i.i.i = tail call noundef ptr @malloc(i64 noundef %new_size) #13
  br label %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit.i"

"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit.i": ; preds = %bb2.i.i.i, %bb4.i.i.i
  %_0.sroa.0.1.i.i.i = phi ptr [ %_10.i.i.i, %bb2.i.i.i ], [ %_19.i.i.i, %bb4.i.i.i ]
  %2 = icmp eq ptr %_0.sroa.0.1.i.i.i, null
  br i1 %2, label %_ZN4core5alloc6global11GlobalAlloc7realloc17h9213c1ae67fff40fE.exit, label %bb3.i

bb3.i:                                            ; preds = %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit.i"
  %_0.sroa.0.0.i.i = call noundef i64 @llvm.umin.i64(i64 %new_size, i64 %size)
  call void @llvm.memcpy.p0.p0.i64(ptr nonnull align 1 %_0.sroa.0.1.i.i.i, ptr align 1 %ptr, i64 %_0.sroa.0.0.i.i, i1 false)
  call void @free(ptr noundef %ptr) #13
  br label %_ZN4core5alloc6global11GlobalAlloc7realloc17h9213c1ae67fff40fE.exit

_ZN4core5alloc6global11GlobalAlloc7realloc17h9213c1ae67fff40fE.exit: ; preds = %bb4.i.i.i, %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit.i", %bb3.i
  %_0.sroa.0.1.i.i2.i = phi ptr [ %_0.sroa.0.1.i.i.i, %bb3.i ], [ null, %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit.i" ], [ null, %bb4.i.i.i ]
  ret ptr %_0.sroa.0.1.i.i2.i
}

; __rustc::__rust_alloc_zeroed
; Function Attrs: nofree nounwind nonlazybind allockind("alloc,zeroed,aligned") allocsize(0) uwtable
define noalias noundef ptr @_RNvCsfLfy6EI15iL_7___rustc19___rust_alloc_zeroed(i64 noundef %size, i64 allocalign noundef range(i64 1, -9223372036854775807) %align) unnamed_addr #3 personality ptr @rust_eh_personality {
start:
  %out.i.i = alloca [8 x i8], align 8
  %0 = atomicrmw add ptr @_ZN10counted_fn11ALLOCATIONS17hf56f05b8b4da156dE, i64 1 monotonic, align 8
  %_3.i.i = icmp ult i64 %align, 17
  %_6.i.i = icmp ule i64 %align, %size
  %or.cond.i.i = and i1 %_3.i.i, %_6.i.i
  br i1 %or.cond.i.i, label %bb2.i.i, label %bb4.i.i

bb4.i.i:                                          ; preds = %start
  call void @llvm.lifetime.start.p0(ptr nonnull %out.i.i)
  store ptr null, ptr %out.i.i, align 8
  %_0.sroa.0.0.i.i.i = tail call noundef range(i64 8, -9223372036854775807) i64 @llvm.umax.i64(i64 range(i64 1, -9223372036854775807) %align, i64 8)
  %ret.i.i = call noundef i32 @posix_memalign(ptr noundef nonnull %out.i.i, i64 noundef %_0.sroa.0.0.i.i.i, i64 noundef %size) #13
  %1 = icmp eq i32 %ret.i.i, 0
  %_19.i.i = load ptr, ptr %out.i.i, align 8
  call void @llvm.lifetime.end.p0(ptr nonnull %out.i.i)
  br i1 %1, label %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit", label %bb1

bb2.i.i:                                          ; preds = %start
  %_10.i.i = tail call noundef ptr @malloc(i64 noundef %size) #13
  br label %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit"

"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit": ; preds = %bb4.i.i, %bb2.i.i
  %_0.sroa.0.1.i.i = phi ptr [ %_10.i.i, %bb2.i.i ], [ %_19.i.i, %bb4.i.i ]
  %2 = icmp eq ptr %_0.sroa.0.1.i.i, null
  br i1 %2, label %bb1, label %bb4

bb4:                                              ; preds = %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit"
  call void @llvm.memset.p0.i64(ptr nonnull align 1 %_0.sroa.0.1.i.i, i8 0, i64 %size, i1 false)
  br label %bb1

bb1:                                              ; preds = %bb4.i.i, %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit", %bb4
  %_0.sroa.0.1.i.i2 = phi ptr [ %_0.sroa.0.1.i.i, %bb4 ], [ null, %"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE.exit" ], [ null, %bb4.i.i ]
  ret ptr %_0.sroa.0.1.i.i2
}

; <counted_fn::Counting as core::alloc::global::GlobalAlloc>::alloc
; Function Attrs: nofree nounwind nonlazybind uwtable
define noundef ptr @"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17he28fe9e7ea7889eeE"(ptr noalias noundef nonnull readonly align 1 captures(none) %self, i64 noundef range(i64 1, -9223372036854775807) %layout.0, i64 noundef %layout.1) unnamed_addr #4 personality ptr @rust_eh_personality {
start:
  %out.i = alloca [8 x i8], align 8
  %0 = atomicrmw add ptr @_ZN10counted_fn11ALLOCATIONS17hf56f05b8b4da156dE, i64 1 monotonic, align 8
  %_3.i = icmp ult i64 %layout.0, 17
  %_6.i = icmp ule i64 %layout.0, %layout.1
  %or.cond.i = and i1 %_3.i, %_6.i
  br i1 %or.cond.i, label %bb2.i, label %bb4.i

bb4.i:                                            ; preds = %start
  call void @llvm.lifetime.start.p0(ptr nonnull %out.i)
  store ptr null, ptr %out.i, align 8
  %_0.sroa.0.0.i.i = tail call noundef range(i64 8, -9223372036854775807) i64 @llvm.umax.i64(i64 range(i64 1, -9223372036854775807) %layout.0, i64 8)
  %ret.i = call noundef i32 @posix_memalign(ptr noundef nonnull %out.i, i64 noundef %_0.sroa.0.0.i.i, i64 noundef %layout.1) #13
  %1 = icmp eq i32 %ret.i, 0
  %_19.i = load ptr, ptr %out.i, align 8
  %_0.sroa.0.0.i = select i1 %1, ptr %_19.i, ptr null
  call void @llvm.lifetime.end.p0(ptr nonnull %out.i)
  br label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit

bb2.i:                                            ; preds = %start
  %_10.i = tail call noundef ptr @malloc(i64 noundef %layout.1) #13
  br label %_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit

_RNvXNtNtNtCsjrHSEGnQ3l9_3std3sys5alloc4unixNtNtB8_5alloc6SystemNtNtNtCsgEmfK2I1SDS_4core5alloc6global11GlobalAlloc5alloc.exit: ; preds = %bb4.i, %bb2.i
  %_0.sroa.0.1.i = phi ptr [ %_10.i, %bb2.i ], [ %_0.sroa.0.0.i, %bb4.i ]
  ret ptr %_0.sroa.0.1.i
}

; <counted_fn::Counting as core::alloc::global::GlobalAlloc>::dealloc
; Function Attrs: mustprogress nounwind nonlazybind willreturn memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable
define void @"_ZN73_$LT$counted_fn..Counting$u20$as$u20$core..alloc..global..GlobalAlloc$GT$7dealloc17h791e5da0d40a26c2E"(ptr noalias noundef nonnull readonly align 1 captures(none) %self, ptr noundef captures(none) %ptr, i64 noundef range(i64 1, -9223372036854775807) %layout.0, i64 noundef %layout.1) unnamed_addr #5 {
start:
  tail call void @free(ptr noundef %ptr) #13
  ret void
}

; Function Attrs: mustprogress nocallback nofree nounwind willreturn memory(argmem: write)
declare void @llvm.memset.p0.i64(ptr writeonly captures(none), i8, i64, i1 immarg) #6

; Function Attrs: mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(ptr captures(none)) #7

; Function Attrs: nofree nounwind nonlazybind uwtable
declare noundef i32 @posix_memalign(ptr noundef, i64 noundef, i64 noundef) unnamed_addr #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(ptr captures(none)) #7

; Function Attrs: mustprogress nofree nounwind nonlazybind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite) uwtable
declare noalias noundef ptr @malloc(i64 noundef) unnamed_addr #8

; Function Attrs: nounwind nonlazybind uwtable
declare noundef range(i32 0, 10) i32 @rust_eh_personality(i32 noundef, i32 noundef, i64 noundef, ptr noundef, ptr noundef) unnamed_addr #9

; Function Attrs: mustprogress nocallback nofree nounwind willreturn memory(argmem: readwrite)
declare void @llvm.memcpy.p0.p0.i64(ptr noalias writeonly captures(none), ptr noalias readonly captures(none), i64, i1 immarg) #10

; Function Attrs: mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable
declare void @free(ptr allocptr noundef captures(none)) unnamed_addr #11

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.umax.i64(i64, i64) #12

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.umin.i64(i64, i64) #12

attributes #0 = { nofree nounwind nonlazybind allockind("alloc,uninitialized,aligned") allocsize(0) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #1 = { mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #2 = { nounwind nonlazybind allockind("realloc,aligned") allocsize(3) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #3 = { nofree nounwind nonlazybind allockind("alloc,zeroed,aligned") allocsize(0) uwtable "alloc-family"="__rust_alloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #4 = { nofree nounwind nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #5 = { mustprogress nounwind nonlazybind willreturn memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #6 = { mustprogress nocallback nofree nounwind willreturn memory(argmem: write) }
attributes #7 = { mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #8 = { mustprogress nofree nounwind nonlazybind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite) uwtable "alloc-family"="malloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #9 = { nounwind nonlazybind uwtable "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #10 = { mustprogress nocallback nofree nounwind willreturn memory(argmem: readwrite) }
attributes #11 = { mustprogress nounwind nonlazybind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) uwtable "alloc-family"="malloc" "probe-stack"="inline-asm" "target-cpu"="x86-64" }
attributes #12 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
attributes #13 = { nounwind }

!llvm.module.flags = !{!0, !1}
!llvm.ident = !{!2}

!0 = !{i32 8, !"PIC Level", i32 2}
!1 = !{i32 2, !"RtLibUseGOT", i32 1}
!2 = !{!"rustc version 1.95.0 (59807616e 2026-04-14)"}
