; ModuleID = 'lists_settings.ll'
source_filename = "lists_settings.ll"

@f = private unnamed_addr constant [9 x i8] c"callee-fn", align 1
@k = private unnamed_addr constant [9 x i8] c"REDIS_URL", align 1
@d = private unnamed_addr constant [18 x i8] c"redis://store:6379", align 1
@k2 = private unnamed_addr constant [10 x i8] c"MACHINE_ID", align 1
@d2 = private unnamed_addr constant [1 x i8] c"1", align 1

declare void @fmerge.config(ptr, ptr, i64, ptr, i64, ptr, i64)

define void @read(ptr %out, ptr %key, i64 %len) {
  call void @fmerge.config(ptr %out, ptr @f, i64 9, ptr @k, i64 9, ptr @d, i64 18)
  call void @fmerge.config(ptr %out, ptr @f, i64 9, ptr @k2, i64 10, ptr @d2, i64 1)
  call void @fmerge.config(ptr %out, ptr @f, i64 9, ptr %key, i64 %len, ptr @d2, i64 1)
  ret void
}
