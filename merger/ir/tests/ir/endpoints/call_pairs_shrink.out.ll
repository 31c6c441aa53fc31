; ModuleID = 'call_pairs_shrink.ll'
source_filename = "call_pairs_shrink.ll"

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1
@lit.rewritten = private unnamed_addr constant [19 x i8] c"redis://10.0.0.7:1/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit.rewritten, i64 19)
  call void @open(ptr getelementptr inbounds (i8, ptr @lit.rewritten, i64 8), i64 10)
  ret void
}
