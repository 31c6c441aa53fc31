; ModuleID = 'call_pairs_grow.ll'
source_filename = "call_pairs_grow.ll"

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1
@lit.rewritten = private unnamed_addr constant [24 x i8] c"redis://127.0.0.12:6379/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit.rewritten, i64 24)
  call void @open(ptr getelementptr inbounds (i8, ptr @lit.rewritten, i64 8), i64 15)
  ret void
}
