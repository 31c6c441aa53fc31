; ModuleID = 'process_shared_crate_at_run_time.ll'
source_filename = "process_shared_crate_at_run_time.ll"

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1

declare void @open(ptr, i64)

define void @handle() {
  call void @open(ptr @lit, i64 23)
  ret void
}
